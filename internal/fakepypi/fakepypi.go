// Package fakepypi is a stand-in for a Python package index, for tests
// only: the egress proxy's pypi route (issue 15) needs a real upstream to
// forward to, on loopback, whose every request a test can see, and pypi.org
// is neither reachable from the sandbox nor observable. cmd/inspect never
// imports it.
//
// It follows the simple repository API as the PyPA specs give it
// (packaging.python.org/en/latest/specifications/simple-repository-api/,
// which folds in PEP 503, PEP 629, PEP 658, PEP 691, PEP 700 and PEP 714):
//
//   - GET /simple/: the root listing, one anchor per project.
//   - GET /simple/<normalized-name>/: a project's page, one anchor per
//     file whose href is the file's URL with #sha256=<hex>, and
//     data-requires-python when the file has one.
//   - Both come as HTML (PEP 503, with the pypi:repository-version meta
//     tag of PEP 629) or as JSON (PEP 691, with meta.api-version and the
//     PEP 700 fields: versions, size, upload-time), by the Accept header's
//     content negotiation: application/vnd.pypi.simple.v1+json,
//     application/vnd.pypi.simple.v1+html, text/html, their "latest"
//     aliases, with q-values. No Accept is text/html; nothing acceptable
//     is a 406. A ?format= query, which the spec lets a server honour in
//     place of Accept, is honoured. Pages carry Vary: Accept.
//   - Names: a page URL without its trailing slash is redirected (301) to
//     the one with it, which the spec says a repository SHOULD do; a name
//     that is not normalised (/simple/Demo_App/) is redirected to the
//     normalised one (/simple/demo-app/), which the spec says a repository
//     MAY do (pypi.org does; clients MUST NOT rely on it, and pip does
//     not). Redirects are relative, so they hold on a mounted handler. An
//     unknown project is a 404.
//   - GET /files/<normalized-name>/<filename>: the file, byte for byte,
//     at the URL the pages give under the base URL (the server's own, or
//     WithBaseURL's, so a proxy test can check that URLs were rewritten
//     and hashes kept). With WithMetadataFiles, a wheel's METADATA is
//     also served at <file URL>.metadata and the pages say so with both
//     PEP 658's data-dist-info-metadata / dist-info-metadata and PEP 714's
//     data-core-metadata / core-metadata, each "sha256=<hex>".
//
// HEAD is answered like GET without the body. Pages and files carry an
// ETag and answer If-None-Match with 304; files are Cache-Control
// "max-age=365000000, immutable, public" as files.pythonhosted.org sends
// them, pages "max-age=600, public" as pypi.org does.
//
// Auth. pypi.org reads are anonymous; private indexes (devpi, Artifactory,
// GitLab, CodeArtifact) take HTTP Basic credentials, which pip sends from
// the index URL's userinfo or a netrc. This one takes, after WithToken,
// Basic "__token__:<token>": pypi.org's form for API tokens (twine's
// username for a token), so the same credential shape serves reads here
// and uploads there. Every GET and HEAD then needs it; a missing or wrong
// one is a 401 with WWW-Authenticate: Basic, which is what makes pip
// report the failure (and, without --no-input, prompt). Without any
// WithToken, reads are anonymous, as on pypi.org.
//
// The legacy upload endpoint (POST /legacy/, what twine uploads to) is
// recognised, recorded and refused with a 403 whatever the auth, so a
// test can assert that an upload never reached the upstream. Other
// methods are a 405; other paths a 404. Nothing is changed by a request:
// files are added by the test (Add, Tamper).
//
// Every request is in the log (Requests): method, path, route, project,
// filename, Accept and the content type served, status, bytes, duration,
// and the auth seen (never the token). File downloads (GET answered 200)
// are counted per filename (Downloads). WithLatency adds a fixed delay
// server-side before each answer, like an index across the internet.
//
// What pip 23.2.1 (Python 3.11's ensurepip) was seen to do against it,
// which the tests assert:
//   - It asks for the JSON form first ("Accept:
//     application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;
//     q=0.1, text/html; q=0.01") and so gets JSON; given only HTML, it
//     installs from that just the same.
//   - It asks for /simple/<normalised name>/ directly (never the root
//     listing, never a redirect), then each file at the page's URL.
//   - It sends the index URL's credentials, or without them those a
//     $HOME/.netrc gives for the host, on every request to that host,
//     files included. With a wrong or missing token it gets one 401 for
//     the first page, does not retry, and fails with "No matching
//     distribution found"; the 401 itself ("401 Client Error:
//     Unauthorized") is only in its -vv output.
//   - It checks every file against the page's #sha256 even without
//     --require-hashes, and fails with "THESE PACKAGES DO NOT MATCH THE
//     HASHES" on a tampered one.
//   - With WithMetadataFiles it resolves from each wheel's .metadata and
//     fetches the wheels only to install them.
//   - Its HTTP cache (--cache-dir) is not used at all for a plain-http
//     index unless the host is also a --trusted-host (pip's http://
//     adapter has no cache): a second install downloads every wheel again.
//     With the host trusted, a second install still asks for each project
//     page, because pip sends Cache-Control: max-age=0 for index pages,
//     revalidating with If-None-Match (a 304 here), and fetches no file:
//     wheels come from the cache with no request. So a plain-http
//     forwarder in the sandbox needs PIP_TRUSTED_HOST beside its
//     PIP_INDEX_URL for pip's own cache to work.
//
// Not modelled: uploads that succeed, yanking (PEP 592), the project
// status markers of PEP 708 and later API versions, GPG signatures,
// provenance, sdists (any bytes can be added, but Build makes only
// wheels), the non-simple JSON API (/pypi/<name>/json), search, rate
// limits, gzip encoding.
//
// Files: fakepypi.go the index, its options, routing, auth and log;
// simple.go the pages and content negotiation; wheel.go the wheel builder.
package fakepypi

