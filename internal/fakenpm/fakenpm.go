// Package fakenpm is a stand-in for an npm registry, for tests only: the
// egress proxy's registry route (issue 15) needs a real upstream to
// forward to, on loopback, whose every request a test can see, and the
// real npmjs.org is neither reachable from the sandbox nor observable.
// cmd/inspect never imports it.
//
// It follows the npm registry's public docs (github.com/npm/registry:
// docs/REGISTRY-API.md, docs/responses/package-metadata.md,
// docs/user/authentication.md) for what npm install and npm ci use:
//
//   - GET /<pkg>: the packument, full (application/json) or, when the
//     Accept header asks for application/vnd.npm.install-v1+json as npm
//     does, the abbreviated form with only the installation fields.
//     Scoped names are accepted both as /@scope/name and as npm sends
//     them, /@scope%2fname.
//   - GET /<pkg>/<version|dist-tag>: one version's manifest.
//   - GET /<pkg>/-/<name>-<version>.tgz: the tarball, whose URL every
//     packument's dist.tarball gives under the base URL (the server's own,
//     or the one WithBaseURL sets, so that a proxy test can check that URLs
//     were rewritten), with dist.integrity (sha512 SRI) and dist.shasum.
//   - GET /-/package/<pkg>/dist-tags, GET /-/ping, GET /-/whoami.
//
// HEAD is answered like GET, without the body. Packuments and tarballs
// carry an ETag and answer If-None-Match with 304, as the registry's CDN
// does.
//
// Auth is a bearer token per registry (WithToken): "Authorization: Bearer
// <token>", npm's _authToken. A missing or wrong token is a 401 with the
// registry's JSON error body ({"error": ...}); WithAnonymousReads lets
// reads through without one, as npmjs.org does for public packages, but a
// wrong token is still refused.
//
// The documented write endpoints are recognised, RECORDED and refused, so
// that a test can assert that a write never reached the upstream: publish
// (PUT /<pkg>), unpublish (DELETE /<pkg>/-rev/<rev>, PUT /<pkg>/-rev/<rev>,
// DELETE of a tarball), dist-tag changes (PUT/DELETE
// /-/package/<pkg>/dist-tags/<tag>), login (PUT
// /-/user/org.couchdb.user:<name>, POST /-/v1/login, always a 401 with the
// documented {"ok": false}), token management (/-/npm/v1/tokens...,
// DELETE /-/user/token/<token>) and audits (POST
// /-/npm/v1/security/advisories/bulk, /-/npm/v1/security/audits and its
// /quick). Without a valid token each is a 401; with one, a 403 with a JSON
// error body, as the registry answers a user without permission. Nothing
// is ever changed by a request: packages are added by the test (Add).
// Unknown packages and paths are a 404 with {"error":"Not found"}.
//
// Every request, refused or not, is in the log (Requests) with its route,
// status, bytes, duration and whether auth was present and valid; tarball
// downloads are also counted per package@version (TarballFetches). An
// optional fixed latency (WithLatency) is added server-side before each
// answer, like a registry across the internet.
//
// What npm 11.19 (node 20) was seen to do against it, which the tests
// assert: npm install asks for the full packument (Accept:
// application/json; npm only asks for the abbreviated one when inflating
// an old lockfile), sends a scoped name as /@scope%2fname and the token on
// every request, tarballs included. npm ci with a lockfile asks for no
// metadata, only the tarballs at the lockfile's resolved URLs, and checks
// them against its integrity. With a warm cache, npm ci sends nothing at
// all, with or without --prefer-offline: a tarball whose integrity is in
// the cache is read from it. A tarball that fails its integrity check is
// fetched again (fetch-retries, with a 10 s to 60 s backoff, then pacote's
// own retry) before EINTEGRITY. npm publish sends one PUT /<name> with the
// tarball in the body.
//
// Not modelled: search (/-/v1/search), the replication feed, orgs, teams,
// hooks, 2FA (npm-otp), stars, readmes beyond a README.md file, gzip
// content encoding of packuments, rate limits.
//
// Files: fakenpm.go the registry, its options, routing, auth and log;
// packument.go the metadata documents; pack.go the tarball helper.
package fakenpm

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// maxBodyBytes bounds how much of a request body is read (and counted).
// A publish carries the tarball base64-encoded in the body; test packages
// are far smaller.
const maxBodyBytes = 64 << 20

