package checkoutrun

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
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
//   - the session channel (contract's routes), for exactly one attempt: the
//     single-use claim code is exchanged for the session token, which every
//     later request must carry; progress events are printed, one line
//     each; the result is decoded strictly and kept;
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
	spec      contract.Spec
	claimCode string
	session   string // the session token
	repoToken string
	git       string // the git binary
	// projectRoot and repoPath: git http-backend serves projectRoot +
	// repoPath, the repository's common git directory.
	projectRoot, repoPath string
	progress              io.Writer
	egress                Egress

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
	mux.HandleFunc(contract.RouteClaim, s.claim)
	mux.HandleFunc(contract.RouteSpec, s.authed(s.serveSpec))
	mux.HandleFunc(contract.RouteRepoToken, s.authed(s.serveRepoToken))
	mux.HandleFunc(contract.RouteProgress, s.authed(s.serveProgress))
	mux.HandleFunc(contract.RouteOutput, s.authed(s.serveOutput))
	mux.HandleFunc(contract.RouteResult, s.authed(s.serveResult))
	mux.HandleFunc(contract.PathEgressModel, s.authed(s.serveEgress("model", s.egress.Model)))
	mux.HandleFunc(contract.PathEgressRegistry, s.authed(s.serveEgress("registry", s.egress.Registry)))
	mux.HandleFunc(gitRepoPath+"/", s.serveGit)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		contract.WriteError(w, http.StatusNotFound, contract.ErrorInvalid, "no such route")
	})
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

func (s *server) claim(w http.ResponseWriter, r *http.Request) {
	if r.PathValue(contract.PathValueAttempt) != s.spec.AttemptID {
		s.fault("claim for an unknown attempt")
		contract.WriteError(w, http.StatusNotFound, contract.ErrorInvalid, "unknown attempt")
		return
	}
	req, err := contract.DecodeClaimRequest(r.Body)
	if err != nil {
		s.fault("claim: %v", err)
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, err.Error())
		return
	}
	if req.AttemptID != s.spec.AttemptID || !equal(req.ClaimCode, s.claimCode) {
		s.fault("claim with a wrong attempt or claim code")
		contract.WriteError(w, http.StatusUnauthorized, contract.ErrorUnauthorized, "wrong claim code")
		return
	}
	if req.SpecVersion != contract.SpecVersion {
		contract.WriteError(w, http.StatusConflict, contract.ErrorVersionMismatch,
			fmt.Sprintf("this inspect serves %s, the supervisor reads %s", contract.SpecVersion, req.SpecVersion))
		return
	}
	s.mu.Lock()
	used := s.claimed
	s.claimed = true
	s.mu.Unlock()
	if used {
		s.fault("the claim code was used twice")
		contract.WriteError(w, http.StatusConflict, contract.ErrorClaimUsed, "the claim code was already used")
		return
	}
	contract.WriteJSON(w, 0, contract.ClaimResponse{SessionToken: s.session, ExpiresAt: s.expiry()})
}

// expiry is when the tokens stop being useful: the deadline, and a margin
// for the upload. (The server dies with the run in any case.)
func (s *server) expiry() time.Time {
	return s.spec.Limits.Deadline.Add(10 * time.Minute).UTC()
}

// authed admits a request for this attempt that carries the session token,
// after the claim.
func (s *server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue(contract.PathValueAttempt) != s.spec.AttemptID {
			s.fault("%s %s: unknown attempt", r.Method, r.URL.Path)
			contract.WriteError(w, http.StatusNotFound, contract.ErrorInvalid, "unknown attempt")
			return
		}
		s.mu.Lock()
		claimed := s.claimed
		s.mu.Unlock()
		if !claimed || !equal(r.Header.Get(contract.HeaderSessionToken), s.session) {
			s.fault("%s %s: missing or wrong session token", r.Method, r.URL.Path)
			contract.WriteError(w, http.StatusUnauthorized, contract.ErrorUnauthorized, "missing or wrong session token")
			return
		}
		h(w, r)
	}
}

func (s *server) serveSpec(w http.ResponseWriter, _ *http.Request) {
	contract.WriteJSON(w, 0, s.spec)
}

func (s *server) serveRepoToken(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.tokenIssued = true
	s.mu.Unlock()
	contract.WriteJSON(w, 0, contract.RepoTokenResponse{Token: s.repoToken, ExpiresAt: s.expiry()})
}

// serveOutput accepts live output and drops it: `inspect run` has no
// dashboard, and the evidence's output tails say what ran. Accepting it
// keeps the supervisor from warning that the app refused it.
func (s *server) serveOutput(w http.ResponseWriter, r *http.Request) {
	if _, err := contract.DecodeOutputChunk(r.Body); err != nil {
		s.fault("output: %v", err)
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) serveProgress(w http.ResponseWriter, r *http.Request) {
	ev, err := contract.DecodeProgressEvent(r.Body)
	if err != nil {
		s.fault("progress: %v", err)
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, err.Error())
		return
	}
	// The message is single-line by the contract; clean it again anyway,
	// since it reaches a terminal.
	s.mu.Lock()
	if !s.closed {
		fmt.Fprintf(s.progress, "inspect run: [%s] %s\n", ev.Phase, contract.CleanProgressMessage(ev.Message))
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) serveResult(w http.ResponseWriter, r *http.Request) {
	u, err := contract.DecodeResultUpload(r.Body, s.spec.Limits.Manifest())
	if err == nil && (u.Evidence.AttemptID != s.spec.AttemptID || u.Evidence.SessionID != s.spec.SessionID || u.Evidence.PinnedSHA != s.spec.PinnedSHA) {
		err = errors.New("the result is for another attempt or commit")
	}
	if err != nil {
		s.fault("result: %v", err)
		s.mu.Lock()
		s.resultErr = err
		s.mu.Unlock()
		status, code := http.StatusBadRequest, contract.ErrorInvalid
		if errors.Is(err, contract.ErrTooLarge) {
			status, code = http.StatusRequestEntityTooLarge, contract.ErrorTooLarge
		}
		contract.WriteError(w, status, code, err.Error())
		return
	}
	s.mu.Lock()
	if s.result == nil { // a repeated upload is acknowledged and changes nothing
		s.result = &u
		s.resultErr = nil
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// serveEgress hands an egress request to its handler, with the spec; a
// route without one is refused, as the server refuses a registry it does
// not configure.
func (s *server) serveEgress(what string, h func(http.ResponseWriter, *http.Request, contract.Spec)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h == nil {
			contract.WriteError(w, http.StatusForbidden, contract.ErrorInvalid, "this inspect run serves no "+what+" egress: give it a server config (--server-config) that names one")
			return
		}
		h(w, r, s.spec)
	}
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
