package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// The egress path inside the sandbox: the forwarder (`inspect runner
// forward`, bound in at EgressBinary) listens on EgressListen and relays to
// EgressSocket, which the supervisor serves. Agents' CLIs are pointed at
// ModelBaseURL(provider).
const (
	EgressListen = contract.EgressListen
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
// gets bound in, with an egressGate's handler; startEgress also copies the
// forwarder in next to the socket.
type egress struct {
	dir, sock, bin string
	srv            *http.Server
	served         chan struct{}
	// inFlight counts requests being handled, so that close returns only
	// once each has recorded itself in the audit; closing (under mu) turns
	// new ones away, so none is added while close waits.
	mu       sync.Mutex
	closing  bool
	inFlight sync.WaitGroup
}

// egressRelay carries what the gate lets through to the app: the session
// channel's egress model and registry routes, with the attempt's token
// (*channel).
type egressRelay interface {
	egress(ctx context.Context, method, provider, rest, rawQuery string, hdr http.Header, body io.Reader, size int64) (*http.Response, error)
	registry(ctx context.Context, method, name, rest string, hdr http.Header) (*http.Response, error)
}

// egressGate decides what leaves one attempt's sandbox: the agent's model
// requests under /v1/providers/{name}/ go to the session channel's egress
// model route, where the app adds the provider's key and counts tokens;
// package managers' reads under /v1/registries/{name}/, in the phases the
// attempt opens that registry to, go to its registry route, where the app
// adds the upstream's credential (decision 0018). Nothing else leaves: no
// CONNECT, no absolute-form proxy request, no other path, no registry in a
// phase it is not open to; each refusal is a 403 that says what may be
// reached. A session and a snapshot build each have one.
type egressGate struct {
	registries []contract.Registry
	// modelKind is the provider kind of the session's agent
	// (contract.Agent.ProviderKind), whose named routes alone are relayed
	// (policy.DecideModelRequest); "" relays none.
	modelKind string
	relay     egressRelay
	red       *contract.Redactor
	log       zerolog.Logger
	// phase is the phase now running (a contract.Phase), for the
	// handler's goroutines; refusals counts what it turned away.
	phase    atomic.Value
	refusals atomic.Int64
	// audit records every egress request, relayed or refused, for the
	// evidence's Egress.
	audit egressAudit
	// registryTurns holds a place for each registry request relayed to
	// the app (at most maxRegistryRelays); more wait here, in the
	// supervisor, first come first served (decision 0059).
	registryTurns chan struct{}
	// registryQueued, when set (tests only), is told each time a
	// registry request starts waiting for its turn.
	registryQueued chan<- struct{}
}

// maxRegistryRelays is how many registry requests one attempt's gate
// relays to the app at once: the default of the app's own cap
// (egress.max_registry_requests_per_attempt, 16; npm's maxsockets is 15).
// More wait here, each a goroutine of the supervisor and a connection from
// the sandbox's forwarder, so that what waits in the app (a connection and
// a parked handler each) is bounded per attempt whatever the sandbox
// sends; the channel's registry transport holds no more connections
// (newChannel) (decision 0059).
const maxRegistryRelays = 16

func newEgressGate(regs []contract.Registry, relay egressRelay, red *contract.Redactor, log zerolog.Logger) *egressGate {
	return &egressGate{registries: regs, relay: relay, red: red, log: log, registryTurns: make(chan struct{}, maxRegistryRelays)}
}

// registryTurn waits until a registry request may be relayed, or ctx ends
// (the sandbox's client went away); every nil return is matched by one
// endRegistryTurn. Waiters on a full channel are served in the order they
// came.
func (g *egressGate) registryTurn(ctx context.Context) error {
	select {
	case g.registryTurns <- struct{}{}:
		return nil
	default:
	}
	if g.registryQueued != nil {
		g.registryQueued <- struct{}{}
	}
	select {
	case g.registryTurns <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *egressGate) endRegistryTurn() { <-g.registryTurns }

// forAgent is g relaying the model routes of agent's provider kind.
func (g *egressGate) forAgent(agent contract.Agent) *egressGate {
	g.modelKind = agent.ProviderKind
	return g
}

// setPhase is the phase requests are judged by from now on.
func (g *egressGate) setPhase(p contract.Phase) { g.phase.Store(p) }

func (g *egressGate) livePhase() contract.Phase {
	p, _ := g.phase.Load().(contract.Phase)
	return p
}

// openFor reports whether phase's commands run under the forwarder with
// the egress socket bound in: the agent's always (the model proxy), setup's
// and verify's when the spec has any registry, open to them or not, since
// registryEnv points their package managers at the egress in every phase
// and a closed registry's requests are to be refused and recorded there.
// Otherwise they have no network at all.
func (g *egressGate) openFor(phase contract.Phase) bool {
	return phase == contract.PhaseAgent || len(g.registries) > 0
}

// startEgress listens on an egress socket in dir (made here) with handler
// h, and copies the inspect binary (forwarder; "" for this executable)
// next to it for the forwarder (the sandbox uid cannot reach the binary
// where it was installed, or must not write it). The socket is the
// sandbox uid's (uid, gid), mode 0600: no other uid but root can connect
// to it, and so reach the model route or a registry through it.
func startEgress(dir, forwarder string, uid, gid uint32, h http.Handler) (*egress, error) {
	e := &egress{dir: dir, served: make(chan struct{})}
	if err := os.Mkdir(e.dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(e.dir, 0o711); err != nil { // past the umask
		return nil, err
	}
	self := forwarder
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
	// The sandbox uid connects, and no one else: connecting takes write
	// permission on the socket. Between Listen and these two calls the
	// socket is this process's with the umask's mode (0755 under the usual
	// 022), and no sandbox runs yet.
	if err := os.Chown(e.sock, int(uid), int(gid)); err != nil {
		_ = ln.Close()
		return nil, err
	}
	if err := os.Chmod(e.sock, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	e.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		if e.closing {
			e.mu.Unlock()
			http.Error(w, "the egress is closing", http.StatusServiceUnavailable)
			return
		}
		e.inFlight.Add(1)
		e.mu.Unlock()
		defer e.inFlight.Done()
		h.ServeHTTP(w, r)
	})}
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(ln) // ends with ErrServerClosed when close runs
	}()
	return e, nil
}