// abbreviatedType is the media type of the abbreviated packument.
const abbreviatedType = "application/vnd.npm.install-v1+json"

// Route names the endpoint a request was for.
type Route string

// The routes. Reads are answered; writes are recorded and refused.
const (
	RoutePackument Route = "packument" // GET /<pkg>
	RouteVersion   Route = "version"   // GET /<pkg>/<version|tag>
	RouteTarball   Route = "tarball"   // GET /<pkg>/-/<file>.tgz
	RouteDistTags  Route = "dist-tags" // GET /-/package/<pkg>/dist-tags
	RoutePing      Route = "ping"      // GET /-/ping
	RouteWhoami    Route = "whoami"    // GET /-/whoami

	RoutePublish   Route = "publish"   // PUT /<pkg>
	RouteUnpublish Route = "unpublish" // DELETE /<pkg>..., PUT /<pkg>/-rev/<rev>
	RouteSetTag    Route = "dist-tag"  // PUT, DELETE /-/package/<pkg>/dist-tags/<tag>
	RouteLogin     Route = "login"     // PUT /-/user/org.couchdb.user:<name>, POST /-/v1/login
	RouteToken     Route = "token"     // /-/npm/v1/tokens..., DELETE /-/user/token/<token>
	RouteAudit     Route = "audit"     // POST /-/npm/v1/security/...
	RouteUnknown   Route = "unknown"   // anything else: 404
)

// IsWrite reports whether the route is one of the write endpoints that
// are recorded and refused.
func (r Route) IsWrite() bool {
	switch r {
	case RoutePublish, RouteUnpublish, RouteSetTag, RouteLogin, RouteToken, RouteAudit:
		return true
	}
	return false
}

// Request is one request the registry received, for assertions. Refused
// requests are recorded too, with the status they were answered. The token
// itself is never kept.
type Request struct {
	Method string
	// Path is the request path as sent, still escaped (npm sends a scoped
	// name as /@scope%2fname), and Query its raw query.
	Path, Query string
	// Route is the endpoint the path and method name.
	Route Route
	// Package is the package name the path names, decoded ("@acme/util"),
	// when it names one; Version the version (tarball) or version or tag
	// (version manifest) asked for.
	Package, Version string
	// Accept and NpmCommand are the Accept and npm-command headers (npm
	// sends the command it runs, "ci", "install", "publish").
	Accept, NpmCommand string
	// Status is the status answered.
	Status int
	// Bytes is the response body bytes written; RequestBytes the request
	// body bytes read.
	Bytes, RequestBytes int64
	// Duration is from the request's arrival to the end of the answer,
	// latency included.
	Duration time.Duration
	// AuthPresent is whether an Authorization header came; AuthValid
	// whether it was "Bearer <a configured token>"; User the token's user.
	AuthPresent, AuthValid bool
	User                   string
}

// Version is one package version for Add to serve.
type Version struct {
	// Name is the package name, "left-pad" or "@acme/util".
	Name string
	// Version is its semver version.
	Version string
	// Dependencies is package.json's dependencies.
	Dependencies map[string]string
	// Manifest holds further package.json fields (main, bin, scripts,
	// description, ...). name, version and dependencies come from the
	// fields above and win over the same keys here.
	Manifest map[string]any
	// Files are the package's files besides package.json, by path inside
	// the package ("index.js").
	Files map[string]string
	// Tag is the dist-tag Add points at this version; "" is "latest", as
	// npm publish does.
	Tag string
}

// Option configures a Registry.
type Option func(*Registry)

// WithToken accepts "Authorization: Bearer token" as user. It may be given
// more than once. A registry with no token accepts no auth at all, so
// every read is refused unless WithAnonymousReads is also given.
func WithToken(token, user string) Option {
	return func(r *Registry) { r.tokens[token] = user }
}

