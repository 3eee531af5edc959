package registryproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
)

type upstreams map[string]config.Registry

func (u upstreams) Registry(name string) (config.Registry, bool) { r, ok := u[name]; return r, ok }

const upstreamToken = "upstream-secret-0123456789"

var goSetup = []contract.Phase{contract.PhaseSetup}

// rig is a proxy with a cache, in front of a real GOPROXY stand-in that
// requires a token.
type rig struct {
	up    *fakegoproxy.Proxy
	proxy *Proxy
	cache *Cache
	dir   string
	regs  upstreams
}

func newRig(t *testing.T, max int64, mods ...fakegoproxy.Module) *rig {
	t.Helper()
	up := fakegoproxy.New(t, fakegoproxy.Options{Modules: mods, Token: upstreamToken, TLS: true})
	dir := t.TempDir()
	c, err := OpenCache(dir, max, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	regs := upstreams{"go": {Kind: "goproxy", URL: up.URL(), Token: upstreamToken, CAFile: up.CertFile()}}
	return &rig{up: up, cache: c, dir: dir, regs: regs, proxy: New(Options{Upstreams: regs, Cache: c})}
}

// get asks the proxy for rest of the registry name, as the channel's
// route hands it a request an attempt given allowed relayed.
func (r *rig) get(t *testing.T, method, name, rest string, allowed ...contract.Registry) *httptest.ResponseRecorder {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressRegistry, func(w http.ResponseWriter, req *http.Request) {
		r.proxy.Serve(w, req, "a1", allowed, zerolog.Nop())
	})
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(method, contract.EgressRegistryPath("a1", name, rest), nil))
	return rec
}

func module(name string) fakegoproxy.Module {
	return fakegoproxy.Module{Path: "fake.test/" + name, Version: "v1.0.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/" + name), name + ".go": "package " + name + "\n" + strings.Repeat("// padding\n", 200)}}
}

func TestArtifactsComeFromTheUpstreamOnceAndMetadataEveryTime(t *testing.T) {
	r := newRig(t, 0, module("alpha"))
	open := contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup}
	var first []byte
	for i := range 3 {
		for _, p := range []string{"fake.test/alpha/@v/v1.0.0.info", "fake.test/alpha/@v/v1.0.0.mod", "fake.test/alpha/@v/v1.0.0.zip"} {
			rec := r.get(t, http.MethodGet, "go", p, open)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s (round %d): %d %s", p, i, rec.Code, rec.Body)
			}
			if strings.HasSuffix(p, ".zip") {
				if i == 0 {
					first = rec.Body.Bytes()
				} else if !bytes.Equal(rec.Body.Bytes(), first) || rec.Header().Get("Content-Length") != strconv.Itoa(len(first)) {
					t.Fatalf("round %d: the cached zip differs from the upstream's (%d bytes vs %d)", i, rec.Body.Len(), len(first))
				}
			}
		}
	}
	// A HEAD is answered from the cache too, with no body.
	if rec := r.get(t, http.MethodHead, "go", "fake.test/alpha/@v/v1.0.0.zip", open); rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(first)) {
		t.Fatalf("HEAD from the cache: %d, %d bytes, length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
	if got := r.up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"]; got != 1 {
		t.Errorf("zip fetched %d times from the upstream, want 1", got)
	}
	if got := r.up.Fetches(fakegoproxy.KindMod)["fake.test/alpha@v1.0.0"]; got != 1 {
		t.Errorf(".mod fetched %d times from the upstream, want 1", got)
	}
	// A canonical version's .info is as fixed as its .mod (a query's is
	// metadata: policy's tests).
	if got := r.up.Fetches(fakegoproxy.KindInfo)["fake.test/alpha@v1.0.0"]; got != 1 {
		t.Errorf(".info fetched %d times, want 1", got)
	}
	// Metadata comes from the upstream every time.
	for range 2 {
		if rec := r.get(t, http.MethodGet, "go", "fake.test/alpha/@v/list", open); rec.Code != http.StatusOK {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
	}
	if got := r.up.Fetches(fakegoproxy.KindList)["fake.test/alpha"]; got != 2 {
		t.Errorf("list fetched %d times, want 2", got)
	}
	// A new Cache over the same directory (a restarted replica) still
	// holds them.
	c2, err := OpenCache(r.dir, 0, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c2.Stats(); n != 3 {
		t.Fatalf("reopened cache holds %d entries, want 3", n)
	}
}

func TestACachedArtifactIsServedOnlyWhereItsUpstreamIsAllowed(t *testing.T) {
	r := newRig(t, 0, module("alpha"))
	zip := "fake.test/alpha/@v/v1.0.0.zip"
	if rec := r.get(t, http.MethodGet, "go", zip, contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup}); rec.Code != http.StatusOK {
		t.Fatalf("warming: %d", rec.Code)
	}
	// An attempt that was not given the registry is refused, cached or not.
	rec := r.get(t, http.MethodGet, "go", zip, contract.Registry{Name: "other", Kind: "goproxy", Phases: goSetup})
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "no registry named") {
		t.Fatalf("not given the registry: %d %s", rec.Code, rec.Body)
	}
	// Another upstream with the same path shares no entry: keys name the
	// upstream.
	r.regs["mirror"] = config.Registry{Kind: "goproxy", URL: r.up.URL() + "/", Token: upstreamToken, CAFile: r.up.CertFile()}
	if rec := r.get(t, http.MethodGet, "mirror", zip, contract.Registry{Name: "mirror", Kind: "goproxy", Phases: goSetup}); rec.Code != http.StatusOK {
		t.Fatalf("mirror: %d %s", rec.Code, rec.Body)
	}
	if got := r.up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"]; got != 2 {
		t.Fatalf("zip fetched %d times, want 2 (once per upstream)", got)
	}
}

