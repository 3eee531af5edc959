package checkoutrun

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// server is the app's side of one local session, on loopback only, for as
// long as the run lasts:
//
//   - the session channel, for exactly one attempt: contract.ChannelServer
//     over this backend, so every check and refusal is the app's (decision
//     0046). The single-use claim code is exchanged for the session token,
//     which every later request must carry; progress events are printed,
//     one line each; the result is decoded strictly and kept, and ends the
//     attempt;
//   - the egress routes (model, registry), behind the same session token,
//     served by the Egress handlers: the server's own proxies, for this
//     one session;
//   - git's smart HTTP, upload-pack only, for the user's repository at
//     /repo.git, served by git http-backend and open only to the repo
//     token handed out over the channel (HTTP Basic,
//     "x-access-token:<token>", as GitHub takes it).
//
// The credentials are random, live in this process's memory only, and die
// with it; nothing is written to disk and nothing enters the sandbox.
type server struct {
	spec contract.Spec
	// kind is the attempt's: a session (empty), or a snapshot build
	// (BuildSnapshot), whose spec carries only its id, registries and
	// deadline.
	kind      contract.AttemptKind
	claimCode string
	session   string // the session token
	repoToken string
	git       string // the git binary
	// projectRoot and repoPath: git http-backend serves projectRoot +
	// repoPath, the repository's common git directory.
	projectRoot, repoPath string
	progress              io.Writer
	egress                Egress
	// now is the clock the token's expiry is checked against.
	now func() time.Time

	ln   net.Listener
	http *http.Server

	mu          sync.Mutex
	closed      bool
	claimed     bool
	tokenIssued bool
	result      *contract.ResultUpload
	resultErr   error // the last upload that did not decode, for the report
	faults      []string
}

// gitRepoPath is where the repository is served.
const gitRepoPath = "/repo.git"

// maxGitRequestBytes bounds an upload-pack request (the negotiation; a
// fetch of one commit sends a few hundred bytes).
const maxGitRequestBytes = 8 << 20

// newServer listens on 127.0.0.1 on a free port. The spec's clone URL and
// the channel URL both point at it; call start once the spec is complete.
func newServer(gitBin, commonDir string, progress io.Writer, egress Egress) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback: %w", err)
	}
	s := &server{
		claimCode:   randomToken("inspect-claim-"),
		session:     randomToken("inspect-session-"),
		repoToken:   randomToken("inspect-repo-"),
		git:         gitBin,
		projectRoot: filepath.Dir(commonDir),
		repoPath:    "/" + filepath.Base(commonDir),
		progress:    progress,
		egress:      egress,
		now:         time.Now,
		ln:          ln,
	}
	if s.progress == nil {
		s.progress = io.Discard
	}
	return s, nil
}

// URL is the base URL of the channel and of the git endpoint.
func (s *server) URL() string { return "http://" + s.ln.Addr().String() }

// start serves spec's attempt until close.
func (s *server) start(spec contract.Spec) {
	s.spec = spec
	mux := http.NewServeMux()
	mux.HandleFunc(gitRepoPath+"/", s.serveGit)
	mux.Handle("/", contract.NewChannelServer[localAttempt](s, contract.ChannelServerOptions{Now: func() time.Time { return s.now() }, OnRefusal: s.refused}))
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = s.http.Serve(s.ln) }()
}

// close stops serving: it lets a request in flight finish (briefly), then
// drops every connection. The credentials are useless afterwards, and
// nothing more is written to the progress writer.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.http == nil {
		_ = s.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
	_ = s.http.Close()
	_ = s.ln.Close() // in case Serve had not started yet
}

// uploaded returns the result the supervisor uploaded, if one decoded.
func (s *server) uploaded() (*contract.ResultUpload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result, s.resultErr
}

// protocolFaults lists the refused requests, for the report.
func (s *server) protocolFaults() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.faults...)
}

func (s *server) fault(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) < 50 {
		s.faults = append(s.faults, fmt.Sprintf(format, args...))
	}
}

// refused records a refused channel request, for the report; a result
// refused for its body is remembered as the upload's error.
func (s *server) refused(r *http.Request, status int, err error) {
	s.fault("%s %s: %d %v", r.Method, r.URL.Path, status, err)
	if contract.ChannelRouteOf(r.Context()) == contract.RouteResult && (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) {
		s.mu.Lock()
		s.resultErr = err
		s.mu.Unlock()
	}
}

// localAttempt is the server's record of its one attempt: there is
// nothing to it but the checks contract.ChannelServer makes.
type localAttempt struct{}