import (
	"crypto/subtle"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// TokenUser is the username that goes with a token, as on pypi.org.
const TokenUser = "__token__"

// maxBodyBytes bounds how much of a request body is read (and counted). An
// upload carries the file in its multipart body; test files are smaller.
const maxBodyBytes = 64 << 20

// Route names the endpoint a request was for.
type Route string

// The routes.
const (
	RouteRoot     Route = "root"     // GET /simple/
	RouteProject  Route = "project"  // GET /simple/<name>/
	RouteFile     Route = "file"     // GET /files/<name>/<filename>
	RouteMetadata Route = "metadata" // GET /files/<name>/<filename>.metadata
	RouteUpload   Route = "upload"   // POST /legacy/: recorded, refused
	RouteUnknown  Route = "unknown"  // anything else: 404
)

// Request is one request the index received, for assertions. Refused
// requests are recorded too, with the status they were answered.
type Request struct {
	Method string
	// Path is the request path as sent, still escaped; Query its raw
	// query.
	Path, Query string
	// Route is the endpoint the method and path name.
	Route Route
	// Project is the project the path names, as written in it (a
	// redirect's is not normalised); Filename the file's name for
	// RouteFile and RouteMetadata (without ".metadata").
	Project, Filename string
	// Accept and UserAgent are the request's headers; ContentType is
	// the Content-Type answered.
	Accept, UserAgent, ContentType string
	// IfNoneMatch is the request's If-None-Match (a client revalidating
	// its cache).
	IfNoneMatch string
	// Status is the status answered.
	Status int
	// Bytes is the response body bytes written; RequestBytes the request
	// body bytes read.
	Bytes, RequestBytes int64
	// Duration is from the request's arrival to the end of the answer,
	// latency included.
	Duration time.Duration
	// AuthPresent is whether an Authorization header came; AuthScheme
	// its scheme ("Basic"), AuthUser the Basic username; AuthValid
	// whether it was __token__ with a configured token.
	AuthPresent bool
	AuthScheme  string
	AuthUser    string
	AuthValid   bool
}

// Option configures an Index.
type Option func(*Index)

// WithToken accepts HTTP Basic "__token__:<token>". It may be given more
// than once. Once any is given, every read needs one.
func WithToken(token string) Option {
	return func(x *Index) { x.tokens = append(x.tokens, token) }
}

// WithBaseURL sets the URL that file links are under, e.g.
// "http://127.0.0.1:1234" or "http://proxy/pypi/acme" (links are then
// <base>/files/...). Without it, Serve's index uses its server's URL and a
// mounted handler the request's Host.
func WithBaseURL(u string) Option {
	return func(x *Index) { x.baseURL = strings.TrimSuffix(u, "/") }
}

// WithLatency delays every answer by d, server-side, before anything is
// written, as an index across the internet would. A request whose client
// goes away stops waiting.
func WithLatency(d time.Duration) Option {
	return func(x *Index) { x.latency = d }
}

// WithMetadataFiles serves each wheel's METADATA beside it (PEP 658 /
// PEP 714) and advertises it on the pages.
func WithMetadataFiles() Option {
	return func(x *Index) { x.metadataFiles = true }
}

// Index is the stand-in, an http.Handler. Make one with New (to mount) or
// Serve (on its own loopback server). Methods are safe for concurrent use.
type Index struct {
	latency       time.Duration
	tokens        []string
	metadataFiles bool

	// mu guards everything below.
	mu        sync.Mutex
	baseURL   string
	serverURL string
	projects  map[string]*project // by normalised name
	requests  []Request
	downloads map[string]int // filename -> GETs answered 200
}

// project is one project's files, in the order added.
type project struct {
	name  string // as first published
	files []*file
}

// file is one file as served.
type file struct {
	File
	sha256   string
	uploaded time.Time
	served   []byte // what is served in place of Data, when tampered
	metadata []byte // the wheel's METADATA, nil when not a wheel
}

// New makes an index to mount with http.Handle or http.StripPrefix.
func New(opts ...Option) *Index {
	x := &Index{projects: map[string]*project{}, downloads: map[string]int{}}
	for _, o := range opts {
		o(x)
	}
	return x
}

// Serve makes an index and serves it on a loopback port until the test
// ends. Its base URL is the server's, unless WithBaseURL says otherwise.
func Serve(t testing.TB, opts ...Option) *Index {
	x := New(opts...)
	ts := httptest.NewServer(x)
	t.Cleanup(ts.Close)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.serverURL = ts.URL
	if x.baseURL == "" {
		x.baseURL = ts.URL
	}
	return x
}

// URL is the server's URL, "http://127.0.0.1:port" ("" for an index made
// with New).
func (x *Index) URL() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.serverURL
}

