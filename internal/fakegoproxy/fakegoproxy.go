// Package fakegoproxy is a Go module proxy with its own checksum
// database, run on loopback inside a test, for tests only. Issue 15's
// registry egress forwards a sandbox's `go` to a GOPROXY upstream, and its
// tests need one that they control: which modules exist, a token it
// requires, a per-request latency like a registry across the internet,
// bytes that do not match the checksum database, and a log of every
// request that reached it (what the egress and its cache let through).
// proxy.golang.org cannot be any of that, and is not reachable here.
//
// It follows the "GOPROXY protocol" section of go.dev/ref/mod: GET (or
// HEAD) $module/@v/list, $module/@v/$version.info, .mod and .zip, and
// $module/@latest, with module paths and versions case-encoded ('!'
// before a lower-cased capital, module.EscapePath); an unknown module or
// version is a 404 (or 410, Options.MissingStatus) with a plain-text body,
// as the go command prints it. Zips are made with golang.org/x/mod/zip, so
// they are the zips the go command accepts.
//
// The checksum database is served the way a proxy serves one ("Checksum
// database" in go.dev/ref/mod, and the design doc 25530's "Proxying a
// checksum database"): $proxy/sumdb/$name/supported answers 200, and
// $proxy/sumdb/$name/lookup/…, /latest and /tile/… are
// golang.org/x/mod/sumdb's Server over a transparent log built in New (one
// record per module version, the go.sum lines of its honest zip and
// go.mod), signed with a key made for this proxy (sumdb/note). So `go` with
// GOPROXY=URL() and GOSUMDB=SumDB()'s "name+key" (no URL: the go command
// then asks the proxy's supported endpoint first and, when it answers 200,
// uses only the proxy) verifies every module with GOSUMDB on.
//
// Token auth: with Options.Token set, every request needs the token, as
// `Authorization: Bearer <token>` or Basic auth with any user and the token
// as password (what a netrc entry sends); otherwise it is answered 401 with
// WWW-Authenticate. The go command sends credentials only over HTTPS (its
// GOAUTH, netrc by default, applies to https URLs alone, and it refuses a
// user:password in an http GOPROXY), so Options.TLS serves HTTPS with a
// certificate that CertFile writes for SSL_CERT_FILE.
//
// Options.RedirectZips serves zips as proxy.golang.org does: a 302 to a
// signed, expiring URL on a second listener, the storage (storage.go),
// which refuses a bad or expired signature with a 403.
//
// Only GET and HEAD are served (405 otherwise), only on the protocol's
// paths (404 otherwise). Every request is recorded (Requests), with its
// kind, module and version, status, bytes, duration and the auth it
// carried.
//
// It does not model: pseudo-version or query resolution ($module/@v/master
// and the like are 404, as for a proxy that has never seen them), the
// go-import meta tags of a vanity import server, retracted or deprecated
// versions beyond what a served go.mod says itself, or a database that
// grows (the log is fixed when New returns, so a tampered go.mod, or a
// module added later, is not expressible).
//
// Files: fakegoproxy.go the proxy, its handler and log; module.go the
// modules, zips, hashes and Graph; sumdb.go the checksum database's log.
package fakegoproxy

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/note"

	"github.com/inspecthq/inspect/internal/standin"
)

// DefaultSumDBName is the checksum database's name when Options gives
// none: a host under the reserved .example domain, so that a go command
// that fails to go through the proxy cannot reach a real database, and so
// that no go.sum line it verifies can be mistaken for sum.golang.org's.
const DefaultSumDBName = "sum.test.example"