// Serves serves the session's routes, and an egress route only with its
// handler. A snapshot build's attempt (BuildSnapshot) is served its claim
// and the registry egress alone: the build clones the checkout itself, and
// its result stays in this process. The snapshot job's routes are never
// served: the one attempt's build is handed to the supervisor directly.
func (s *server) Serves(route string) error {
	switch {
	case s.kind == contract.KindSnapshot && route == contract.RouteRepoToken:
		return errors.New("inspect snapshot build clones the checkout itself: it hands out no repo token")
	case route == contract.PathEgressModel && s.egress.Model == nil:
		return errors.New("this inspect run serves no model egress: give it a server config (--server-config) that names one")
	case route == contract.PathEgressRegistry && s.egress.Registry == nil:
		return errors.New("this inspect run serves no registry egress: give it a server config (--server-config) that names one")
	case route == contract.RouteTurns:
		// Nobody can message a session run from the shell: its spec has
		// no steer, so its supervisor never asks.
		return errors.New("inspect run takes no turns: nobody can message its session")
	case route == contract.RouteAgentState:
		// A session run from the shell continues none: its spec names
		// no agent state.
		return errors.New("inspect run keeps no agent state: its sessions continue none")
	case route == contract.RouteArtifact, route == contract.RouteSnapshotJob, route == contract.RouteSnapshotResult:
		// `inspect run` keeps no artifacts: the workspace holds them.
		return errors.New("this server does not serve " + route)
	}
	return nil
}

// AgentState is never served (Serves refuses the route).
func (s *server) AgentState(context.Context, localAttempt) ([]byte, error) {
	return nil, contract.ErrAgentStateGone
}

// Claim exchanges the claim code for the session token, once.
func (s *server) Claim(_ context.Context, attemptID, claimCode string) (contract.ClaimResponse, error) {
	if attemptID != s.spec.AttemptID || !equal(claimCode, s.claimCode) {
		return contract.ClaimResponse{}, contract.ErrClaimRefused
	}
	s.mu.Lock()
	used := s.claimed
	s.claimed = true
	s.mu.Unlock()
	if used {
		return contract.ClaimResponse{}, contract.ErrClaimRefused
	}
	return contract.ClaimResponse{SessionToken: s.session, ExpiresAt: s.expiry(), Kind: s.attemptKind()}, nil
}

// expiry is when the tokens stop being useful: the deadline, and a margin
// for the upload. (The server dies with the run in any case.)
func (s *server) expiry() time.Time {
	return s.spec.Limits.Deadline.Add(10 * time.Minute).UTC()
}

// Authenticate admits the session token of this attempt, after the claim.
// The attempt ends, as the app's does, when its result is kept.
func (s *server) Authenticate(_ context.Context, attemptID, sessionToken string) (localAttempt, contract.ChannelAttempt, error) {
	s.mu.Lock()
	claimed, ended := s.claimed, s.result != nil
	s.mu.Unlock()
	if attemptID != s.spec.AttemptID || !claimed || !equal(sessionToken, s.session) {
		return localAttempt{}, contract.ChannelAttempt{}, errors.New("missing or wrong session token")
	}
	return localAttempt{}, contract.ChannelAttempt{Kind: s.attemptKind(), Ended: ended, Expires: s.expiry()}, nil
}

// attemptKind is the one attempt's kind, a session unless it is a
// snapshot build.
func (s *server) attemptKind() contract.AttemptKind {
	if s.kind == "" {
		return contract.KindSession
	}
	return s.kind
}

func (s *server) Spec(context.Context, localAttempt) ([]byte, error) { return json.Marshal(s.spec) }

// Recorder is dropped: the shell shows the live output, and no page
// reads a flight recorder here.
func (s *server) Recorder(context.Context, localAttempt, contract.Recorder) error { return nil }

// Turns is never asked (Serves refuses the route); it has none.
func (s *server) Turns(context.Context, localAttempt, int) ([]contract.Turn, error) { return nil, nil }

func (s *server) RepoToken(context.Context, localAttempt) (contract.RepoTokenResponse, error) {
	s.mu.Lock()
	s.tokenIssued = true
	s.mu.Unlock()
	return contract.RepoTokenResponse{Token: s.repoToken, ExpiresAt: s.expiry()}, nil
}

// Output drops live output: `inspect run` has no dashboard, and the
// evidence's output tails say what ran. Accepting it keeps the supervisor
// from warning that the app refused it.
func (s *server) Output(context.Context, localAttempt, contract.OutputChunk) error { return nil }