// close stops the egress server and waits for it and for the requests it
// was handling: closing their connections cancels their relays, and each
// records itself in the audit before the evidence is read.
func (e *egress) close() {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	_ = e.srv.Close() // always nil for a server that was serving; errors are the listener's, and it is going away
	<-e.served
	e.inFlight.Wait()
}

// mounts bind the socket and the forwarder into the sandbox.
func (e *egress) mounts() []sandbox.Mount {
	return []sandbox.Mount{
		{Source: e.sock, Target: EgressSocket, File: true},
		{Source: e.bin, Target: EgressBinary, File: true, ReadOnly: true},
	}
}

// agentSocketDir makes the host's side of AgentSocketDir, the directory
// where the forwarder makes the socket the supervisor reaches a served
// agent through (opencodeserver.go), owned by the sandbox's uid; the same
// one for every run of the attempt.
func (e *egress) agentSocketDir(uid, gid int) (string, error) {
	dir := filepath.Join(e.dir, "agent")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if uid != os.Geteuid() || gid != os.Getegid() {
		if err := os.Lchown(dir, uid, gid); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// wrap runs argv under the forwarder, with stdin (a file in the sandbox,
// or "") as its standard input, and expose ("" or SOCKET=ADDR, a socket
// relayed to a loopback address inside: opencodeserver.go) as a way in.
func (e *egress) wrap(argv []string, stdin, expose string) []string {
	w := []string{EgressBinary, "runner", "forward", "--listen", EgressListen, "--socket", EgressSocket}
	if stdin != "" {
		w = append(w, "--stdin", stdin)
	}
	if expose != "" {
		w = append(w, "--expose", expose)
	}
	return append(append(w, "--"), argv...)
}

func (g *egressGate) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The phase as the request arrives: a request of the agent's that
		// lingers into verify is judged by verify's rules.
		phase := g.livePhase()
		if r.Method == http.MethodConnect || r.Method == http.MethodTrace || r.URL.Host != "" || r.URL.IsAbs() {
			g.refuse(w, r, phase, "this is not a proxy; no other host can be reached, and neither CONNECT nor TRACE is served", false)
			return
		}
		if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/registries/"); ok {
			g.relayRegistry(w, r, phase, rest, start)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/providers/")
		provider, escaped, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || contract.ValidProviderName(provider) != nil {
			g.refuse(w, r, phase, "only /v1/providers/{provider}/... is served", false)
			return
		}
		if phase != contract.PhaseAgent {
			// The socket is bound into setup and verify only for their
			// registries: the repo's own commands spend no model tokens.
			g.refuse(w, r, phase, "the model proxy serves the agent only, not the "+string(phase)+" phase", false)
			return
		}
		// Decoded once here and sent on as clean segments; the app decides
		// again (it is the trust boundary) by the same rule.
		segs, err := policy.ModelPathSegments(escaped)
		if err != nil {
			g.refuse(w, r, phase, err.Error(), false)
			return
		}
		d := policy.DecideModelRequest(g.modelKind, r.Method, segs)
		if !d.Allowed {
			g.refuse(w, r, phase, d.Why, false)
			return
		}
		path := strings.Join(d.Segments, "/")
		rec := contract.EgressRecord{Kind: contract.EgressModel, Phase: phase, Upstream: provider, Method: r.Method, Path: path}
		defer func() { g.record(rec, start) }()
		hdr := http.Header{}
		contract.CopyHeaders(hdr, r.Header, contract.ModelRequestHeaders)
		resp, err := g.relay.egress(r.Context(), r.Method, provider, path, r.URL.RawQuery, hdr, r.Body, r.ContentLength)
		if err != nil {
			g.log.Warn().Str("error", g.red.Redact(err.Error())).Msg("egress request to the app failed")
			http.Error(w, "the model proxy is unreachable", http.StatusBadGateway)
			rec.Status = http.StatusBadGateway
			return
		}
		defer resp.Body.Close()
		rec.Status, rec.Bytes = passAnswer(w, resp, contract.ModelResponseHeaders)
	})
}

