package registryproxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
)

// The class closed (issue 33, decision 0059): an answer without a length
// that ends as if whole when its upstream was cut. The first guard cut the
// answer only while the request's context was live; but net/http cancels
// that context for reasons of its own while the answer is still being
// written (on HTTP/1.1, a read deadline that passes: the channel's idle
// timeout), the upstream's read then fails, and a normal return ended the
// chunked body properly: a short module zip, a short document, as a whole
// one. Here the context ends mid-answer, as it did then; the variant is
// an artifact from a chunked upstream, not the review's packument.
func TestAnUpstreamCutWhenTheRequestsContextEndsStillCutsTheAnswer(t *testing.T) {
	firstPart := strings.Repeat("z", 64<<10) // past net/http's buffers: the status line and most of it go out
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: a chunked upstream, whose end the proxy
		// cannot check by a length.
		w.Header().Set("Content-Type", "application/zip")
		_, _ = io.WriteString(w, firstPart) // the proxy may be gone; the test reads what it got
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest never comes: the proxy's request ends first
	}))
	t.Cleanup(up.Close)
	p := New(Options{Upstreams: upstreams{"go": {Kind: "goproxy", URL: up.URL}}})
	allowed := []contract.Registry{{Name: "go", Kind: "goproxy", Phases: goSetup}}
	endServe := make(chan context.CancelFunc, 1)
	m := http.NewServeMux()
	m.HandleFunc(contract.PathEgressRegistry, func(w http.ResponseWriter, r *http.Request) {
		// net/http's own cancel, made the test's: the handler goes on
		// writing to a client that is still there.
		ctx, cancel := context.WithCancel(r.Context())
		endServe <- cancel
		p.Serve(w, r.WithContext(ctx), "a1", allowed, zerolog.New(zerolog.NewTestWriter(t)))
	})
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + contract.EgressRegistryPath("a1", "go", "fake.test/alpha/@v/v1.0.0.zip"))
	if err != nil {
		t.Fatalf("no status line: %v; want the answer begun, then cut", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != -1 {
		t.Fatalf("answer %d, length %d; want a 200 without a length", resp.StatusCode, resp.ContentLength)
	}
	got := make([]byte, 32<<10) // net/http keeps the last few KiB of what was written until more comes
	if _, err := io.ReadFull(resp.Body, got); err != nil {
		t.Fatalf("the first part: %v", err)
	}
	if string(got) != firstPart[:len(got)] {
		t.Fatalf("the first part is not the upstream's")
	}
	(<-endServe)()
	rest, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the cut answer ended as a whole one, %d bytes (%d after the first part); want the client to see it broken", len(got)+len(rest), len(rest))
	}
}
