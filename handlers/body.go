package handlers

import (
	"io"
	"net/http"
)

// ReadBody reads a webhook's body, at most max bytes: past that the error
// is an *http.MaxBytesError, for a 413. A body with a Content-Length is
// read into one buffer of that size.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	limited := http.MaxBytesReader(w, r.Body, max)
	if r.ContentLength <= 0 || r.ContentLength > max {
		return io.ReadAll(limited)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(limited, buf); err != nil {
		return nil, err
	}
	// A body longer than its Content-Length is malformed; net/http already
	// refuses that, so nothing is left to read here.
	return buf, nil
}