// SimpleURL is the server's index URL as pip takes it (--index-url),
// with the token as the URL's password when token is not "":
// "http://__token__:<token>@127.0.0.1:port/simple/".
func (x *Index) SimpleURL(token string) string {
	u, err := url.Parse(x.URL())
	if err != nil || u.Host == "" {
		return ""
	}
	if token != "" {
		u.User = url.UserPassword(TokenUser, token)
	}
	u.Path = "/simple/"
	return u.String()
}

// Add serves f as if it had been uploaded. Like pypi.org, it refuses a
// filename that was already used.
func (x *Index) Add(f File) error {
	if !namePattern.MatchString(f.Project) {
		return fmt.Errorf("add: %q is not a valid project name", f.Project)
	}
	if f.Version == "" || strings.ContainsAny(f.Version, "/ ") {
		return fmt.Errorf("add %s: %q is not a version", f.Project, f.Version)
	}
	if f.Filename == "" || strings.ContainsAny(f.Filename, "/\\?#") || strings.HasSuffix(f.Filename, ".metadata") {
		return fmt.Errorf("add %s: %q is not a filename this index serves", f.Project, f.Filename)
	}
	added := &file{File: f, sha256: f.SHA256(), uploaded: time.Now().UTC()}
	added.Data = append([]byte(nil), f.Data...)
	if meta, ok := wheelMetadata(f); ok {
		added.metadata = meta
	}
	key := Normalize(f.Project)
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range x.projects {
		for _, g := range p.files {
			if g.Filename == f.Filename {
				return fmt.Errorf("add %s: file %s already exists", f.Project, f.Filename)
			}
		}
	}
	p := x.projects[key]
	if p == nil {
		p = &project{name: f.Project}
		x.projects[key] = p
	}
	p.files = append(p.files, added)
	return nil
}