// Options configure a Proxy.
type Options struct {
	// Modules are the module versions served, each once.
	Modules []Module
	// SumDBName names the checksum database (DefaultSumDBName when empty);
	// it is what GOSUMDB names and the go command's go.sum verification
	// messages show.
	SumDBName string
	// Token, when set, is required on every request: Bearer, or Basic
	// with the token as password.
	Token string
	// Latency delays every answer by this much, on the server's side
	// (a request whose client goes away first is answered nothing).
	Latency time.Duration
	// TLS serves HTTPS (see CertFile), which the go command needs before
	// it sends any credential.
	TLS bool
	// MissingStatus answers unknown modules and versions:
	// http.StatusNotFound (the default) or http.StatusGone, the two the
	// go command takes as "not here".
	MissingStatus int
	// RedirectZips answers every zip with a 302 to a signed URL on a
	// second listener (StorageURL), which serves it only while the
	// signature holds and has not expired, as the public proxy's zips
	// live on storage.googleapis.com. The token, if any, is not needed
	// there: the signature is the credential.
	RedirectZips bool
	// SignedURLTTL is how long a signed URL lives (DefaultSignedURLTTL
	// when 0; a negative TTL hands out URLs already expired).
	SignedURLTTL time.Duration
}

// Kind is what a request asked for, by the protocol's paths.
type Kind string

// The kinds of request the proxy serves. A request outside them is
// recorded with Kind "".
const (
	KindList           Kind = "list"   // $module/@v/list
	KindInfo           Kind = "info"   // $module/@v/$version.info
	KindMod            Kind = "mod"    // $module/@v/$version.mod
	KindZip            Kind = "zip"    // $module/@v/$version.zip
	KindLatest         Kind = "latest" // $module/@latest
	KindSumDBSupported Kind = "sumdb-supported"
	KindSumDBLookup    Kind = "sumdb-lookup" // sumdb/$name/lookup/$module@$version
	KindSumDBLatest    Kind = "sumdb-latest" // sumdb/$name/latest
	KindSumDBTile      Kind = "sumdb-tile"   // sumdb/$name/tile/…
	// KindStorageZip is a zip fetched from the storage by its signed URL
	// (Options.RedirectZips); the zip request itself, answered 302, is
	// still KindZip.
	KindStorageZip Kind = "storage-zip"
)

// Request is one request the proxy received, refused ones included.
type Request struct {
	Time   time.Time
	Method string
	// Path is the URL path as sent (case-encoded).
	Path string
	// Kind is what the path asks for; "" outside the protocol.
	Kind Kind
	// Module and Version are decoded from the path, where it names them
	// (a sumdb lookup names both; a list or @latest only the module).
	Module, Version string
	// Status is the status answered; 0 when the client went away during
	// the latency, before any answer.
	Status int
	// Bytes is the body bytes written (0 for HEAD).
	Bytes int64
	// Duration is from the request's arrival to the end of its answer,
	// the latency included.
	Duration time.Duration
	// AuthScheme is the Authorization header's scheme ("Basic",
	// "Bearer"), "" when it had none. The credential is not kept.
	AuthScheme string
	// Authenticated is whether the request carried Options.Token (always
	// false when no token is set).
	Authenticated bool
}

// Proxy is a running fake module proxy, closed by the test's cleanup.
type Proxy struct {
	opts     Options
	server   *httptest.Server
	handler  http.Handler
	modules  map[string][]*servedModule // by path, versions in semver order
	verifier string
	sumdbAt  string // "/sumdb/" + name
	sumdb    http.Handler
	certFile string
	storage  *storage // with Options.RedirectZips

	mu  sync.Mutex
	log []Request
}