// passAnswer streams the app's answer to the sandbox with the allowlisted
// headers, and says what it passed: the status and the body's bytes.
func passAnswer(w http.ResponseWriter, resp *http.Response, headers []string) (int, int64) {
	contract.CopyHeaders(w.Header(), resp.Header, headers)
	w.WriteHeader(resp.StatusCode)
	cw := &countingWriter{ResponseWriter: w}
	contract.Stream(cw, resp.Body, nil)
	return resp.StatusCode, cw.n
}

// relayRegistry serves /v1/registries/{name}/{path...} (rest is what
// follows the prefix, escaped as it arrived): only GET and HEAD, only a
// registry of the spec's that is open to phase, and only the paths its
// kind's protocol documents (policy.DecideRegistryRequest; the app decides
// again, as the trust boundary). An allowed request goes on to the
// channel's registry route with the session token and the allowlisted
// headers, with no body and no query, and its answer is streamed back.
func (g *egressGate) relayRegistry(w http.ResponseWriter, r *http.Request, phase contract.Phase, rest string, start time.Time) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		g.refuse(w, r, phase, "only GET and HEAD reach a registry: the sandbox may download packages, never publish or change them", false)
		return
	}
	name, path, ok := strings.Cut(rest, "/")
	if !ok || contract.ValidProviderName(name) != nil {
		g.refuse(w, r, phase, "only /v1/registries/{name}/... is served", false)
		return
	}
	reg, ok := findRegistry(g.registries, name)
	if !ok {
		g.refuse(w, r, phase, fmt.Sprintf("the server opens no registry named %q to this attempt", name), false)
		return
	}
	if !reg.Serves(phase) {
		g.refuse(w, r, phase, fmt.Sprintf("the registry %q is open only to these phases: %s (not %s)", name, joinPhases(reg.Phases), phase), false)
		return
	}
	if d := policy.DecideRegistryRequest(policy.RegistryRule{Kind: reg.Kind, SumDB: reg.SumDB}, r.Method, path); !d.Allowed {
		g.refuse(w, r, phase, d.Why, d.Quiet)
		return
	}
	rec := contract.EgressRecord{Kind: contract.EgressRegistry, Phase: phase, Upstream: name, Method: r.Method, Path: path}
	defer func() { g.record(rec, start) }()
	if err := g.registryTurn(r.Context()); err != nil {
		// The sandbox's client went away while it waited: nothing reached
		// the app, and no one reads this answer.
		http.Error(w, "the request ended while it waited its turn", http.StatusServiceUnavailable)
		rec.Status = http.StatusServiceUnavailable
		return
	}
	defer g.endRegistryTurn()
	hdr := http.Header{}
	contract.CopyHeaders(hdr, r.Header, contract.RegistryRequestHeaders)
	resp, err := g.relay.registry(r.Context(), r.Method, name, path, hdr)
	if err != nil {
		g.log.Warn().Str("error", g.red.Redact(err.Error())).Str("registry", name).Msg("registry request to the app failed")
		http.Error(w, "the registry proxy is unreachable", http.StatusBadGateway)
		rec.Status = http.StatusBadGateway
		return
	}
	defer resp.Body.Close()
	body := &bodyReadError{ReadCloser: resp.Body}
	resp.Body = body
	rec.Status, rec.Bytes = passAnswer(w, resp, contract.RegistryResponseHeaders)
	if body.err != nil && r.Context().Err() == nil {
		// The app cut its answer (decision 0059: a metadata document goes
		// without a length, rewritten as it streams). Ending ours normally
		// would hand the package manager a short document as a whole one;
		// cutting it makes the break visible.
		g.log.Warn().Str("error", g.red.Redact(body.err.Error())).Str("registry", name).Msg("registry answer cut")
		panic(http.ErrAbortHandler)
	}
}

