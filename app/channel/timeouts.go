package channel

import (
	"net/http"
	"time"
)

// DefaultEgressIdleTimeout is how long an egress request may go without a
// byte either way before it is cut, unless Options.EgressIdleTimeout says.
const DefaultEgressIdleTimeout = 2 * time.Minute

// idleWriter lifts the server's read and write timeouts
// (http.read_timeout, http.write_timeout: right for webhooks, far too short
// for a module zip or a model's long stream) for one egress answer: reading
// the request and each write of the answer may take up to idle, however
// long the whole takes. The session's deadline bounds it from the other
// side: the supervisor's relay ends with the attempt.
type idleWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

// liftTimeouts returns w with the egress's idle timeout in place of the
// server's, for r's body and the whole answer.
func liftTimeouts(w http.ResponseWriter, idle time.Duration) *idleWriter {
	if idle <= 0 {
		idle = DefaultEgressIdleTimeout
	}
	iw := &idleWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: idle}
	// Errors here mean the connection cannot take deadlines (a recorder in
	// tests): the server's own timeouts then stand, as they did.
	_ = iw.rc.SetReadDeadline(time.Now().Add(idle))
	_ = iw.rc.SetWriteDeadline(time.Now().Add(idle))
	return iw
}

// requestRead clears the read deadline once the request's body has been
// read: net/http's background read of the connection (HTTP/1.1) cancels
// the request's context when a read deadline passes, even while the
// answer is being written, so a long answer would be cut at idle from
// its start, not from its last byte.
func (w *idleWriter) requestRead() {
	_ = w.rc.SetReadDeadline(time.Time{}) // as in liftTimeouts
}

func (w *idleWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle)) // as in liftTimeouts
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on, so streams reach the sandbox as they come.
func (w *idleWriter) Flush() { _ = w.rc.Flush() } // an unflushable writer buffers, as before

// Unwrap lets http.ResponseController reach the connection.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
