package channel

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/contract"
)

// The class closed (issue 33, decision 0059): a slow registry answer that
// reaches the sandbox cut short but looking complete. The registry route
// set a read deadline of egress.idle_timeout once and never cleared it; on
// HTTP/1.1 net/http cancels the request's context when that deadline
// passes, even while the answer is still being written, and the proxy's
// upstream read then failed while the answer ended as a whole one. Here a
// module zip from a chunked upstream trickles for three idle timeouts,
// never silent for one: it must arrive whole.
func TestASlowRegistryAnswerLongerThanTheIdleTimeoutArrivesWhole(t *testing.T) {
	const idle = 200 * time.Millisecond
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 64)
	// next lets the upstream write its next chunk; finished says the
	// transfer has lasted three idle timeouts, and the upstream ends it.
	next, finished := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		for {
			select {
			case <-next:
				_, _ = w.Write(chunk) // the proxy may be gone; the client's read says so
				w.(http.Flusher).Flush()
			case <-finished:
				_, _ = w.Write([]byte("END"))
				return
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	r := newRig(t, Options{EgressIdleTimeout: idle, RegistryProxy: registryproxy.New(registryproxy.Options{
		Upstreams: registries{"go": {Kind: "goproxy", URL: up.URL, Token: registryToken}}})})
	a := r.st.attempts[sessionAttempt]
	a.Spec = mustJSON(t, contract.Spec{Registries: []contract.Registry{{Name: "go", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseSetup}}}})
	r.st.attempts[sessionAttempt] = a
	srv := httptest.NewServer(r.mux)
	t.Cleanup(srv.Close)

	// The upstream's pace: a chunk every idle/20, never silent for an
	// idle timeout, until three have passed.
	pace := time.NewTicker(idle / 20)
	defer pace.Stop()
	paced := make(chan int, 1)
	go func() {
		n := 0
		defer func() { paced <- n }()
		end := time.After(3 * idle)
		for {
			select {
			case <-end:
				close(finished)
				return
			case <-pace.C:
				select {
				case next <- struct{}{}:
					n++
				case <-end:
					close(finished)
					return
				}
			}
		}
	}()
	req, err := http.NewRequest(http.MethodGet, srv.URL+contract.EgressRegistryPath(sessionAttempt, "go", "fake.test/alpha/@v/v1.0.0.zip"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, readErr := io.ReadAll(resp.Body)
	n := <-paced
	want := append(bytes.Repeat(chunk, n), "END"...)
	if readErr != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
		t.Fatalf("answer %d, %d bytes (read error %v); want the whole %d bytes: a transfer longer than the idle timeout, never idle, is not cut",
			resp.StatusCode, len(body), readErr, len(want))
	}
}
