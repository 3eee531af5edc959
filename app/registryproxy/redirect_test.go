package registryproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
)

// front is what a session's go command reaches: a GOPROXY base whose
// every path goes to the proxy as the channel's registry route hands it
// an attempt's request (the supervisor's relay, without the sandbox).
func front(t *testing.T, p *Proxy, name string, allowed ...contract.Registry) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressRegistry, func(w http.ResponseWriter, req *http.Request) {
		p.Serve(w, req, "a1", allowed, zerolog.New(zerolog.NewTestWriter(t)))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := url.Parse(contract.EgressRegistryPath("a1", name, r.URL.EscapedPath()))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		relayed := r.Clone(r.Context())
		relayed.URL.Path, relayed.URL.RawPath = u.Path, u.RawPath
		mux.ServeHTTP(w, relayed)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A session's `go mod download` through the egress, against a proxy that
// answers every zip as proxy.golang.org does: a 302 to a signed URL on a
// storage host of another domain (here a second listener on 127.0.0.1).
// The egress follows it because the registry's redirect_hosts name that
// host, without the upstream's token; go.sum gets the checksum
// database's lines, so the bytes are the honest ones.
func TestGoDownloadsThroughTheEgressWhenZipsRedirectToStorage(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed on PATH: %v", err)
	}
	alpha := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/alpha"), "alpha.go": "// Package alpha greets.\npackage alpha\n\n// Hello greets.\nconst Hello = \"hello\"\n"}}
	up := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{alpha}, Token: upstreamToken, TLS: true, RedirectZips: true})
	storage, err := url.Parse(up.StorageURL())
	if err != nil {
		t.Fatal(err)
	}
	sumName, verifierKey := up.SumDB()
	regs := upstreams{"go": {Kind: "goproxy", URL: up.URL(), Token: upstreamToken, CAFile: up.CertFile(), RedirectHosts: []string{storage.Host}, SumDB: verifierKey}}
	p := New(Options{Upstreams: regs, RedirectsReachLoopback: true})
	srv := front(t, p, "go", contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup, SumDB: verifierKey})

	root := t.TempDir()
	dir := filepath.Join(root, "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module consumer.test/app\n\ngo 1.21\n\nrequire fake.test/alpha v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "fake.test/alpha")
	cmd.Dir = dir
	// A go command confined to temp dirs and the egress: GOPROXY with no
	// "direct", and a checksum database only the proxy serves.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"),
		"GOPATH=" + filepath.Join(root, "gopath"),
		"GOMODCACHE=" + filepath.Join(root, "gopath", "pkg", "mod"),
		"GOCACHE=" + filepath.Join(root, "gocache"),
		"GOENV=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY=" + srv.URL, "GOSUMDB=" + verifierKey,
		"GONOSUMDB=", "GONOPROXY=", "GOPRIVATE=", "GOINSECURE=", "GOTELEMETRY=off",
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod download through the egress: %v\n%s\nupstream saw:\n%s", err, out, upstreamLog(up))
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil || !strings.Contains(string(sum), up.GoSum(alpha.Path, alpha.Version)) {
		t.Fatalf("go.sum lacks %s's lines (%v):\n%s", sumName, err, sum)
	}
	var redirected, fromStorage int
	for _, r := range up.Requests() {
		switch r.Kind {
		case fakegoproxy.KindZip:
			redirected++
			if r.Status != http.StatusFound || !r.Authenticated {
				t.Errorf("zip request %s: %d, authenticated %v; want a 302 to the token-bearing request", r.Path, r.Status, r.Authenticated)
			}
		case fakegoproxy.KindStorageZip:
			fromStorage++
			if r.Status != http.StatusOK || r.AuthScheme != "" {
				t.Errorf("storage request %s: %d with Authorization %q; want a 200 with none", r.Path, r.Status, r.AuthScheme)
			}
		default:
			if !r.Authenticated {
				t.Errorf("%s reached the upstream without its token", r.Path)
			}
		}
	}
	if redirected != 1 || fromStorage != 1 {
		t.Errorf("%d zip requests, %d storage fetches; want one of each:\n%s", redirected, fromStorage, upstreamLog(up))
	}
}

func upstreamLog(up *fakegoproxy.Proxy) string {
	var b strings.Builder
	for _, r := range up.Requests() {
		fmt.Fprintf(&b, "%s %s %s %d auth=%q\n", r.Method, r.Path, r.Kind, r.Status, r.AuthScheme)
	}
	return b.String()
}

// `go get m@main` or `m@<commit>` asks the proxy to resolve the revision
// ($module/@v/main.info): the egress passes it on as metadata, and the
// upstream's answer (here its 404, as it knows no branches) comes back.
func TestRevisionQueriesReachTheUpstream(t *testing.T) {
	r := newRig(t, 0, module("alpha"))
	open := contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup}
	for _, rev := range []string{"main", "0123456789ab", "my_feature-!branch"} {
		r.up.Reset()
		rec := r.get(t, http.MethodGet, "go", "fake.test/alpha/@v/"+rev+".info", open)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "unknown revision") {
			t.Errorf("%s.info: %d %s, want the upstream's 404", rev, rec.Code, rec.Body)
		}
		if reqs := r.up.Requests(); len(reqs) != 1 || reqs[0].Kind != fakegoproxy.KindInfo {
			t.Errorf("%s.info: the upstream saw %+v", rev, reqs)
		}
	}
}

