package fakegithub

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// git over HTTP: the smart protocol, served by git http-backend as a CGI
// at {URL()}/{owner}/{repo}.git, where GitHub Enterprise Server serves it.
//
// A client authenticates with HTTP Basic and an installation token as the
// password ("x-access-token:<token>", as GitHub documents; any user name
// is accepted). Fetching and cloning need contents: read on the repo,
// pushing needs contents: write, and a push whose new commits change
// .github/workflows/ also needs workflows: write, which the pre-receive
// hook enforces (see preReceiveHook).

// maxGitBodyBytes bounds a git request body (a pushed pack), which is read
// whole before git sees it.
const maxGitBodyBytes = 256 << 20

// gitRequestPath recognises a smart-HTTP request:
// /{owner}/{repo}.git/info/refs, /git-upload-pack or /git-receive-pack.
func gitRequestPath(p string) (owner, name, endpoint string, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	name, isGit := strings.CutSuffix(parts[1], ".git")
	if !isGit || parts[0] == "" || name == "" {
		return "", "", "", false
	}
	switch parts[2] {
	case "info/refs", "git-upload-pack", "git-receive-pack":
		return parts[0], name, parts[2], true
	}
	return "", "", "", false
}

// gitText answers a plain-text error, as GitHub's git endpoints do.
func gitText(w http.ResponseWriter, status int, msg string, header http.Header) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

// serveGit answers one git request and records it, with the path as
// requested (e.g. "/acme/widgets.git/git-upload-pack") and no body.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request, at time.Time, owner, name, endpoint string) {
	var body []byte
	tooBig := false
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxGitBodyBytes+1))
		body, tooBig = b, err != nil || len(b) > maxGitBodyBytes
	}
	recorded := "/" + owner + "/" + name + ".git/" + endpoint

	s.mu.Lock()
	kind, tok := s.identifyGit(r)
	injected, failed := s.takeFailure(r.Method, recorded)
	held, _ := s.holds.TakeIf(r.Method, recorded, func(h *hold) bool { return h.wants(body) })
	s.mu.Unlock()
	if held != nil {
		close(held.arrived)
		<-held.release
	}

	rw := &standin.StatusWriter{ResponseWriter: w}
	var pushed *repoState
	switch {
	case failed:
		injected.write(rw)
	case tooBig:
		gitText(rw, http.StatusRequestEntityTooLarge, "Request body too large.", nil)
	default:
		pushed = s.gitBackend(rw, r, body, owner, name, endpoint, kind, tok)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if pushed != nil {
		// Whatever the push did, the refs are reread: pull request heads
		// follow their branches.
		_ = s.syncRefs(pushed)
	}
	var instID int64
	if tok != nil {
		instID = tok.installationID
	}
	s.requests = append(s.requests, Request{
		Method:         r.Method,
		Path:           recorded,
		RawQuery:       r.URL.RawQuery,
		Auth:           kind,
		InstallationID: instID,
		Status:         rw.Status(),
		At:             at,
	})
}

// identifyGit reads HTTP Basic credentials. kind is "installation" when an
// installation token was presented (valid or not), and tok is set when it
// is valid. Callers hold s.mu.
func (s *Server) identifyGit(r *http.Request) (kind string, tok *token) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return authNone, nil
	}
	value := pass
	if !strings.HasPrefix(value, "ghs_") && strings.HasPrefix(user, "ghs_") {
		value = user
	}
	if !strings.HasPrefix(value, "ghs_") {
		return authNone, nil
	}
	t, ok := s.tokens[value]
	if !ok || t.revoked || !s.now().Before(t.expiresAt) {
		return authInstallation, nil
	}
	return authInstallation, t
}

// gitBackend checks the credential against the repo and the service, and
// runs git http-backend. It returns the repo when it ran receive-pack.
func (s *Server) gitBackend(w http.ResponseWriter, r *http.Request, body []byte, owner, name, endpoint, kind string, tok *token) *repoState {
	service := endpoint
	wantMethod := http.MethodPost
	if endpoint == "info/refs" {
		service, wantMethod = r.URL.Query().Get("service"), http.MethodGet
	}
	if r.Method != wantMethod || (service != "git-upload-pack" && service != "git-receive-pack") {
		// Only the smart protocol is served.
		gitText(w, http.StatusNotFound, "Not Found", nil)
		return nil
	}
	push := service == "git-receive-pack"
	challenge := http.Header{"Www-Authenticate": {`Basic realm="GitHub"`}}

	s.mu.Lock()
	if tok == nil {
		s.mu.Unlock()
		msg := "Authentication required: use an installation token as the password."
		if kind == authInstallation {
			msg = "Invalid username or token. Password authentication is not supported for Git operations."
		}
		gitText(w, http.StatusUnauthorized, msg, challenge)
		return nil
	}
	repo := s.repo(owner, name)
	if repo == nil || repo.InstallationID != tok.installationID || (tok.repoIDs != nil && !tok.repoIDs[repo.ID]) {
		s.mu.Unlock()
		gitText(w, http.StatusNotFound, "Repository not found.", nil)
		return nil
	}
	need := "read"
	if push {
		need = "write"
	}
	if !holdsAny(tok.perms, need, []string{"contents"}) {
		s.mu.Unlock()
		gitText(w, http.StatusForbidden, "Permission to "+repo.fullName()+".git denied to "+s.botLogin()+".", nil)
		return nil
	}
	if push && repo.Archived {
		s.mu.Unlock()
		gitText(w, http.StatusForbidden, "This repository was archived so it is read-only.", nil)
		return nil
	}
	dir := s.ensureGit(repo)
	projectRoot := filepath.Join(s.gitRoot, "repos")
	rel, err := filepath.Rel(projectRoot, dir)
	allowWorkflows := "0"
	if levelRank[tok.perms["workflows"]] >= levelRank["write"] {
		allowWorkflows = "1"
	}
	env := s.gitEnv(
		"GIT_PROJECT_ROOT="+projectRoot,
		"GIT_HTTP_EXPORT_ALL=1",
		"REMOTE_USER="+s.botLogin(),
		"INSPECT_FAKE_ALLOW_WORKFLOWS="+allowWorkflows,
	)
	root := s.gitRoot
	s.mu.Unlock()
	if err != nil {
		gitText(w, http.StatusInternalServerError, "fakegithub: "+err.Error(), nil)
		return nil
	}

	// http-backend finds the repository from PATH_INFO under
	// GIT_PROJECT_ROOT. The credential stays out of its environment.
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + filepath.ToSlash(rel) + "/" + endpoint
	r2.URL.RawPath = ""
	r2.Header.Del("Authorization")
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	r2.TransferEncoding = nil
	h := &cgi.Handler{
		Path:   gitBinary(),
		Args:   []string{"http-backend"},
		Dir:    root,
		Env:    env,
		Stderr: io.Discard,
	}
	h.ServeHTTP(w, r2)
	if endpoint == "git-receive-pack" {
		return repo
	}
	return nil
}