// New starts a proxy serving opts.Modules; it fails the test on a module
// that the go command would refuse (bad path or version, no go.mod, a
// go.mod naming another module, a duplicate).
func New(t testing.TB, opts Options) *Proxy {
	t.Helper()
	if opts.SumDBName == "" {
		opts.SumDBName = DefaultSumDBName
	}
	switch opts.MissingStatus {
	case 0:
		opts.MissingStatus = http.StatusNotFound
	case http.StatusNotFound, http.StatusGone:
	default:
		t.Fatalf("fakegoproxy: MissingStatus %d: want 404 or 410", opts.MissingStatus)
	}
	p := &Proxy{opts: opts, modules: make(map[string][]*servedModule), sumdbAt: "/sumdb/" + opts.SumDBName}
	var all []*servedModule
	for _, m := range opts.Modules {
		s, err := prepare(m)
		if err != nil {
			t.Fatalf("fakegoproxy: %v", err)
		}
		if p.find(m.Path, m.Version) != nil {
			t.Fatalf("fakegoproxy: %s is served twice", m)
		}
		p.modules[m.Path] = append(p.modules[m.Path], s)
		all = append(all, s)
	}
	for _, versions := range p.modules {
		slices.SortFunc(versions, func(a, b *servedModule) int { return semver.Compare(a.Version, b.Version) })
	}
	// Log in a fixed order, so record ids do not follow map iteration.
	slices.SortFunc(all, func(a, b *servedModule) int { return strings.Compare(a.String(), b.String()) })

	signerKey, verifierKey, err := note.GenerateKey(rand.Reader, opts.SumDBName)
	if err != nil {
		t.Fatalf("fakegoproxy: checksum database key for %q: %v", opts.SumDBName, err)
	}
	db, err := newChecksumDB(all, signerKey)
	if err != nil {
		t.Fatalf("fakegoproxy: %v", err)
	}
	p.verifier = verifierKey
	p.sumdb = http.StripPrefix(p.sumdbAt, sumdb.NewServer(db))
	p.handler = http.HandlerFunc(p.serve)

	if opts.RedirectZips {
		p.storage, err = newStorage(opts.SignedURLTTL, opts.TLS, p.record)
		if err != nil {
			t.Fatalf("fakegoproxy: %v", err)
		}
		t.Cleanup(p.storage.server.Close)
	}

	p.server = httptest.NewUnstartedServer(p.handler)
	// The server's own log has only connection-level noise, such as the
	// handshake a go command abandons as it exits; every request it
	// answered is in Requests.
	p.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	if !opts.TLS {
		p.server.Start()
		t.Cleanup(p.server.Close)
		return p
	}
	p.server.StartTLS()
	t.Cleanup(p.server.Close)
	p.certFile = filepath.Join(t.TempDir(), "fakegoproxy-cert.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw})
	if err := os.WriteFile(p.certFile, cert, 0o644); err != nil {
		t.Fatalf("fakegoproxy: writing the certificate: %v", err)
	}
	return p
}

// URL is the proxy's base URL, for GOPROXY (no trailing slash).
func (p *Proxy) URL() string { return p.server.URL }

// Handler is the proxy itself, recording included, for a test that mounts
// it behind another server (at the root: the paths are the protocol's).
func (p *Proxy) Handler() http.Handler { return p.handler }

// Client is an HTTP client that trusts the proxy's certificate.
func (p *Proxy) Client() *http.Client { return p.server.Client() }

// CertFile is a PEM file of the proxy's certificate, for SSL_CERT_FILE,
// with Options.TLS; "" without.
func (p *Proxy) CertFile() string { return p.certFile }

// SumDB is the checksum database's name and verifier key. GOSUMDB is
// name's verifier key alone (it starts with the name): "go" then reaches
// the database through GOPROXY.
func (p *Proxy) SumDB() (name, verifierKey string) { return p.opts.SumDBName, p.verifier }

// GoSum is the two go.sum lines the checksum database records for
// path@version (the honest zip's, for a TamperZip module), "" when it is
// not served.
func (p *Proxy) GoSum(path, version string) string {
	m := p.find(path, version)
	if m == nil {
		return ""
	}
	return string(m.goSum())
}

// Requests is a copy of the log, in order of completion.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// Reset empties the log.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = nil
}

// Fetches counts the answered (200) GET requests of one kind, by
// "path@version" (by path alone for a list or @latest): how often the
// proxy handed each out, so a test can assert that a warm cache asked for
// no zip again.
func (p *Proxy) Fetches(kind Kind) map[string]int {
	counts := make(map[string]int)
	for _, r := range p.Requests() {
		if r.Kind != kind || r.Method != http.MethodGet || r.Status != http.StatusOK {
			continue
		}
		key := r.Module
		if r.Version != "" {
			key += "@" + r.Version
		}
		counts[key]++
	}
	return counts
}

