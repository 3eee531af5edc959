// Package standin holds what the service stand-ins (internal/fakegithub,
// internal/fakebuildkite) share: one-shot rules matched by method and path
// (failure injection, held requests), a status-recording ResponseWriter, a
// capped body reader, random UUIDs, and page-numbered pagination with its
// Link header. Test support only.
package standin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"time"
)

// Rules is a queue of one-shot rules, each matched by method ("" for any)
// and a path.Match pattern over the request path. Callers hold their own
// lock around it.
type Rules[T any] struct {
	rules []rule[T]
}

type rule[T any] struct {
	method, pattern string
	v               T
}

// Add queues a rule.
func (q *Rules[T]) Add(method, pattern string, v T) {
	q.rules = append(q.rules, rule[T]{method: method, pattern: pattern, v: v})
}

// Take consumes the first rule matching the request and returns its value.
func (q *Rules[T]) Take(method, p string) (T, bool) {
	return q.TakeIf(method, p, nil)
}

// TakeIf is Take for the first matching rule whose value also satisfies
// ok (nil: any), such as a rule that looks at the request's body.
func (q *Rules[T]) TakeIf(method, p string, ok func(T) bool) (T, bool) {
	for i, r := range q.rules {
		if r.method != "" && r.method != method {
			continue
		}
		if m, _ := path.Match(r.pattern, p); !m {
			continue
		}
		if ok != nil && !ok(r.v) {
			continue
		}
		q.rules = append(q.rules[:i:i], q.rules[i+1:]...)
		return r.v, true
	}
	var zero T
	return zero, false
}

// StatusWriter remembers the status a handler answered and counts the body
// bytes it wrote, for request logs.
type StatusWriter struct {
	http.ResponseWriter
	// Head is set for a HEAD request: net/http discards its body but
	// reports it written, so nothing is counted.
	Head bool
	code int
	n    int64
}

// WriteHeader records the first status written.
func (w *StatusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and counts what was written.
func (w *StatusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	if !w.Head {
		w.n += int64(n)
	}
	return n, err
}

// Bytes is how many body bytes the handler wrote.
func (w *StatusWriter) Bytes() int64 { return w.n }

// Status is the status answered (200 when the handler wrote nothing).
func (w *StatusWriter) Status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// ReadBody reads at most max bytes of the body; tooBig is true when there
// was more, or the read failed.
func ReadBody(r *http.Request, max int64) (body []byte, tooBig bool) {
	if r.Body == nil {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return b, true
	}
	return b, int64(len(b)) > max
}

// WriteResponse writes a stand-in's answer: header entries first; then raw
// as is when non-nil, or nothing when body is nil, or body as JSON with
// jsonHeader's entries added (a service's media-type headers).
func WriteResponse(w http.ResponseWriter, status int, body any, raw []byte, header, jsonHeader http.Header) {
	for k, v := range header {
		w.Header()[k] = v
	}
	if raw != nil {
		w.WriteHeader(status)
		_, _ = w.Write(raw) // the client may be gone; nothing to do
		return
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	for k, v := range jsonHeader {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write(b) // as above
}

// UUID is a random (version 4) UUID, as both services hand out for ids
// and delivery GUIDs.
func UUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // crypto/rand.Read does not fail on Linux
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Pause waits d before a stand-in answers, as a service across the
// internet takes time to: a delay on the serving side, never a test's
// synchronisation. It returns false when the client went away first.
func Pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Arrive takes a request in as a registry stand-in does: it reads the
// body (at most max bytes; a failed read is a client gone midway, and the
// request is still answered and logged with what did arrive), then waits
// the latency (Pause). It returns how many body bytes arrived.
func Arrive(req *http.Request, max int64, latency time.Duration) int64 {
	var n int64
	if req.Body != nil {
		n, _ = io.Copy(io.Discard, io.LimitReader(req.Body, max))
	}
	Pause(req.Context(), latency) // a client gone meanwhile is still logged
	return n
}
