package buildkitelog_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// newRedirector is an API base that redirects every request to a second
// server, which counts the requests that reach it in *away.
func newRedirector(t *testing.T, away *atomic.Int32) string {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		away.Add(1)
		_, _ = w.Write([]byte("stolen"))
	}))
	t.Cleanup(target.Close)
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(src.Close)
	return src.URL + "/"
}