func (p *Proxy) find(path, version string) *servedModule {
	for _, m := range p.modules[path] {
		if m.Version == version {
			return m
		}
	}
	return nil
}

// serve answers one request, after the latency, and records it.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &standin.StatusWriter{ResponseWriter: w, Head: r.Method == http.MethodHead}
	entry := Request{Time: start, Method: r.Method, Path: r.URL.Path}
	entry.AuthScheme, entry.Authenticated = p.authenticate(r)
	defer func() {
		entry.Status, entry.Bytes, entry.Duration = rec.Status(), rec.Bytes(), time.Since(start)
		p.record(entry)
	}()

	if !standin.Pause(r.Context(), p.opts.Latency) {
		return
	}
	route := p.route(r.URL.Path)
	entry.Kind, entry.Module, entry.Version = route.kind, route.module, route.version

	if p.opts.Token != "" && !entry.Authenticated {
		rec.Header().Add("WWW-Authenticate", `Bearer realm="fakegoproxy"`)
		rec.Header().Add("WWW-Authenticate", `Basic realm="fakegoproxy"`)
		plain(rec, http.StatusUnauthorized, "unauthorized: this proxy requires its token, as Authorization: Bearer <token> or Basic auth with the token as password")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rec.Header().Set("Allow", "GET, HEAD")
		plain(rec, http.StatusMethodNotAllowed, "method not allowed: a module proxy serves GET and HEAD only")
		return
	}
	if route.answer != nil {
		route.answer(rec, r)
		return
	}
	plain(rec, http.StatusNotFound, "not found: "+route.why)
}

func (p *Proxy) record(entry Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, entry)
}

// authenticate reports the Authorization scheme and whether it carried
// the token.
func (p *Proxy) authenticate(r *http.Request) (scheme string, ok bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, credential, _ := strings.Cut(h, " ")
	if p.opts.Token == "" {
		return scheme, false
	}
	switch strings.ToLower(scheme) {
	case "bearer":
		ok = subtle.ConstantTimeCompare([]byte(strings.TrimSpace(credential)), []byte(p.opts.Token)) == 1
	case "basic":
		_, password, hasBasic := r.BasicAuth()
		ok = hasBasic && subtle.ConstantTimeCompare([]byte(password), []byte(p.opts.Token)) == 1
	}
	return scheme, ok
}

// route is what a path asks for: its kind and names, and the answer to
// give, or why there is none.
type route struct {
	kind            Kind
	module, version string
	answer          http.HandlerFunc
	why             string // for a 404 without an answer
}

// route parses a path by the GOPROXY protocol and the proxied checksum
// database's endpoints.
func (p *Proxy) route(urlPath string) route {
	if rest, ok := strings.CutPrefix(urlPath, p.sumdbAt+"/"); ok {
		return p.sumdbRoute(rest)
	}
	if strings.HasPrefix(urlPath, "/sumdb/") {
		return route{why: "this proxy serves only the checksum database " + p.opts.SumDBName}
	}
	trimmed := strings.TrimPrefix(urlPath, "/")
	if escPath, ok := strings.CutSuffix(trimmed, "/@latest"); ok {
		return p.moduleRoute(KindLatest, escPath, "")
	}
	escPath, file, ok := strings.Cut(trimmed, "/@v/")
	if !ok {
		return route{why: urlPath + " is not a GOPROXY protocol path ($module/@v/list, $module/@v/$version.{info,mod,zip}, $module/@latest)"}
	}
	if file == "list" {
		return p.moduleRoute(KindList, escPath, "")
	}
	for _, k := range []Kind{KindInfo, KindMod, KindZip} {
		if escVersion, ok := strings.CutSuffix(file, "."+string(k)); ok {
			return p.moduleRoute(k, escPath, escVersion)
		}
	}
	return route{why: urlPath + ": @v/ serves list, $version.info, $version.mod and $version.zip"}
}

