package fakegithub

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one request the server answered, for assertions. git over
// HTTP is recorded too, with the path as requested (for instance
// "/acme/widgets.git/git-upload-pack"), Auth "installation" when an
// installation token was presented, and no Body; IsGit tells them apart.
type Request struct {
	Method string
	Path   string // without the /api/v3 prefix
	// EscapedPath is Path as it was sent, escapes and all (a label
	// "team/inspect" is ".../labels/team%2Finspect" there).
	EscapedPath string
	RawQuery    string
	Body        []byte // nil for git requests
	// Auth is the kind of credential presented: "jwt", "installation" or
	// "none". It is recorded even when the credential was refused; Status
	// then says so.
	Auth           string
	InstallationID int64 // the installation of a valid installation token
	Status         int   // the status the server answered
	// Response is the body answered (its first 4 MiB), ContentType its
	// type: for checking what the stand-in answers against GitHub's
	// description.
	Response    []byte
	ContentType string
	// At is the server's clock (see SetClock) when the request arrived,
	// for assertions on rates (see MaxInWindow).
	At time.Time
	// Web marks a request for GitHub's web pages, not under /api/v3: the
	// OAuth authorize page and token endpoint, the App-manifest pages, a
	// browser's favicon.
	Web bool
	// GateAreas are the permissions the stand-in accepted for the route,
	// any one at the level the method needs (read for GET): for checking
	// against GitHub's own table that it accepts nothing GitHub would not.
	// Nil for routes no repository permission governs.
	GateAreas []string
}

// IsGit tells a git-over-HTTP request (info/refs, git-upload-pack,
// git-receive-pack) from a REST one.
func (r Request) IsGit() bool {
	_, _, _, ok := gitRequestPath(r.Path)
	return ok
}

// IsREST tells a request to GitHub's REST API from a git-over-HTTP one
// from the download of a job log (the storage URL a log's 302 points to,
// which is no API), and from GitHub's web pages (Web).
func (r Request) IsREST() bool {
	return !r.IsGit() && !r.Web && !strings.HasPrefix(r.Path, logDownloadPrefix)
}

// Requests returns every request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsMatching returns the requests with that method ("" for any)
// whose path (without /api/v3) starts with pathPrefix.
func (s *Server) RequestsMatching(method, pathPrefix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

// IsContentCreating tells a request that GitHub counts towards its
// secondary rate limit on content creation: POST, PATCH, PUT and DELETE on
// REST. git over HTTP is not a REST request, and minting an installation
// token (POST /app/installations/{id}/access_tokens) creates no content,
// so neither counts.
func IsContentCreating(r Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
	default:
		return false
	}
	if r.IsGit() {
		return false
	}
	if mint, _ := path.Match("/app/installations/*/access_tokens", r.Path); mint && r.Method == http.MethodPost {
		return false
	}
	return true
}

// BusiestWindow returns the most recorded requests matching match (nil for
// every request) whose arrival times (Request.At) fall in one window of
// that length, over every placement of the window, oldest first: their
// number is the peak rate a client reached, for assertions such as "never
// more than 80 content-creating requests a minute", and they say what made
// it. The window is half-open, so two
// requests exactly one window apart are never counted together, as a
// limiter allowing one request per window would space them. match runs
// without the server's lock held, so it may call the Server's methods.
func (s *Server) BusiestWindow(match func(Request) bool, window time.Duration) []Request {
	if window <= 0 {
		panic(fmt.Sprintf("fakegithub: BusiestWindow needs a positive window, not %v", window))
	}
	var reqs []Request
	for _, r := range s.Requests() {
		if match == nil || match(r) {
			reqs = append(reqs, r)
		}
	}
	// Requests are recorded when answered, not when they arrive.
	slices.SortStableFunc(reqs, func(a, b Request) int { return a.At.Compare(b.At) })
	bestLo, bestHi, lo := 0, 0, 0
	for hi, r := range reqs {
		for !r.At.Before(reqs[lo].At.Add(window)) {
			lo++
		}
		if hi+1-lo > bestHi-bestLo {
			bestLo, bestHi = lo, hi+1
		}
	}
	return reqs[bestLo:bestHi]
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// FailNext makes the next request matching method ("" for any) and
// pathPattern (a path.Match pattern over the path without /api/v3, e.g.
// "/repos/*/*/issues/*/comments") answer status with a GitHub-style error
// body, without touching any state. The failure comes before any
// credential check, so it can stand in for GitHub failing in any way. Rules
// queue up: each is used once, in the order given. The request is still
// recorded, with the credential it presented.
func (s *Server) FailNext(method, pathPattern string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures.Add(method, pathPattern, failure{status: status})
}

// RateLimitNext makes the next matching request answer as GitHub does when
// the installation's primary rate limit is spent: 403 "API rate limit
// exceeded" with X-RateLimit-Remaining: 0 and X-RateLimit-Reset a minute
// from the server's clock.
func (s *Server) RateLimitNext(method, pathPattern string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures.Add(method, pathPattern, failure{status: http.StatusForbidden, rateLimited: true})
}

type failure struct {
	status      int
	rateLimited bool
}

// takeFailure consumes the first rule matching the request. Callers hold
// s.mu.
func (s *Server) takeFailure(method, p string) (response, bool) {
	f, ok := s.failures.Take(method, p)
	if !ok {
		return response{}, false
	}
	status := f.status
	if f.rateLimited {
		resp := errResp(status, "API rate limit exceeded for installation ID 1.", docsRoot+"/rest/using-the-rest-api/rate-limits-for-the-rest-api")
		resp.header = http.Header{}
		resp.header.Set("X-RateLimit-Limit", "5000")
		resp.header.Set("X-RateLimit-Remaining", "0")
		resp.header.Set("X-RateLimit-Used", "5000")
		resp.header.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(time.Minute).Unix(), 10))
		resp.header.Set("X-RateLimit-Resource", "core")
		return resp, true
	}
	msg := http.StatusText(status)
	switch status {
	case http.StatusUnauthorized:
		msg = "Bad credentials"
	case http.StatusUnprocessableEntity:
		msg = "Validation Failed"
	}
	return errResp(status, msg, docsRoot), true
}

// hold parks one matching request until released.
type hold struct {
	arrived chan struct{}
	release chan struct{}
	// body, when set, must accept the request's body too.
	body func([]byte) bool
}

func (h *hold) wants(body []byte) bool { return h.body == nil || h.body(body) }

// HoldNext parks the next request matching method and pathPattern (as in
// FailNext) before it is answered. arrived is closed when it comes in; the
// request is answered normally once release is called. Tests use it to stop
// a client mid-flight, for example to prove a drain waits for it, without
// sleeping.
func (s *Server) HoldNext(method, pathPattern string) (arrived <-chan struct{}, release func()) {
	return s.HoldNextWith(method, pathPattern, nil)
}

// HoldNextWith is HoldNext for the next matching request whose body body
// accepts (nil: any), to tell apart requests to one route: a token minted
// for one repository ("repository_ids") from the App's own.
func (s *Server) HoldNextWith(method, pathPattern string, body func([]byte) bool) (arrived <-chan struct{}, release func()) {
	h := &hold{arrived: make(chan struct{}), release: make(chan struct{}), body: body}
	s.mu.Lock()
	s.holds.Add(method, pathPattern, h)
	s.mu.Unlock()
	var once sync.Once
	return h.arrived, func() { once.Do(func() { close(h.release) }) }
}
