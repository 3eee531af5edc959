package metrics

import (
	"io"
	"net/http"
	"strconv"
)

// Egress wraps an egress route's handler (the session channel's model or
// registry route) to count its requests by status and the bytes each way.
func (m *Metrics) Egress(kind string, next http.HandlerFunc) http.HandlerFunc {
	if m == nil {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		body := &countingBody{ReadCloser: r.Body}
		r.Body = body
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		next(cw, r)
		m.egressRequests.WithLabelValues(kind, strconv.Itoa(cw.status)).Inc()
		m.egressBytes.WithLabelValues(kind, "out").Add(float64(body.n))
		m.egressBytes.WithLabelValues(kind, "in").Add(float64(cw.n))
	}
}

type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// countingWriter counts what a handler writes. Unwrap lets
// http.ResponseController reach the flusher and the deadlines the egress
// routes use (liftTimeouts, streamed answers).
type countingWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	n           int64
}

func (w *countingWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