// WithAnonymousReads lets GET and HEAD through without an Authorization
// header, as npmjs.org serves public packages. A wrong token is still 401.
func WithAnonymousReads() Option {
	return func(r *Registry) { r.anonymousReads = true }
}

// WithBaseURL sets the URL that dist.tarball links are under, e.g.
// "http://127.0.0.1:1234" or "http://proxy/npm/acme". Without it, Serve's
// registry uses its server's URL and a mounted handler the request's Host.
func WithBaseURL(u string) Option {
	return func(r *Registry) { r.baseURL = strings.TrimSuffix(u, "/") }
}

// WithLatency delays every answer by d, server-side, before anything is
// written, as a registry across the internet would. A request whose client
// goes away stops waiting.
func WithLatency(d time.Duration) Option {
	return func(r *Registry) { r.latency = d }
}

// Registry is the stand-in, an http.Handler. Make one with New (to mount)
// or Serve (on its own loopback server). Methods are safe for concurrent
// use.
type Registry struct {
	latency        time.Duration
	tokens         map[string]string // token -> user
	anonymousReads bool

	// mu guards everything below.
	mu       sync.Mutex
	baseURL  string
	packages map[string]*pkg
	requests []Request
	fetches  map[string]int // "name@version" -> tarball downloads (GET, 200)
}

// pkg is one package's document.
type pkg struct {
	name              string
	versions          map[string]*version
	distTags          map[string]string
	created, modified time.Time
	rev               int
	// documents are the packuments as last serialised, by form and base
	// URL, at rev documentsRev: like the registry's CDN, every reader of
	// an unchanged package gets the same bytes, and a test's large
	// packument is held once, not once per request.
	documents    map[string][]byte
	documentsRev int
}

// version is one published version.
type version struct {
	manifest  map[string]any    // package.json as packed
	files     map[string]string // everything packed, package.json included
	tarball   Tarball
	served    []byte // bytes served in place of tarball.Data, when tampered
	published time.Time
}

// New makes a registry to mount with http.Handle or http.StripPrefix.
func New(opts ...Option) *Registry {
	r := &Registry{tokens: map[string]string{}, packages: map[string]*pkg{}, fetches: map[string]int{}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Serve makes a registry and serves it on a loopback port until the test
// ends. Its base URL is the server's, unless WithBaseURL says otherwise.
func Serve(t testing.TB, opts ...Option) *Registry {
	r := New(opts...)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.baseURL == "" {
		r.baseURL = ts.URL
	}
	return r
}

// URL is the base URL tarball links are under ("" for a mounted registry
// without WithBaseURL, whose links follow each request's Host).
func (r *Registry) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.baseURL
}

// namePattern is npm's rule for new package names: lower case, URL-safe,
// not starting with . or _, optionally scoped.
var namePattern = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

// Add packs v and serves it, as if it had been published: the package's
// dist-tag (latest by default) points at it. Like the registry, it refuses
// a version that is already there. It returns the tarball it serves.
func (r *Registry) Add(v Version) (Tarball, error) {
	if !namePattern.MatchString(v.Name) || len(v.Name) > 214 {
		return Tarball{}, fmt.Errorf("add: %q is not a valid npm package name", v.Name)
	}
	if v.Version == "" || strings.ContainsAny(v.Version, "/ ") {
		return Tarball{}, fmt.Errorf("add %s: %q is not a version", v.Name, v.Version)
	}
	manifest := maps.Clone(v.Manifest)
	if manifest == nil {
		manifest = map[string]any{}
	}
	manifest["name"] = v.Name
	manifest["version"] = v.Version
	if len(v.Dependencies) > 0 {
		manifest["dependencies"] = maps.Clone(v.Dependencies)
	}
	pj, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return Tarball{}, fmt.Errorf("add %s@%s: package.json: %w", v.Name, v.Version, err)
	}
	files := maps.Clone(v.Files)
	if files == nil {
		files = map[string]string{}
	}
	if _, ok := files["package.json"]; ok {
		return Tarball{}, fmt.Errorf("add %s@%s: package.json is made from Version's fields, not given in Files", v.Name, v.Version)
	}
	files["package.json"] = string(pj) + "\n"
	tb, err := Pack(files)
	if err != nil {
		return Tarball{}, fmt.Errorf("add %s@%s: %w", v.Name, v.Version, err)
	}
	// Round-trip so the manifest holds what JSON decoding gives (maps of
	// any), like a document read back from the registry's database.
	var stored map[string]any
	if err := json.Unmarshal(pj, &stored); err != nil {
		return Tarball{}, fmt.Errorf("add %s@%s: %w", v.Name, v.Version, err)
	}
	tag := v.Tag
	if tag == "" {
		tag = "latest"
	}

	now := time.Now().UTC()
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.packages[v.Name]
	if p == nil {
		p = &pkg{name: v.Name, versions: map[string]*version{}, distTags: map[string]string{}, created: now}
		r.packages[v.Name] = p
	}
	if _, ok := p.versions[v.Version]; ok {
		return Tarball{}, fmt.Errorf("add %s@%s: cannot publish over the previously published version", v.Name, v.Version)
	}
	p.versions[v.Version] = &version{manifest: stored, files: files, tarball: tb, published: now}
	p.distTags[tag] = v.Version
	p.modified = now
	p.rev++
	return tb, nil
}

