package channel

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/contract"
)

// The class closed (issue 33, decision 0059): a slow egress answer that
// reaches the sandbox cut short but looking complete. The egress routes set
// a read deadline of egress.idle_timeout once and never cleared it; on
// HTTP/1.1 net/http cancels the request's context when that deadline
// passes, even while the answer is still being written, and the proxy's
// upstream read then failed while the answer ended as a whole one. Here a
// module zip, and a model's answer, from a chunked upstream trickle for
// three idle timeouts, never silent for one: each must arrive whole.
func TestASlowEgressAnswerLongerThanTheIdleTimeoutArrivesWhole(t *testing.T) {
	// The upstream writes every idle/20: a stall of most of a second on a
	// loaded machine still leaves it short of an idle timeout.
	const idle = time.Second
	for _, tc := range []struct {
		name    string
		options func(upstream string) Options
		spec    contract.Spec
		request func(base string) (*http.Request, error)
	}{
		{"a module zip", func(up string) Options {
			return Options{EgressIdleTimeout: idle, RegistryProxy: registryproxy.New(registryproxy.Options{
				Upstreams: registries{"go": {Kind: "goproxy", URL: up, Token: registryToken}}})}
		}, contract.Spec{Registries: []contract.Registry{{Name: "go", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseSetup}}}},
			func(base string) (*http.Request, error) {
				return http.NewRequest(http.MethodGet, base+contract.EgressRegistryPath(sessionAttempt, "go", "fake.test/alpha/@v/v1.0.0.zip"), nil)
			}},
		{"a model's answer", func(up string) Options {
			return Options{EgressIdleTimeout: idle, Providers: providers{"p": {Kind: "openai", BaseURL: up + "/v1", Key: "sk-test-0123456789abcdef"}}}
		}, contract.Spec{Agent: contract.Agent{Model: "m-1", Provider: "p"}},
			func(base string) (*http.Request, error) {
				// Chunked, as a streaming client may send it: read to its
				// EOF, the body lets net/http's background read begin.
				return http.NewRequest(http.MethodPost, base+contract.EgressModelPath(sessionAttempt, "p", "responses"), io.NopCloser(strings.NewReader(`{"model":"m-1","input":"hi"}`)))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // three idle timeouts each, in wall time
			chunk := bytes.Repeat([]byte("0123456789abcdef"), 64)
			// next lets the upstream write its next chunk; finished says the
			// transfer has lasted three idle timeouts, and the upstream ends it.
			next, finished := make(chan struct{}), make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
				w.Header().Set("Content-Type", "application/octet-stream")
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
			r := newRig(t, tc.options(up.URL))
			a := r.st.attempts[sessionAttempt]
			a.Spec = mustJSON(t, tc.spec)
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
			req, err := tc.request(srv.URL)
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
		})
	}
}