func TestTheCacheForgetsTheLeastRecentlyUsedFirst(t *testing.T) {
	mods := []fakegoproxy.Module{module("a"), module("b"), module("c"), module("d"), module("e")}
	// Room for four zips, not five (and one may take a quarter).
	probe := newRig(t, 0, mods[0])
	probe.get(t, http.MethodGet, "go", "fake.test/a/@v/v1.0.0.zip", contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup})
	_, one := probe.cache.Stats()
	r := newRig(t, 4*one+one/2, mods...)
	open := contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup}
	zip := func(m string) string { return "fake.test/" + m + "/@v/v1.0.0.zip" }
	for _, m := range []string{"a", "b", "c", "d", "a", "e"} { // a is used again before e arrives: b is the oldest
		if rec := r.get(t, http.MethodGet, "go", zip(m), open); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", m, rec.Code)
		}
	}
	if n, bytes := r.cache.Stats(); n != 4 || bytes > r.cache.max {
		t.Fatalf("cache holds %d entries, %d bytes (bound %d), want 4 within the bound", n, bytes, r.cache.max)
	}
	r.up.Reset()
	for _, m := range []string{"a", "c", "d", "e", "b"} {
		r.get(t, http.MethodGet, "go", zip(m), open)
	}
	got := r.up.Fetches(fakegoproxy.KindZip)
	if len(got) != 1 || got["fake.test/b@v1.0.0"] != 1 {
		t.Fatalf("after eviction the upstream served %v, want only b again", got)
	}
}

func TestACutDownloadIsNotKept(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCache(dir, 0, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	key := CacheKey("go", config.Registry{Kind: "goproxy", URL: "https://x.test"}, "m/@v/v1.0.0.zip")
	fill := c.Fill(key, http.Header{"Content-Type": {"application/zip"}}, 100)
	if _, err := io.Copy(fill, bytes.NewReader(make([]byte, 60))); err != nil {
		t.Fatal(err)
	}
	fill.Finish(true) // the copy ended, but short of Content-Length
	if _, ok := c.Open(key); ok {
		t.Fatal("a body shorter than its Content-Length was kept")
	}
	fill = c.Fill(key, http.Header{}, -1)
	if _, err := fill.Write([]byte("whole")); err != nil {
		t.Fatal(err)
	}
	fill.Finish(false) // the client went away
	if _, ok := c.Open(key); ok {
		t.Fatal("a download the client cut was kept")
	}
	left, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(left) != 0 {
		t.Fatalf("temporary files left: %v %v", left, err)
	}
	// A crash's leftovers are cleared at the next open; a damaged entry
	// is dropped, not served.
	if err := os.WriteFile(filepath.Join(dir, "tmp", "fill-crashed"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, key[:2]), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, key[:2], key), []byte{0xff, 0xff, 0xff, 0xff, 'x'}, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = OpenCache(dir, 0, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
		t.Fatalf("a crash's temporary file survived the reopen: %v", left)
	}
	if _, ok := c.Open(key); ok {
		t.Fatal("a damaged entry was served")
	}
	if n, _ := c.Stats(); n != 0 {
		t.Fatalf("the damaged entry is still counted (%d entries)", n)
	}
}