// SetDistTag points a package's dist-tag at one of its versions.
func (r *Registry) SetDistTag(name, tag, ver string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.packages[name]
	if p == nil || p.versions[ver] == nil {
		return fmt.Errorf("set dist-tag %s on %s@%s: no such version", tag, name, ver)
	}
	p.distTags[tag] = ver
	p.modified = time.Now().UTC()
	p.rev++
	return nil
}

// Tamper makes the registry serve, from now on, a different tarball for
// name@ver than the one its packument's integrity and shasum describe: a
// valid package with one file more, as a compromised mirror might serve.
// The metadata is left as it was.
func (r *Registry) Tamper(name, ver string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.packages[name]
	if p == nil || p.versions[ver] == nil {
		return fmt.Errorf("tamper %s@%s: no such version", name, ver)
	}
	v := p.versions[ver]
	files := maps.Clone(v.files)
	files["tampered.js"] = "module.exports = 'not what was published'\n"
	tb, err := Pack(files)
	if err != nil {
		return fmt.Errorf("tamper %s@%s: %w", name, ver, err)
	}
	v.served = tb.Data
	return nil
}

// Requests returns every request received so far, in order of arrival.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// TarballFetches counts the tarball downloads (GET answered 200) so far,
// by "name@version".
func (r *Registry) TarballFetches() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.fetches)
}

// target is what a request's method and path name.
type target struct {
	route   Route
	name    string // package, decoded
	version string // version or tag (RouteVersion), version (RouteTarball)
	file    string // tarball file name
	// methods are the methods the endpoint answers; others are a 405.
	methods []string
}

var (
	reads      = []string{http.MethodGet, http.MethodHead}
	putDelete  = []string{http.MethodPut, http.MethodDelete}
	postOnly   = []string{http.MethodPost}
	putOnly    = []string{http.MethodPut}
	deleteOnly = []string{http.MethodDelete}
)

// classify maps a method and escaped path to an endpoint.
func classify(method, escaped string) target {
	if rest, ok := strings.CutPrefix(escaped, "/-/"); ok {
		return classifySpecial(method, rest)
	}
	name, segs, ok := splitPackage(strings.TrimPrefix(escaped, "/"))
	if !ok {
		return target{route: RouteUnknown}
	}
	t := target{name: name}
	switch {
	case len(segs) == 0:
		switch method {
		case http.MethodPut:
			t.route, t.methods = RoutePublish, putOnly
		case http.MethodDelete:
			t.route, t.methods = RouteUnpublish, deleteOnly
		default:
			t.route, t.methods = RoutePackument, reads
		}
	case len(segs) == 2 && segs[0] == "-rev":
		t.route, t.methods = RouteUnpublish, putDelete
	case len(segs) == 2 && segs[0] == "-":
		t.route, t.file, t.methods = RouteTarball, segs[1], reads
	case len(segs) == 4 && segs[0] == "-" && segs[2] == "-rev":
		t.route, t.file, t.methods = RouteUnpublish, segs[1], deleteOnly
	case len(segs) == 1 && segs[0] != "-" && segs[0] != "":
		t.route, t.version, t.methods = RouteVersion, segs[0], reads
	default:
		t.route = RouteUnknown
	}
	return t
}