// Progress prints the event, one line.
func (s *server) Progress(_ context.Context, _ localAttempt, ev contract.ProgressEvent) error {
	// The message is single-line by the contract; clean it again anyway,
	// since it reaches a terminal.
	s.mu.Lock()
	if !s.closed {
		fmt.Fprintf(s.progress, "inspect run: [%s] %s\n", ev.Phase, contract.CleanProgressMessage(ev.Message))
	}
	s.mu.Unlock()
	return nil
}

// Result keeps the first upload that is this attempt's; a repeat is
// acknowledged and changes nothing.
func (s *server) Result(_ context.Context, _ localAttempt, u contract.ResultUpload, _ []byte) error {
	if u.Evidence.AttemptID != s.spec.AttemptID || u.Evidence.SessionID != s.spec.SessionID || u.Evidence.PinnedSHA != s.spec.PinnedSHA {
		return contract.Refusal(http.StatusBadRequest, contract.ErrorInvalid, "the result is for another attempt or commit")
	}
	s.mu.Lock()
	if s.result == nil {
		s.result = &u
		s.resultErr = nil
	}
	s.mu.Unlock()
	return nil
}

// Artifact is never called: Serves refuses the route.
func (s *server) Artifact(context.Context, localAttempt, string, []byte) error {
	return errors.New("inspect run keeps no artifacts")
}

// SnapshotJob is never called: the attempt is a session.
func (s *server) SnapshotJob(context.Context, localAttempt) ([]byte, error) {
	return nil, errors.New("inspect run builds no snapshots")
}

// SnapshotResult is never called: the attempt is a session.
func (s *server) SnapshotResult(context.Context, localAttempt, contract.SnapshotResult) error {
	return errors.New("inspect run builds no snapshots")
}

// Egress hands an egress request to its handler, with the spec.
func (s *server) Egress(_ context.Context, _ localAttempt, route string) http.Handler {
	h := s.egress.Registry
	if route == contract.PathEgressModel {
		h = s.egress.Model
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, s.spec) })
}

// serveGit serves git's smart HTTP protocol for fetching only.
func (s *server) serveGit(w http.ResponseWriter, r *http.Request) {
	endpoint := strings.TrimPrefix(r.URL.Path, gitRepoPath+"/")
	var service string
	switch {
	case endpoint == "info/refs" && r.Method == http.MethodGet:
		service = r.URL.Query().Get("service")
	case endpoint == "git-upload-pack" && r.Method == http.MethodPost:
		service = "git-upload-pack"
	case endpoint == "git-receive-pack":
		service = "git-receive-pack"
	default:
		gitText(w, http.StatusNotFound, "Not Found", nil)
		return
	}
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	issued := s.tokenIssued
	s.mu.Unlock()
	if !ok || !issued || user != "x-access-token" || !equal(pass, s.repoToken) {
		s.fault("git %s: missing or wrong repo token", endpoint)
		gitText(w, http.StatusUnauthorized, "Authentication required.", http.Header{"Www-Authenticate": {`Basic realm="inspect run"`}})
		return
	}
	if service != "git-upload-pack" {
		s.fault("git: refused %s", service)
		gitText(w, http.StatusForbidden, "This repository is read-only.", nil)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = s.repoPath + "/" + endpoint
	r2.URL.RawPath = ""
	r2.Header.Del("Authorization") // CGI would pass it on as HTTP_AUTHORIZATION
	if r.Body != nil {
		r2.Body = http.MaxBytesReader(w, r.Body, maxGitRequestBytes)
	}
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Dir:  s.projectRoot,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.projectRoot,
			"GIT_HTTP_EXPORT_ALL=1",
			// The supervisor fetches the pinned commit by its id, and
			// nothing may be pushed whatever the repository's config says.
			"GIT_CONFIG_COUNT=3",
			"GIT_CONFIG_KEY_0=uploadpack.allowAnySHA1InWant",
			"GIT_CONFIG_VALUE_0=true",
			"GIT_CONFIG_KEY_1=http.receivepack",
			"GIT_CONFIG_VALUE_1=false",
			"GIT_CONFIG_KEY_2=http.uploadpack",
			"GIT_CONFIG_VALUE_2=true",
		},
		// The user's own git configuration applies, as for any git they
		// run on their repository (safe.directory above all).
		InheritEnv: []string{"HOME", "XDG_CONFIG_HOME"},
		Stderr:     io.Discard,
	}
	h.ServeHTTP(w, r2)
}

func gitText(w http.ResponseWriter, status int, msg string, header http.Header) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// equal compares a presented credential with the expected one in constant
// time.
func equal(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// randomToken is a fresh 256-bit credential.
func randomToken(prefix string) string { return prefix + contract.NewSecret() }

// randomID is a short random id for the session and the attempt.
func randomID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "local-" + hex.EncodeToString(b)
}