// Tamper makes the index serve data as the file's bytes while its pages
// keep the original hash, as a corrupted mirror or a man in the middle
// would.
func (x *Index) Tamper(filename string, data []byte) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, p := range x.projects {
		for _, f := range p.files {
			if f.Filename == filename {
				f.served = append([]byte{}, data...)
				return nil
			}
		}
	}
	return fmt.Errorf("tamper: no file %s", filename)
}

// Requests is the log so far, oldest first.
func (x *Index) Requests() []Request {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Request(nil), x.requests...)
}

// Downloads is how many times each file was downloaded (GET answered
// 200), by filename.
func (x *Index) Downloads() map[string]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return maps.Clone(x.downloads)
}

// target is what a request path names.
type target struct {
	route             Route
	project, filename string
	// redirect, when not "", is the relative URL to redirect a page
	// request to (a missing slash, a name not normalised).
	redirect string
}

// classify reads a path. Page redirects are relative to the request's
// own URL, so they hold under any mount prefix.
func classify(method, escaped string) target {
	if method == http.MethodPost && (escaped == "/legacy/" || escaped == "/legacy") {
		return target{route: RouteUpload}
	}
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	switch {
	case escaped == "/simple":
		return target{route: RouteRoot, redirect: "simple/"}
	case escaped == "/simple/":
		return target{route: RouteRoot}
	case segs[0] == "simple" && (len(segs) == 2 || len(segs) == 3 && segs[2] == ""):
		name, err := url.PathUnescape(segs[1])
		if err != nil || !namePattern.MatchString(name) {
			return target{route: RouteUnknown}
		}
		t := target{route: RouteProject, project: name}
		norm := Normalize(name)
		switch {
		case len(segs) == 2:
			t.redirect = norm + "/" // relative to /simple/
		case norm != name:
			t.redirect = "../" + norm + "/"
		}
		return t
	case segs[0] == "files" && len(segs) == 3:
		name, err1 := url.PathUnescape(segs[1])
		fn, err2 := url.PathUnescape(segs[2])
		if err1 != nil || err2 != nil || fn == "" {
			return target{route: RouteUnknown}
		}
		if base, ok := strings.CutSuffix(fn, ".metadata"); ok {
			return target{route: RouteMetadata, project: name, filename: base}
		}
		return target{route: RouteFile, project: name, filename: fn}
	}
	return target{route: RouteUnknown}
}

// ServeHTTP answers one request and records it.
func (x *Index) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	reqBytes := standin.Arrive(req, maxBodyBytes, x.latency)

	t := classify(req.Method, req.URL.EscapedPath())
	rec := Request{
		Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery,
		Route: t.route, Project: t.project, Filename: t.filename,
		Accept: req.Header.Get("Accept"), UserAgent: req.Header.Get("User-Agent"),
		IfNoneMatch:  req.Header.Get("If-None-Match"),
		RequestBytes: reqBytes,
	}
	authz := req.Header.Get("Authorization")
	rec.AuthPresent = authz != ""
	rec.AuthScheme, _, _ = strings.Cut(authz, " ")
	if user, pass, ok := req.BasicAuth(); ok {
		rec.AuthUser = user
		rec.AuthValid = user == TokenUser && x.tokenKnown(pass)
	}

	rw := &standin.StatusWriter{ResponseWriter: w}
	x.answer(rw, req, t, rec.AuthValid)

	rec.Status = rw.Status()
	rec.Bytes = rw.Bytes()
	rec.ContentType = rw.Header().Get("Content-Type")
	rec.Duration = time.Since(start)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.requests = append(x.requests, rec)
	if t.route == RouteFile && req.Method == http.MethodGet && rec.Status == http.StatusOK {
		x.downloads[t.filename]++
	}
}

