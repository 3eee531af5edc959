package channel

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakenpm"
	"github.com/inspecthq/inspect/internal/fakepypi"
)

type registries map[string]config.Registry

func (r registries) Registry(name string) (config.Registry, bool) { v, ok := r[name]; return v, ok }

const registryToken = "upstream-secret-0123456789"

// registryRig is the channel with one session whose spec opens the named
// registries, in front of real stand-in upstreams.
func registryRig(t testing.TB, regs registries, open ...contract.Registry) *rig {
	t.Helper()
	r := newRig(t, Options{RegistryProxy: registryproxy.New(registryproxy.Options{Upstreams: regs})})
	a := r.st.attempts[sessionAttempt]
	a.Spec = mustJSON(t, contract.Spec{Registries: open})
	r.st.attempts[sessionAttempt] = a
	return r
}

// registry asks the channel's registry route for rest as the session's
// supervisor would relay it.
func (r *rig) registry(t *testing.T, method, name, rest string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, contract.EgressRegistryPath(sessionAttempt, name, rest), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
	req.Header.Set("Authorization", "Bearer sandbox-made-this-up") // never passed on
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	return rec
}

func refusedWith(t *testing.T, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	var body struct {
		Error struct{ Type, Message string }
	}
	if rec.Code != http.StatusForbidden || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Type != "inspect_egress_refused" || !strings.Contains(body.Error.Message, want) {
		t.Fatalf("answer %d %s, want a 403 refusal saying %q", rec.Code, rec.Body, want)
	}
}