// moduleRoute answers a module's endpoint; escVersion is "" for list and
// @latest.
func (p *Proxy) moduleRoute(kind Kind, escPath, escVersion string) route {
	modPath, err := module.UnescapePath(escPath)
	if err != nil {
		return route{kind: kind, why: err.Error()}
	}
	rt := route{kind: kind, module: modPath}
	versions := p.modules[modPath]
	if len(versions) == 0 {
		rt.answer = p.missing("module " + modPath + ": unknown to this proxy")
		return rt
	}
	switch kind {
	case KindList:
		rt.answer = func(w http.ResponseWriter, _ *http.Request) {
			var b strings.Builder
			for _, m := range versions {
				// The protocol's list leaves pseudo-versions out.
				if !module.IsPseudoVersion(m.Version) {
					b.WriteString(m.Version + "\n")
				}
			}
			text(w, "text/plain; charset=utf-8", []byte(b.String()))
		}
		return rt
	case KindLatest:
		latest := latestOf(versions)
		rt.version = latest.Version
		rt.answer = func(w http.ResponseWriter, _ *http.Request) { writeInfo(w, latest) }
		return rt
	}
	version, err := module.UnescapeVersion(escVersion)
	if err != nil {
		rt.why = err.Error()
		return rt
	}
	rt.version = version
	m := p.find(modPath, version)
	if m == nil {
		rt.answer = p.missing(modPath + "@" + version + ": unknown revision " + version)
		return rt
	}
	switch kind {
	case KindInfo:
		rt.answer = func(w http.ResponseWriter, _ *http.Request) { writeInfo(w, m) }
	case KindMod:
		rt.answer = func(w http.ResponseWriter, _ *http.Request) { text(w, "text/plain; charset=utf-8", m.mod) }
	case KindZip:
		rt.answer = func(w http.ResponseWriter, _ *http.Request) { text(w, "application/zip", m.zip) }
		if p.storage != nil {
			rt.answer = p.redirectZip(m)
		}
	}
	return rt
}

// sumdbRoute answers the proxied checksum database's endpoints; rest is
// the path after sumdb/$name/.
func (p *Proxy) sumdbRoute(rest string) route {
	switch {
	case rest == "supported":
		return route{kind: KindSumDBSupported, answer: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
		}}
	case rest == "latest":
		return route{kind: KindSumDBLatest, answer: p.sumdb.ServeHTTP}
	case strings.HasPrefix(rest, "tile/"):
		return route{kind: KindSumDBTile, answer: p.sumdb.ServeHTTP}
	case strings.HasPrefix(rest, "lookup/"):
		rt := route{kind: KindSumDBLookup, answer: p.sumdb.ServeHTTP}
		escPath, escVersion, _ := strings.Cut(strings.TrimPrefix(rest, "lookup/"), "@")
		// Names for the log only: sumdb.Server answers a bad one itself.
		rt.module, _ = module.UnescapePath(escPath)
		rt.version, _ = module.UnescapeVersion(escVersion)
		return rt
	}
	return route{why: "the checksum database serves supported, latest, lookup/ and tile/"}
}

// missing answers an unknown module or version the protocol's way.
func (p *Proxy) missing(why string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		word := "not found"
		if p.opts.MissingStatus == http.StatusGone {
			word = "gone"
		}
		plain(w, p.opts.MissingStatus, word+": "+why)
	}
}

// latestOf is what @latest names: the highest release, or the highest
// pre-release when there is none, as the go command's own "latest" query
// prefers.
func latestOf(versions []*servedModule) *servedModule {
	for i := len(versions) - 1; i >= 0; i-- {
		if semver.Prerelease(versions[i].Version) == "" {
			return versions[i]
		}
	}
	return versions[len(versions)-1]
}

func writeInfo(w http.ResponseWriter, m *servedModule) {
	b, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, m.Time.UTC()})
	if err != nil {
		plain(w, http.StatusInternalServerError, err.Error())
		return
	}
	text(w, "application/json", b)
}

func text(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body) // the client may be gone; the log has the bytes that went
}

// plain is an error answer with the plain-text body the go command shows
// as "server response:".
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg) // as in text
}