// bodyReadError keeps the error, other than the body's end, that reading
// an answer met.
type bodyReadError struct {
	io.ReadCloser
	err error
}

func (b *bodyReadError) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// egressRefusal is the body of an egress 403: what was refused and why, and
// what this phase may reach instead (Registries: those open to it).
type egressRefusal struct {
	Error struct {
		Type       string            `json:"type"`
		Message    string            `json:"message"`
		Phase      contract.Phase    `json:"phase,omitempty"`
		Registries []refusalRegistry `json:"registries,omitempty"`
	} `json:"error"`
}

type refusalRegistry struct {
	Name   string           `json:"name"`
	Kind   string           `json:"kind"`
	URL    string           `json:"url"`
	Phases []contract.Phase `json:"phases"`
}

// refuseEgress answers a refused egress request with a 403 whose body
// names what the sandbox may reach in phase, logs it redacted (a quiet
// refusal, a client's own audit call, at debug level) and counts it.
func (g *egressGate) refuse(w http.ResponseWriter, r *http.Request, phase contract.Phase, why string, quiet bool) {
	ev := g.log.Warn()
	if quiet {
		ev = g.log.Debug()
	}
	ev.Str("method", r.Method).Str("target", g.red.Redact(r.RequestURI)).Str("phase", string(phase)).Str("why", why).Msg("egress refused")
	g.refusals.Add(1)
	upstream, path := refusedTarget(r)
	g.record(contract.EgressRecord{Kind: contract.EgressRefused, Phase: phase, Upstream: upstream, Method: r.Method,
		Path: path, Status: http.StatusForbidden, Why: why, Quiet: quiet}, time.Time{})
	var body egressRefusal
	body.Error.Type = "inspect_egress_refused"
	var reach []string
	if phase == contract.PhaseAgent {
		reach = append(reach, "the model proxy at "+ModelBaseURL("<provider>"))
	}
	open := openRegistries(g.registries, phase)
	if len(open) > 0 {
		var names []string
		for _, reg := range open {
			names = append(names, fmt.Sprintf("%s (%s) at %s", reg.Name, reg.Kind, RegistryBaseURL(reg.Name)))
			body.Error.Registries = append(body.Error.Registries, refusalRegistry{Name: reg.Name, Kind: reg.Kind, URL: RegistryBaseURL(reg.Name), Phases: reg.Phases})
		}
		reach = append(reach, "the package registries open to the "+string(phase)+" phase: "+strings.Join(names, ", "))
	}
	if len(reach) == 0 {
		reach = append(reach, "nothing in the "+string(phase)+" phase")
	}
	if phase != contract.PhaseAgent || len(g.registries) > 0 {
		body.Error.Phase = phase // with no registries, the agent's refusal stays as it was
	}
	body.Error.Message = "Inspect's sandbox has no network; it reaches only " + strings.Join(reach, " and ") + ": " + why
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "<provider>" reads as written
	_ = enc.Encode(body)     // the client may be gone; nothing to do
}