func TestRegistryEgressServesGoModulesWithTheUpstreamsToken(t *testing.T) {
	alpha := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/alpha"), "alpha.go": "package alpha\n"}}
	up := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{alpha}, Token: registryToken, TLS: true})
	name, key := up.SumDB()
	r := registryRig(t, registries{"go": {Kind: "goproxy", URL: up.URL(), Token: registryToken, CAFile: up.CertFile(), SumDB: key}},
		contract.Registry{Name: "go", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseSetup}, SumDB: key})

	rec := r.registry(t, http.MethodGet, "go", "fake.test/alpha/@v/v1.0.0.zip")
	if rec.Code != http.StatusOK {
		t.Fatalf("zip: %d %s", rec.Code, rec.Body)
	}
	direct, err := up.Client().Do(func() *http.Request {
		req, _ := http.NewRequest(http.MethodGet, up.URL()+"/fake.test/alpha/@v/v1.0.0.zip", nil)
		req.Header.Set("Authorization", "Bearer "+registryToken)
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(direct.Body)
	direct.Body.Close()
	if rec.Body.String() != string(want) || len(want) == 0 {
		t.Fatalf("the zip did not pass byte for byte (%d bytes, want %d)", rec.Body.Len(), len(want))
	}
	if rec := r.registry(t, http.MethodGet, "go", "sumdb/"+name+"/supported"); rec.Code != http.StatusOK {
		t.Fatalf("sumdb through the proxy: %d %s", rec.Code, rec.Body)
	}
	for _, q := range up.Requests() {
		if !q.Authenticated {
			t.Fatalf("%s %s reached the upstream without its token", q.Method, q.Path)
		}
	}
	if strings.Contains(rec.Body.String(), registryToken) {
		t.Fatal("the token reached the sandbox's side")
	}

	// Refusals never reach the upstream.
	before := len(up.Requests())
	refusedWith(t, r.registry(t, http.MethodPut, "go", "fake.test/alpha/@v/v1.0.0.zip"), "only GET and HEAD")
	refusedWith(t, r.registry(t, http.MethodGet, "go", "fake.test/alpha/@v/v1.0.0.exe"), "not a GOPROXY version file")
	refusedWith(t, r.registry(t, http.MethodGet, "go", "fake.test/alpha/@v/list?x=1"), "no query string")
	refusedWith(t, r.registry(t, http.MethodGet, "nope", "fake.test/alpha/@v/list"), `no registry named "nope"; it may reach: go`)
	if n := len(up.Requests()); n != before {
		t.Fatalf("%d refused requests reached the upstream", n-before)
	}
}

func TestRegistryEgressPointsNPMTarballsBackAtTheProxy(t *testing.T) {
	up := fakenpm.Serve(t, fakenpm.WithToken(registryToken, "bot"))
	tb, err := up.Add(fakenpm.Version{Name: "@acme/util", Version: "1.2.0", Files: map[string]string{"index.js": "module.exports = 1\n"}})
	if err != nil {
		t.Fatal(err)
	}
	r := registryRig(t, registries{"npm": {Kind: "npm", URL: up.URL(), Token: registryToken}},
		contract.Registry{Name: "npm", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup}})

	rec := r.registry(t, http.MethodGet, "npm", "@acme%2futil")
	if rec.Code != http.StatusOK {
		t.Fatalf("packument: %d %s", rec.Code, rec.Body)
	}
	var doc struct {
		Versions map[string]struct {
			Dist struct{ Tarball, Integrity string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	dist := doc.Versions["1.2.0"].Dist
	base := contract.RegistryBaseURL("npm")
	if !strings.HasPrefix(dist.Tarball, base) || dist.Integrity != tb.Integrity {
		t.Fatalf("dist = %+v, want the tarball under %s and integrity %s untouched", dist, base, tb.Integrity)
	}
	if strings.Contains(rec.Body.String(), up.URL()) {
		t.Fatal("the packument still links to the upstream")
	}
	rec = r.registry(t, http.MethodGet, "npm", strings.TrimPrefix(dist.Tarball, base))
	if rec.Code != http.StatusOK || rec.Body.String() != string(tb.Data) {
		t.Fatalf("tarball: %d, %d bytes, want %d", rec.Code, rec.Body.Len(), len(tb.Data))
	}

	before := len(up.Requests())
	refusedWith(t, r.registry(t, http.MethodPut, "npm", "@acme%2futil"), "only GET and HEAD")
	refusedWith(t, r.registry(t, http.MethodGet, "npm", "-/npm/v1/security/advisories/bulk"), "audits")
	refusedWith(t, r.registry(t, http.MethodGet, "npm", "-/whoami"), "registry operations under /-/")
	if n := len(up.Requests()); n != before {
		t.Fatalf("%d refused requests reached the upstream", n-before)
	}
	for _, q := range up.Requests() {
		if !q.AuthValid {
			t.Fatalf("%s %s reached the upstream without its token", q.Method, q.Path)
		}
	}
}

func TestRegistryEgressRefusesWhatTheSessionWasNotGiven(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(up.Close)
	regs := registries{"go": {Kind: "goproxy", URL: up.URL}, "npm": {Kind: "npm", URL: up.URL}}
	// The session's spec opens only npm, though the server has both.
	r := registryRig(t, regs, contract.Registry{Name: "npm", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup}})
	refusedWith(t, r.registry(t, http.MethodGet, "go", "x.test/a/@v/list"), "it may reach: npm")
	// A snapshot build reaches what its own job opens, here nothing.
	job := r.st.attempts[snapshotAttempt]
	job.Spec = mustJSON(t, contract.SnapshotJob{Registries: []contract.Registry{{Name: "go", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseSetup}}}})
	r.st.attempts[snapshotAttempt] = job
	req := httptest.NewRequest(http.MethodGet, contract.EgressRegistryPath(snapshotAttempt, "npm", "left-pad"), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(snapshotAttempt))
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	refusedWith(t, rec, "it may reach: go")
	// An ended attempt's token is refused before anything is looked at.
	req = httptest.NewRequest(http.MethodGet, contract.EgressRegistryPath(endedAttempt, "npm", "left-pad"), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(endedAttempt))
	rec = httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusGone {
		t.Fatalf("ended attempt: %d", rec.Code)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d refused requests reached the upstream", n)
	}
	// What the job opens, it reaches.
	req = httptest.NewRequest(http.MethodGet, contract.EgressRegistryPath(snapshotAttempt, "go", "x.test/a/@v/list"), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(snapshotAttempt))
	rec = httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || hits.Load() != 1 {
		t.Fatalf("the snapshot build's own registry: %d %s, %d upstream hits", rec.Code, rec.Body, hits.Load())
	}
}

func TestRegistryEgressFollowsRedirectsOnlyToItsOwnHosts(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "x") }))
	t.Cleanup(elsewhere.Close)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, elsewhere.URL+"/left-pad/-/left-pad-1.0.0.tgz", http.StatusFound)
	}))
	t.Cleanup(up.Close)
	r := registryRig(t, registries{"npm": {Kind: "npm", URL: up.URL}}, contract.Registry{Name: "npm", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup}})
	if rec := r.registry(t, http.MethodGet, "npm", "left-pad/-/left-pad-1.0.0.tgz"); rec.Code != http.StatusBadGateway {
		t.Fatalf("a redirect to another host: %d %s, want 502", rec.Code, rec.Body)
	}
}