// classifySpecial maps the /-/ paths (rest is the path after "/-/").
func classifySpecial(method, rest string) target {
	switch {
	case rest == "ping":
		return target{route: RoutePing, methods: reads}
	case rest == "whoami":
		return target{route: RouteWhoami, methods: reads}
	case strings.HasPrefix(rest, "user/org.couchdb.user:"):
		return target{route: RouteLogin, methods: putOnly}
	case rest == "v1/login":
		return target{route: RouteLogin, methods: postOnly}
	case rest == "npm/v1/tokens":
		return target{route: RouteToken, methods: []string{http.MethodGet, http.MethodPost}}
	case strings.HasPrefix(rest, "npm/v1/tokens/token/"), strings.HasPrefix(rest, "user/token/"):
		return target{route: RouteToken, methods: deleteOnly}
	case rest == "npm/v1/security/advisories/bulk", rest == "npm/v1/security/audits", rest == "npm/v1/security/audits/quick":
		return target{route: RouteAudit, methods: postOnly}
	}
	if pkgPath, ok := strings.CutPrefix(rest, "package/"); ok {
		name, segs, ok := splitPackage(pkgPath)
		switch {
		case ok && len(segs) == 1 && segs[0] == "dist-tags":
			return target{route: RouteDistTags, name: name, methods: reads}
		case ok && len(segs) == 2 && segs[0] == "dist-tags" && segs[1] != "":
			return target{route: RouteSetTag, name: name, methods: []string{http.MethodPut, http.MethodPost, http.MethodDelete}}
		}
	}
	return target{route: RouteUnknown}
}

// splitPackage splits an escaped path (without its leading slash) into the
// decoded package name and the decoded segments after it. A scoped name
// is @scope/name or @scope%2fname.
func splitPackage(p string) (name string, segs []string, ok bool) {
	raw := strings.Split(p, "/")
	if raw[0] == "" {
		return "", nil, false
	}
	first, err := url.PathUnescape(raw[0])
	if err != nil {
		return "", nil, false
	}
	raw = raw[1:]
	if strings.HasPrefix(first, "@") && !strings.Contains(first, "/") {
		if len(raw) == 0 {
			return "", nil, false
		}
		second, err := url.PathUnescape(raw[0])
		if err != nil {
			return "", nil, false
		}
		first, raw = first+"/"+second, raw[1:]
	}
	if strings.Count(first, "/") > 1 || (strings.Contains(first, "/") && !strings.HasPrefix(first, "@")) {
		return "", nil, false
	}
	for _, s := range raw {
		d, err := url.PathUnescape(s)
		if err != nil {
			return "", nil, false
		}
		segs = append(segs, d)
	}
	return first, segs, true
}

// ServeHTTP answers one request and records it.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	reqBytes := standin.Arrive(req, maxBodyBytes, r.latency)

	t := classify(req.Method, req.URL.EscapedPath())
	rec := Request{
		Method: req.Method, Path: req.URL.EscapedPath(), Query: req.URL.RawQuery,
		Route: t.route, Package: t.name, Version: t.version,
		Accept: req.Header.Get("Accept"), NpmCommand: req.Header.Get("npm-command"),
		RequestBytes: reqBytes,
	}
	authz := req.Header.Get("Authorization")
	rec.AuthPresent = authz != ""
	if token, ok := strings.CutPrefix(authz, "Bearer "); ok {
		rec.User, rec.AuthValid = r.tokens[token]
	}

	rw := &standin.StatusWriter{ResponseWriter: w}
	r.answer(rw, req, t, &rec)

	rec.Status = rw.Status()
	rec.Bytes = rw.Bytes()
	rec.Duration = time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, rec)
	if t.route == RouteTarball && req.Method == http.MethodGet && rec.Status == http.StatusOK {
		r.fetches[t.name+"@"+rec.Version]++
	}
}