// redirectRig is an upstream that redirects as a case tells it, and a
// storage host that records what reached it.
type redirectRig struct {
	upstream, storage *httptest.Server
	mu                sync.Mutex
	upstreamHits      int
	storageAuth       []string // the Authorization each storage request carried
}

func newRedirectRig(t *testing.T, location func(storage *url.URL, path string) string) *redirectRig {
	t.Helper()
	rr := &redirectRig{}
	rr.storage = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr.mu.Lock()
		rr.storageAuth = append(rr.storageAuth, r.Header.Get("Authorization"))
		rr.mu.Unlock()
		_, _ = io.WriteString(w, "zip bytes") // the client may be gone; the test reads what it got
	}))
	t.Cleanup(rr.storage.Close)
	su, err := url.Parse(rr.storage.URL)
	if err != nil {
		t.Fatal(err)
	}
	rr.upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr.mu.Lock()
		rr.upstreamHits++
		rr.mu.Unlock()
		http.Redirect(w, r, location(su, r.URL.Path), http.StatusFound)
	}))
	t.Cleanup(rr.upstream.Close)
	return rr
}

// Redirects the egress does not follow answer 502 and never reach the
// host they lead to: one redirect_hosts does not list; metadata to a
// listed host; a listed host on a loopback address, by its IP or by a
// name that resolves there, without the test-only setting; and a chain
// past the bound.
func TestRegistryRedirectsTheEgressRefuses(t *testing.T) {
	const zip = "fake.test/alpha/@v/v1.0.0.zip"
	toStorage := func(s *url.URL, _ string) string { return s.String() + "/bucket/obj.zip?Expires=1&Signature=x" }
	toLocalhost := func(s *url.URL, _ string) string { return "http://localhost:" + s.Port() + "/bucket/obj.zip" }
	cases := []struct {
		name          string
		location      func(s *url.URL, path string) string
		listed        func(s *url.URL) []string
		reachLoopback bool
		path          string
		want          int
		saying        string
		storageHits   int
		upstreamHits  int
	}{
		{"a listed host, loopback allowed for the test", toStorage, func(s *url.URL) []string { return []string{s.Host} }, true, zip, http.StatusOK, "zip bytes", 1, 1},
		{"a host no list names", toStorage, func(*url.URL) []string { return nil }, true, zip, http.StatusBadGateway, "neither this registry's url nor its redirect_hosts name", 0, 1},
		{"metadata to a listed host", toStorage, func(s *url.URL) []string { return []string{s.Host} }, true, "fake.test/alpha/@v/list", http.StatusBadGateway, "only package files", 0, 1},
		{"a .mod to a listed host", toStorage, func(s *url.URL) []string { return []string{s.Host} }, true, "fake.test/alpha/@v/v1.0.0.mod", http.StatusBadGateway, "only package files", 0, 1},
		{"a listed host on loopback", toStorage, func(s *url.URL) []string { return []string{s.Host} }, false, zip, http.StatusBadGateway, "never reaches (loopback", 0, 1},
		{"a listed name that resolves to loopback", toLocalhost, func(s *url.URL) []string { return []string{"localhost:" + s.Port()} }, false, zip, http.StatusBadGateway, "never reaches (loopback", 0, 1},
		{"a chain past the bound", func(_ *url.URL, path string) string { return path }, func(*url.URL) []string { return nil }, true, zip, http.StatusBadGateway, "more than 5 redirects", 0, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rr := newRedirectRig(t, c.location)
			su, err := url.Parse(rr.storage.URL)
			if err != nil {
				t.Fatal(err)
			}
			regs := upstreams{"go": {Kind: "goproxy", URL: rr.upstream.URL, Token: upstreamToken, RedirectHosts: c.listed(su)}}
			r := &rig{proxy: New(Options{Upstreams: regs, RedirectsReachLoopback: c.reachLoopback})}
			rec := r.get(t, http.MethodGet, "go", c.path, contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup})
			if rec.Code != c.want || !strings.Contains(rec.Body.String(), c.saying) {
				t.Fatalf("%d %s, want %d saying %q", rec.Code, rec.Body, c.want, c.saying)
			}
			if strings.Contains(rec.Body.String(), "Signature=") || strings.Contains(rec.Body.String(), upstreamToken) {
				t.Fatalf("the answer carries the signed URL or the token: %s", rec.Body)
			}
			rr.mu.Lock()
			defer rr.mu.Unlock()
			if len(rr.storageAuth) != c.storageHits || rr.upstreamHits != c.upstreamHits {
				t.Fatalf("storage reached %d times, upstream %d; want %d and %d", len(rr.storageAuth), rr.upstreamHits, c.storageHits, c.upstreamHits)
			}
			for _, a := range rr.storageAuth {
				if a != "" {
					t.Fatalf("the storage got an Authorization header %q", a)
				}
			}
		})
	}
}
