package fakebuildkite

import (
	"net/http"
	"path"
	"strings"
)

// Request is one request the server answered, for assertions.
type Request struct {
	Method   string
	Path     string // e.g. /v2/organizations/acme/pipelines/inspect/builds
	RawQuery string
	Body     []byte
	Auth     string // "bearer" when an Authorization header was sent (right or wrong), else "none"
	Status   int
	// Accept and Range are the request's headers of those names (a job
	// log's format and suffix range).
	Accept, Range string
}

func (s *Server) record(r *http.Request, body []byte, auth string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Body: body, Auth: auth, Status: status,
		Accept: r.Header.Get("Accept"), Range: r.Header.Get("Range"),
	})
}

// Requests returns every request answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsMatching returns the requests with that method ("" for any) whose
// path matches pathPattern (a path.Match pattern, e.g.
// "/v2/organizations/*/pipelines/*/builds").
func (s *Server) RequestsMatching(method, pathPattern string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if ok, _ := path.Match(pathPattern, r.Path); ok && (method == "" || r.Method == method) {
			out = append(out, r)
		}
	}
	return out
}

type failRule struct {
	status     int
	retryAfter string
}

// FailNext makes the next request matching method ("" for any) and
// pathPattern (a path.Match pattern over the request path, e.g.
// "/v2/organizations/*/pipelines/*/builds") answer status with a
// Buildkite-style error body, before authentication and without touching
// any state. retryAfter, when not empty, is sent as Retry-After (and a 429
// also carries RateLimit-Remaining: 0 and RateLimit-Reset, as Buildkite's
// rate limiter does). Rules queue up and each is used once.
func (s *Server) FailNext(method, pathPattern string, status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures.Add(method, pathPattern, failRule{status: status, retryAfter: retryAfter})
}

// takeFailure consumes the first matching rule. Callers hold s.mu.
func (s *Server) takeFailure(method, p string) (response, bool) {
	f, ok := s.failures.Take(method, p)
	if !ok {
		return response{}, false
	}
	msg := http.StatusText(f.status)
	if f.status == http.StatusTooManyRequests {
		msg = "You have exceeded your API rate limit. Please wait before making more requests."
	}
	resp := errResp(f.status, msg)
	resp.header = http.Header{}
	if f.retryAfter != "" {
		resp.header.Set("Retry-After", f.retryAfter)
	}
	if f.status == http.StatusTooManyRequests {
		resp.header.Set("RateLimit-Remaining", "0")
		reset := f.retryAfter
		if reset == "" {
			reset = "60"
		}
		resp.header.Set("RateLimit-Reset", reset)
	}
	return resp, true
}

// Violations returns what was wrong with the pipeline YAML of builds
// created so far (and of pipelines created or updated through the API),
// each prefixed with "org/pipeline: ".
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) violate(org, slug string, msgs ...string) {
	for _, m := range msgs {
		s.violations = append(s.violations, org+"/"+slug+": "+m)
	}
}

func key(org, slug string) string { return strings.ToLower(org) + "/" + strings.ToLower(slug) }