// answer writes the response to one classified request. rec carries the
// auth seen; answer fills in the tarball's version.
func (r *Registry) answer(w http.ResponseWriter, req *http.Request, t target, rec *Request) {
	if t.route == RouteLogin {
		// Login needs no auth and is answered as a failed one: the
		// documented 401 with a Legacy Status.
		writeJSON(w, req, http.StatusUnauthorized, map[string]any{"ok": false, "error": "login is not accepted by this registry"}, nil)
		return
	}
	isRead := req.Method == http.MethodGet || req.Method == http.MethodHead
	switch {
	case rec.AuthPresent && !rec.AuthValid:
		writeUnauthorized(w, req, "invalid or unknown token")
		return
	case !rec.AuthValid && !(isRead && r.anonymousReads):
		writeUnauthorized(w, req, "authentication required")
		return
	}
	if t.route == RouteUnknown {
		writeJSON(w, req, http.StatusNotFound, map[string]string{"error": "Not found"}, nil)
		return
	}
	if !slices.Contains(t.methods, req.Method) {
		writeJSON(w, req, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"},
			http.Header{"Allow": {strings.Join(t.methods, ", ")}})
		return
	}
	if t.route.IsWrite() {
		msg := fmt.Sprintf("forbidden: %s is refused by this registry", t.route)
		if t.route == RoutePublish {
			msg = fmt.Sprintf("You do not have permission to publish %q. Are you logged in as the correct user?", t.name)
		}
		writeJSON(w, req, http.StatusForbidden, map[string]string{"error": msg}, nil)
		return
	}

	switch t.route {
	case RoutePing:
		writeJSON(w, req, http.StatusOK, map[string]any{}, nil)
	case RouteWhoami:
		if !rec.AuthValid {
			writeUnauthorized(w, req, "authentication required")
			return
		}
		writeJSON(w, req, http.StatusOK, map[string]string{"username": rec.User}, nil)
	case RouteDistTags:
		tags, ok := r.distTags(t.name)
		if !ok {
			writeJSON(w, req, http.StatusNotFound, map[string]string{"error": "Not found"}, nil)
			return
		}
		writeJSON(w, req, http.StatusOK, tags, nil)
	case RoutePackument:
		r.servePackument(w, req, t.name)
	case RouteVersion:
		r.serveVersion(w, req, t.name, t.version)
	case RouteTarball:
		rec.Version = r.serveTarball(w, req, t.name, t.file)
	}
}

func (r *Registry) distTags(name string) (map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.packages[name]
	if p == nil {
		return nil, false
	}
	return maps.Clone(p.distTags), true
}

// base is the URL tarball links are under for this request.
func (r *Registry) base(req *http.Request) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.baseURL != "" {
		return r.baseURL
	}
	return "http://" + req.Host
}

func (r *Registry) servePackument(w http.ResponseWriter, req *http.Request, name string) {
	abbreviated := strings.Contains(req.Header.Get("Accept"), abbreviatedType)
	base := r.base(req)
	r.mu.Lock()
	p := r.packages[name]
	var body []byte
	var modified time.Time
	var err error
	if p != nil {
		body, err = p.document(base, abbreviated)
		modified = p.modified
	}
	r.mu.Unlock()
	if p == nil {
		writeJSON(w, req, http.StatusNotFound, map[string]string{"error": "Not found"}, nil)
		return
	}
	if err != nil {
		writeJSON(w, req, http.StatusInternalServerError, map[string]string{"error": err.Error()}, nil)
		return
	}
	ctype := "application/json"
	if abbreviated {
		ctype = abbreviatedType
	}
	writeCacheable(w, req, body, http.Header{
		"Content-Type":  {ctype},
		"Cache-Control": {"public, max-age=300"},
		"Last-Modified": {modified.Format(http.TimeFormat)},
		"Vary":          {"Accept"}, // one URL, two documents
	})
}