// tokenKnown compares in constant time, as a real index would.
func (x *Index) tokenKnown(token string) bool {
	known := false
	for _, k := range x.tokens {
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			known = true
		}
	}
	return known
}

// answer writes the response to one classified request.
func (x *Index) answer(w http.ResponseWriter, req *http.Request, t target, authValid bool) {
	if t.route == RouteUpload {
		// pypi.org refuses an upload it will not take with a 403 and a
		// reason; this index takes none, whatever the auth.
		writeText(w, req, http.StatusForbidden, "403 Forbidden: uploads are not accepted by this index", nil)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		writeText(w, req, http.StatusMethodNotAllowed, "405 Method Not Allowed: this index answers GET and HEAD only",
			http.Header{"Allow": {"GET, HEAD"}})
		return
	}
	if len(x.tokens) > 0 && !authValid {
		writeText(w, req, http.StatusUnauthorized, "401 Unauthorized: a valid token is required (user __token__, the token as password)",
			http.Header{"WWW-Authenticate": {`Basic realm="fakepypi"`}})
		return
	}
	if t.redirect != "" {
		loc := t.redirect
		if req.URL.RawQuery != "" {
			loc += "?" + req.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		writeText(w, req, http.StatusMovedPermanently, "301 Moved Permanently: "+loc, nil)
		return
	}
	switch t.route {
	case RouteRoot:
		x.serveRoot(w, req)
	case RouteProject:
		x.serveProject(w, req, t.project)
	case RouteFile, RouteMetadata:
		x.serveFile(w, req, t)
	default:
		writeText(w, req, http.StatusNotFound, "404 Not Found", nil)
	}
}

// base is the URL file links are under for this request.
func (x *Index) base(req *http.Request) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.baseURL != "" {
		return x.baseURL
	}
	return "http://" + req.Host
}

func (x *Index) serveFile(w http.ResponseWriter, req *http.Request, t target) {
	x.mu.Lock()
	var data []byte
	if p := x.projects[t.project]; p != nil {
		for _, f := range p.files {
			if f.Filename != t.filename {
				continue
			}
			switch {
			case t.route == RouteMetadata && x.metadataFiles:
				data = f.metadata
			case t.route == RouteFile && f.served != nil:
				data = f.served
			case t.route == RouteFile:
				data = f.Data
			}
		}
	}
	x.mu.Unlock()
	if data == nil {
		writeText(w, req, http.StatusNotFound, "404 Not Found", nil)
		return
	}
	ctype := "application/octet-stream"
	if t.route == RouteMetadata {
		ctype = "text/plain; charset=utf-8"
	}
	writeCacheable(w, req, data, http.Header{
		"Content-Type":  {ctype},
		"Cache-Control": {"max-age=365000000, immutable, public"},
	})
}

// writeCacheable writes body with an ETag (its sha256), or a 304 when
// If-None-Match names it.
func writeCacheable(w http.ResponseWriter, req *http.Request, body []byte, h http.Header) {
	etag := `"` + sha256Hex(body) + `"`
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("ETag", etag)
	if inm := req.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, req, http.StatusOK, body)
}

func etagMatches(header, etag string) bool {
	for _, e := range strings.Split(header, ",") {
		e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
		if e == "*" || e == etag {
			return true
		}
	}
	return false
}

func writeText(w http.ResponseWriter, req *http.Request, status int, msg string, header http.Header) {
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	writeBody(w, req, status, []byte(msg+"\n"))
}

// writeBody writes body with its length, or only the length for HEAD.
func writeBody(w http.ResponseWriter, req *http.Request, status int, body []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if req.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body) // the client may be gone; nothing to do
}