// joinPhases names phases for a message: "setup, verify".
func joinPhases(ps []contract.Phase) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// refusedTarget is what a refused request named, for its record: the
// upstream's name and the escaped path below it, without the query, when
// it named one of the two routes and a valid name; otherwise no upstream
// and the whole request target (a CONNECT's host, an absolute URL).
func refusedTarget(r *http.Request) (upstream, path string) {
	if r.Method != http.MethodConnect && r.URL.Host == "" && !r.URL.IsAbs() {
		for _, prefix := range []string{"/v1/registries/", "/v1/providers/"} {
			rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
			if !ok {
				continue
			}
			if name, p, ok := strings.Cut(rest, "/"); ok && contract.ValidProviderName(name) == nil {
				return name, p
			}
		}
	}
	return "", r.RequestURI
}

// egressAudit is the attempt's egress audit, recorded by the gate's
// handler goroutines (requests arrive concurrently) and put into the
// evidence at the end.
type egressAudit struct {
	mu sync.Mutex
	a  contract.EgressAudit
}

// auditEgress records rec, its path and reason redacted (before
// contract.EgressAudit.Add cuts them), with the time since start (none for
// a refusal, answered at once).
func (g *egressGate) record(rec contract.EgressRecord, start time.Time) {
	if !start.IsZero() {
		rec.Millis = time.Since(start).Milliseconds()
	}
	if rec.Phase == "" {
		rec.Phase = contract.PhasePrepare // before the first phase: cannot happen
	}
	rec.Path, rec.Why = g.red.Redact(rec.Path), g.red.Redact(rec.Why)
	g.audit.mu.Lock()
	defer g.audit.mu.Unlock()
	g.audit.a.Add(rec)
}

// egressEvidence is a copy of the audit so far, for the evidence; nil when
// the sandbox sent nothing.
func (g *egressGate) evidence() *contract.EgressAudit {
	g.audit.mu.Lock()
	defer g.audit.mu.Unlock()
	if g.audit.a.Empty() {
		return nil
	}
	return g.audit.a.Clone()
}

// countingWriter counts the response body bytes relayed to the sandbox,
// and flushes as the writer it wraps does (contract.Stream flushes each
// chunk, which a model's event stream needs).
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