// A download that takes longer than the server's write timeout, with no
// silence longer than the idle timeout, arrives whole: the egress lifts
// http.write_timeout for its answers.
func TestRegistryEgressOutlastsTheServersWriteTimeout(t *testing.T) {
	const chunks, every = 6, 100 * time.Millisecond
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fl := w.(http.Flusher)
		// The upstream's pace, as a slow registry's: a ticker on the
		// serving side, not a wait in the test.
		pace := time.NewTicker(every)
		defer pace.Stop()
		for i := 0; i < chunks; i++ {
			<-pace.C
			_, _ = io.WriteString(w, strings.Repeat("z", 1000))
			fl.Flush()
		}
	}))
	t.Cleanup(up.Close)
	r := registryRig(t, registries{"npm": {Kind: "npm", URL: up.URL}}, contract.Registry{Name: "npm", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup}})
	front := httptest.NewUnstartedServer(r.mux)
	front.Config.WriteTimeout = 3 * every // half of what the download takes
	front.Config.ReadTimeout = 3 * every
	front.Start()
	t.Cleanup(front.Close)
	req, _ := http.NewRequest(http.MethodGet, front.URL+contract.EgressRegistryPath(sessionAttempt, "npm", "left-pad/-/left-pad-1.0.0.tgz"), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || len(body) != chunks*1000 {
		t.Fatalf("read %d bytes (%v), want %d: the server's write timeout cut the download", len(body), err, chunks*1000)
	}
}

func TestRegistryEgressPointsPyPIFilesBackAtTheProxy(t *testing.T) {
	up := fakepypi.Serve(t, fakepypi.WithToken(registryToken))
	whl, err := fakepypi.Wheel{Name: "demo-dep", Version: "1.0", Source: "X = 1\n"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Add(whl); err != nil {
		t.Fatal(err)
	}
	r := registryRig(t, registries{"pypi": {Kind: "pypi", URL: up.URL(), Token: registryToken, Auth: "basic"}},
		contract.Registry{Name: "pypi", Kind: "pypi", Phases: []contract.Phase{contract.PhaseSetup}})
	req := httptest.NewRequest(http.MethodGet, contract.EgressRegistryPath(sessionAttempt, "pypi", "simple/demo-dep/"), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
	req.Header.Set("Accept", fakepypi.TypeV1JSON)
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	var page struct {
		Files []struct {
			URL    string
			Hashes map[string]string
		}
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || len(page.Files) != 1 {
		t.Fatalf("project page: %d %s", rec.Code, rec.Body)
	}
	f := page.Files[0]
	base := contract.RegistryBaseURL("pypi") + "files/"
	if !strings.HasPrefix(f.URL, base) || f.Hashes["sha256"] != whl.SHA256() {
		t.Fatalf("file %+v, want it under %s with sha256 %s untouched", f, base, whl.SHA256())
	}
	rec = r.registry(t, http.MethodGet, "pypi", strings.TrimPrefix(f.URL, contract.RegistryBaseURL("pypi")))
	if rec.Code != http.StatusOK || rec.Body.String() != string(whl.Data) {
		t.Fatalf("wheel: %d, %d bytes, want %d", rec.Code, rec.Body.Len(), len(whl.Data))
	}
	before := len(up.Requests())
	refusedWith(t, r.registry(t, http.MethodPost, "pypi", "legacy/"), "only GET and HEAD")
	refusedWith(t, r.registry(t, http.MethodGet, "pypi", "pypi/demo-dep/json"), "only the simple index")
	if n := len(up.Requests()); n != before {
		t.Fatalf("%d refused requests reached the upstream", n-before)
	}
	for _, q := range up.Requests() {
		if !q.AuthValid {
			t.Fatalf("%s %s reached the upstream without the token", q.Method, q.Path)
		}
	}
}
