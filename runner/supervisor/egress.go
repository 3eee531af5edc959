package supervisor

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspecthq/inspect/runner/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// The egress path inside the sandbox: the forwarder (`inspect runner
// forward`, bound in at EgressBinary) listens on EgressListen and relays to
// EgressSocket, which the supervisor serves. Agents' CLIs are pointed at
// ModelBaseURL(provider).
const (
	EgressListen = "127.0.0.1:8931"
	EgressSocket = "/run/inspect/egress.sock"
	EgressBinary = "/run/inspect/inspect"
)

// ModelBaseURL is where an agent inside the sandbox reaches a model
// provider: the forwarder on loopback, under the provider's name. The URL,
// the key and the provider's real address live server-side only.
func ModelBaseURL(provider string) string {
	return "http://" + EgressListen + "/v1/providers/" + provider
}

// egress serves the sandbox's only way out, on a Unix socket the sandbox
// gets bound in: model requests under /v1/providers/{name}/ go to the
// session channel's egress route with the attempt's session token, where
// the app adds the provider's key and counts tokens. Nothing else leaves:
// no CONNECT, no absolute-form proxy request, no other path.
type egress struct {
	dir, sock, bin string
	srv            *http.Server
	served         chan struct{}
}

// startEgress listens on the attempt's egress socket and copies the
// supervisor's own binary next to it for the forwarder (the sandbox uid
// cannot reach the binary where it was installed, or must not write it).
func (s *session) startEgress() (*egress, error) {
	e := &egress{dir: filepath.Join(s.ws.dir, "egress"), served: make(chan struct{})}
	if err := os.Mkdir(e.dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(e.dir, 0o711); err != nil { // past the umask
		return nil, err
	}
	self := s.cfg.ForwarderBinary
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the inspect binary for the forwarder: %w", err)
		}
	}
	e.bin = filepath.Join(e.dir, "inspect")
	root, err := os.OpenRoot(e.dir)
	if err != nil {
		return nil, err
	}
	err = copyFileIn(root, self, "inspect", 0o755)
	_ = root.Close() // nothing written through it after the copy
	if err != nil {
		return nil, fmt.Errorf("copying the forwarder: %w", err)
	}
	e.sock = filepath.Join(e.dir, "egress.sock")
	ln, err := net.Listen("unix", e.sock)
	if err != nil {
		return nil, err
	}
	// The sandbox uid connects: a socket is writable by whoever may connect.
	if err := os.Chmod(e.sock, 0o666); err != nil {
		_ = ln.Close()
		return nil, err
	}
	e.srv = &http.Server{Handler: s.egressHandler(), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(ln) // ends with ErrServerClosed when close runs
	}()
	return e, nil
}

// close stops the egress server and waits for it.
func (e *egress) close() {
	_ = e.srv.Close() // in-flight relays end with the agent anyway
	<-e.served
}

// mounts bind the socket and the forwarder into the sandbox.
func (e *egress) mounts() []sandbox.Mount {
	return []sandbox.Mount{
		{Source: e.sock, Target: EgressSocket, File: true},
		{Source: e.bin, Target: EgressBinary, File: true, ReadOnly: true},
	}
}

// wrap runs argv under the forwarder, with stdin (a file in the sandbox,
// or "") as its standard input.
func (e *egress) wrap(argv []string, stdin string) []string {
	w := []string{EgressBinary, "runner", "forward", "--listen", EgressListen, "--socket", EgressSocket}
	if stdin != "" {
		w = append(w, "--stdin", stdin)
	}
	return append(append(w, "--"), argv...)
}

func (s *session) egressHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(why string) {
			s.log.Warn().Str("method", r.Method).Str("target", s.red.Redact(r.RequestURI)).Str("why", why).Msg("egress refused")
			s.egressRefusals.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"type":"inspect_egress_refused","message":%q}}`,
				"Inspect's sandbox has no network; it reaches only the model proxy at "+ModelBaseURL("<provider>")+": "+why)
		}
		if r.Method == http.MethodConnect || r.URL.Host != "" || r.URL.IsAbs() {
			refuse("this is not a proxy; no other host can be reached")
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1/providers/")
		provider, path, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || contract.ValidProviderName(provider) != nil || !contract.ValidEgressPath(path) {
			refuse("only /v1/providers/{provider}/... is served")
			return
		}
		hdr := http.Header{}
		contract.CopyHeaders(hdr, r.Header, contract.ModelRequestHeaders)
		resp, err := s.ch.egress(r.Context(), r.Method, provider, path, r.URL.RawQuery, hdr, r.Body)
		if err != nil {
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("egress request to the app failed")
			http.Error(w, "the model proxy is unreachable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		contract.CopyHeaders(w.Header(), resp.Header, contract.ModelResponseHeaders)
		w.WriteHeader(resp.StatusCode)
		contract.Stream(w, resp.Body, nil)
	})
}