// document is the packument's serialised form, made once per revision of
// the package, form and base URL. Callers hold the registry's lock; the
// bytes are shared and never changed.
func (p *pkg) document(base string, abbreviated bool) ([]byte, error) {
	key := fmt.Sprint(abbreviated, " ", base)
	if p.documentsRev != p.rev || p.documents == nil {
		p.documents, p.documentsRev = map[string][]byte{}, p.rev
	}
	if body, ok := p.documents[key]; ok {
		return body, nil
	}
	var doc any
	if abbreviated {
		doc = p.abbreviated(base)
	} else {
		doc = p.full(base)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	p.documents[key] = body
	return body, nil
}

func (r *Registry) serveVersion(w http.ResponseWriter, req *http.Request, name, spec string) {
	base := r.base(req)
	r.mu.Lock()
	p := r.packages[name]
	var doc map[string]any
	if p != nil {
		ver := spec
		if tagged, ok := p.distTags[spec]; ok {
			ver = tagged
		}
		if v := p.versions[ver]; v != nil {
			doc = p.fullVersion(base, ver, v)
		}
	}
	r.mu.Unlock()
	switch {
	case p == nil:
		writeJSON(w, req, http.StatusNotFound, map[string]string{"error": "Not found"}, nil)
	case doc == nil:
		// The registry answers a JSON string here, not an object.
		writeJSON(w, req, http.StatusNotFound, "version not found: "+spec, nil)
	default:
		writeJSON(w, req, http.StatusOK, doc, nil)
	}
}

// serveTarball serves the file and returns the version it is of ("" when
// none is).
func (r *Registry) serveTarball(w http.ResponseWriter, req *http.Request, name, file string) string {
	r.mu.Lock()
	var data []byte
	var ver string
	if p := r.packages[name]; p != nil {
		for vs, v := range p.versions {
			if file == tarballFile(name, vs) {
				ver, data = vs, v.tarball.Data
				if v.served != nil {
					data = v.served
				}
				break
			}
		}
	}
	r.mu.Unlock()
	if data == nil {
		writeJSON(w, req, http.StatusNotFound, map[string]string{"error": "Not found"}, nil)
		return ""
	}
	writeCacheable(w, req, data, http.Header{
		"Content-Type":  {"application/octet-stream"},
		"Cache-Control": {"public, immutable, max-age=31557600"},
	})
	return ver
}

// writeCacheable writes body with an ETag, or a 304 when If-None-Match
// names it.
func writeCacheable(w http.ResponseWriter, req *http.Request, body []byte, h http.Header) {
	sum := sha1.Sum(body)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("ETag", etag)
	if inm := req.Header.Get("If-None-Match"); inm != "" && (inm == "*" || slices.Contains(splitETags(inm), etag)) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, req, http.StatusOK, body)
}

func splitETags(h string) []string {
	var out []string
	for _, e := range strings.Split(h, ",") {
		out = append(out, strings.TrimPrefix(strings.TrimSpace(e), "W/"))
	}
	return out
}

func writeUnauthorized(w http.ResponseWriter, req *http.Request, msg string) {
	writeJSON(w, req, http.StatusUnauthorized, map[string]string{"error": msg},
		http.Header{"WWW-Authenticate": {`Bearer realm="fakenpm"`}})
}

// writeJSON writes v as JSON with header's entries.
func writeJSON(w http.ResponseWriter, req *http.Request, status int, v any, header http.Header) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	writeBody(w, req, status, body)
}

// writeBody writes body with its length, or only the length for HEAD.
func writeBody(w http.ResponseWriter, req *http.Request, status int, body []byte) {
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	if req.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, bytes.NewReader(body)) // the client may be gone; nothing to do
}
