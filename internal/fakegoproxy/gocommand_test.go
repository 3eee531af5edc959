package fakegoproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is what most tests serve: alpha at two versions, and Beta,
// whose capital is case-encoded on the wire ("fake.test/!beta") and whose
// go.mod requires alpha's older version (which graph pruning lets the go
// command skip: a consumer at alpha v1.1.0 fetches nothing of v1.0.0).
func fixture() []Module {
	alpha := func(version, greeting string) Module {
		return Module{Path: "fake.test/alpha", Version: version, Files: map[string]string{
			"go.mod":   GoMod("fake.test/alpha"),
			"alpha.go": "// Package alpha greets.\npackage alpha\n\n// Greeting is a greeting.\nfunc Greeting() string { return \"" + greeting + "\" }\n",
		}}
	}
	oldAlpha := alpha("v1.0.0", "hello")
	return []Module{
		oldAlpha,
		alpha("v1.1.0", "hello again"),
		{Path: "fake.test/Beta", Version: "v0.2.0", Files: map[string]string{
			"go.mod":  GoMod("fake.test/Beta", oldAlpha),
			"beta.go": "// Package beta greets twice.\npackage beta\n\nimport \"fake.test/alpha\"\n\n// Twice greets twice.\nfunc Twice() string { return alpha.Greeting() + alpha.Greeting() }\n",
			"LICENSE": "public domain\n",
		}},
	}
}

// consumer is a library module that requires alpha v1.1.0 and Beta. A
// library, not a command, so that `go build` compiles no runtime into a
// cold build cache.
var consumer = map[string]string{
	"go.mod": "module consumer.test/app\n\ngo 1.21\n\nrequire (\n\tfake.test/Beta v0.2.0\n\tfake.test/alpha v1.1.0\n)\n",
	"app.go": "// Package app uses both.\npackage app\n\nimport (\n\t\"fake.test/Beta\"\n\t\"fake.test/alpha\"\n)\n\n" +
		"// Greetings greets three times.\nfunc Greetings() string { return alpha.Greeting() + beta.Twice() }\n",
}

// goWorld is a go command confined to temp dirs and the proxy: its own
// HOME, GOPATH (so module cache and checksum database state), build cache
// and environment, no GOPRIVATE/GONOSUMDB, GOSUMDB on with the proxy's
// database, and no route to anything but the proxy on loopback (GOPROXY
// has no "direct" after it, and the database's name is under .example).
type goWorld struct {
	dir string // the consumer module
	env []string
}

func newGoWorld(t *testing.T, p *Proxy, files map[string]string, extraEnv ...string) *goWorld {
	t.Helper()
	root := t.TempDir()
	w := &goWorld{dir: filepath.Join(root, "app")}
	for name, content := range files {
		path := filepath.Join(w.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, verifierKey := p.SumDB()
	w.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(root, "home"),
		"GOPATH=" + filepath.Join(root, "gopath"),
		"GOMODCACHE=" + filepath.Join(root, "gopath", "pkg", "mod"),
		"GOCACHE=" + filepath.Join(root, "gocache"),
		"GOENV=off",
		"GOTOOLCHAIN=local",
		"GOFLAGS=-mod=mod -modcacherw", // -modcacherw: t.TempDir can remove the cache
		"GOPROXY=" + p.URL(),
		"GOSUMDB=" + verifierKey,
		"GONOSUMDB=",
		"GONOPROXY=",
		"GOPRIVATE=",
		"GOINSECURE=",
		"GOTELEMETRY=off",
		"CGO_ENABLED=0",
	}, extraEnv...)
	return w
}

// run runs the go command in the consumer and returns its combined output.
func (w *goWorld) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = w.dir
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *goWorld) mustRun(t *testing.T, args ...string) {
	t.Helper()
	if out, err := w.run(t, args...); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func logText(p *Proxy) string {
	var b strings.Builder
	for _, r := range p.Requests() {
		fmt.Fprintf(&b, "%s %s %d %s %dB %s auth=%s/%v\n", r.Method, r.Path, r.Status, r.Kind, r.Bytes, r.Duration.Round(time.Millisecond), r.AuthScheme, r.Authenticated)
	}
	return b.String()
}

func requireGoCommand(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed on PATH (make test puts Go 1.26 there): %v", err)
	}
}

func TestGoDownloadsAndBuildsVerifiedThroughTheProxy(t *testing.T) {
	requireGoCommand(t)
	const latency = 20 * time.Millisecond
	p := New(t, Options{Modules: fixture(), Latency: latency})
	w := newGoWorld(t, p, consumer)

	w.mustRun(t, "mod", "download")
	w.mustRun(t, "build", "./...")
	t.Logf("requests:\n%s", logText(p))

	sum, err := os.ReadFile(filepath.Join(w.dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		p.GoSum("fake.test/alpha", "v1.1.0"),
		p.GoSum("fake.test/Beta", "v0.2.0"),
	} {
		if line == "" || !strings.Contains(string(sum), line) {
			t.Errorf("go.sum lacks the checksum database's\n%s\ngo.sum:\n%s", line, sum)
		}
	}

	wantZips := map[string]int{"fake.test/alpha@v1.1.0": 1, "fake.test/Beta@v0.2.0": 1}
	if got := p.Fetches(KindZip); !equalCounts(got, wantZips) {
		t.Errorf("zips fetched %v, want %v", got, wantZips)
	}
	wantMods := map[string]int{"fake.test/alpha@v1.1.0": 1, "fake.test/Beta@v0.2.0": 1}
	if got := p.Fetches(KindMod); !equalCounts(got, wantMods) {
		t.Errorf(".mod files fetched %v, want %v", got, wantMods)
	}
	if got := p.Fetches(KindSumDBSupported); len(got) == 0 {
		t.Error("the go command never asked whether the proxy serves the checksum database")
	}
	lookups := p.Fetches(KindSumDBLookup)
	for _, m := range []string{"fake.test/alpha@v1.1.0", "fake.test/Beta@v0.2.0"} {
		if lookups[m] == 0 {
			t.Errorf("no checksum database lookup of %s (lookups %v)", m, lookups)
		}
	}
	if len(p.Fetches(KindSumDBTile)) == 0 {
		t.Error("the go command fetched no tile: it did not check the record's inclusion in the tree")
	}
	var sawEncoded bool
	for _, r := range p.Requests() {
		if r.Status != 200 {
			t.Errorf("%s %s answered %d", r.Method, r.Path, r.Status)
		}
		if r.Duration < latency {
			t.Errorf("%s took %v, under the %v latency", r.Path, r.Duration, latency)
		}
		sawEncoded = sawEncoded || r.Path == "/fake.test/!beta/@v/v0.2.0.zip"
	}
	if !sawEncoded {
		t.Error("no request for Beta's zip by its case-encoded path")
	}

	// A warm module cache: the same download fetches no zip or .mod again.
	p.Reset()
	w.mustRun(t, "mod", "download")
	w.mustRun(t, "build", "./...")
	if zips, mods := p.Fetches(KindZip), p.Fetches(KindMod); len(zips)+len(mods) > 0 {
		t.Errorf("a warm cache fetched zips %v and .mod files %v again", zips, mods)
	}
	t.Logf("warm requests:\n%s", logText(p))
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestGoRefusesAZipTheChecksumDatabaseDidNotRecord(t *testing.T) {
	requireGoCommand(t)
	mods := fixture()
	mods[2].TamperZip = true // Beta
	p := New(t, Options{Modules: mods})
	w := newGoWorld(t, p, consumer)

	out, err := w.run(t, "mod", "download")
	if err == nil {
		t.Fatalf("go mod download accepted a tampered zip:\n%s", out)
	}
	name, _ := p.SumDB()
	for _, want := range []string{"fake.test/Beta@v0.2.0: verifying module: checksum mismatch", "SECURITY ERROR", name + ": h1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if p.Fetches(KindSumDBLookup)["fake.test/Beta@v0.2.0"] == 0 {
		t.Errorf("Beta was not looked up in the checksum database:\n%s", logText(p))
	}
}

// The go command sends credentials only over HTTPS, from GOAUTH: netrc by
// default (Basic auth; a machine is matched by host:port), or a command
// that prints headers for URL prefixes (here a Bearer token). `go help
// goauth` in Go 1.24 and later.
func TestGoAuthenticatesWithTheToken(t *testing.T) {
	requireGoCommand(t)
	const token = "s3cret-token"
	p := New(t, Options{Modules: fixture(), Token: token, TLS: true})
	u, err := url.Parse(p.URL())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	netrc := func(password string) string {
		return writeFile("netrc-"+password, fmt.Sprintf("machine %s\n\tlogin go\n\tpassword %s\n", u.Host, password), 0o600)
	}
	bearerCommand := writeFile("goauth-bearer.sh", fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n\\nAuthorization: Bearer %%s\\n\\n' %q %q\n", p.URL()+"/", token), 0o755)

	for _, tc := range []struct {
		name   string
		env    []string
		ok     bool
		scheme string
	}{
		{"netrc with the token", []string{"NETRC=" + netrc(token)}, true, "Basic"},
		{"GOAUTH command with a bearer token", []string{"GOAUTH=" + bearerCommand}, true, "Bearer"},
		{"netrc with a wrong token", []string{"NETRC=" + netrc("wrong")}, false, "Basic"},
		{"no credential", []string{"NETRC=" + writeFile("netrc-empty", "", 0o600)}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Reset()
			w := newGoWorld(t, p, consumer, append([]string{"SSL_CERT_FILE=" + p.CertFile()}, tc.env...)...)
			out, err := w.run(t, "mod", "download")
			reqs := p.Requests()
			if len(reqs) == 0 {
				t.Fatalf("no request reached the proxy:\n%s", out)
			}
			if tc.ok != (err == nil) {
				t.Fatalf("go mod download: err %v, want ok=%v\n%s\nrequests:\n%s", err, tc.ok, out, logText(p))
			}
			for _, r := range reqs {
				if r.AuthScheme != tc.scheme || r.Authenticated != tc.ok {
					t.Errorf("%s: auth %q/%v, want %q/%v", r.Path, r.AuthScheme, r.Authenticated, tc.scheme, tc.ok)
				}
				if want := map[bool]int{true: 200, false: 401}[tc.ok]; r.Status != want {
					t.Errorf("%s: status %d, want %d", r.Path, r.Status, want)
				}
			}
			if !tc.ok && !strings.Contains(out, "401 Unauthorized") {
				t.Errorf("the go command's failure does not name the 401:\n%s", out)
			}
			if tc.ok && len(p.Fetches(KindSumDBLookup)) == 0 {
				t.Errorf("no authenticated checksum database lookup:\n%s", logText(p))
			}
		})
	}
}

// Graph is what the benchmark downloads: 30 modules, each
// importing the next two. A consumer whose go.mod lists them all (as a
// tidy go.mod does) downloads and builds every one, each zip once.
func TestGoBuildsAGraph(t *testing.T) {
	requireGoCommand(t)
	graph := Graph("graph.test", 30)
	p := New(t, Options{Modules: graph})
	w := newGoWorld(t, p, map[string]string{
		"go.mod": GoMod("consumer.test/graph", graph...),
		"app.go": "// Package app builds the graph.\npackage app\n\nimport \"graph.test/m00\"\n\n// Names names the graph.\nfunc Names() string { return m00.Name() }\n",
	})
	w.mustRun(t, "mod", "download")
	w.mustRun(t, "build", "./...")
	zips := p.Fetches(KindZip)
	for _, m := range graph {
		if zips[m.String()] != 1 {
			t.Errorf("%s: zip fetched %d times, want 1", m, zips[m.String()])
		}
	}
	if len(zips) != len(graph) {
		t.Errorf("zips fetched %v, want the %d of the graph", zips, len(graph))
	}
}

// The go command follows a zip's 302 to the storage on its own, as it
// does proxy.golang.org's to storage.googleapis.com, and verifies what
// it got there against the checksum database.
func TestGoFollowsZipRedirectsToStorage(t *testing.T) {
	requireGoCommand(t)
	p := New(t, Options{Modules: fixture(), RedirectZips: true})
	w := newGoWorld(t, p, consumer)
	w.mustRun(t, "mod", "download")
	want := map[string]int{"fake.test/alpha@v1.1.0": 1, "fake.test/Beta@v0.2.0": 1}
	if got := p.Fetches(KindStorageZip); !equalCounts(got, want) {
		t.Errorf("zips fetched from the storage %v, want %v:\n%s", got, want, logText(p))
	}
	for _, r := range p.Requests() {
		if r.Kind == KindZip && r.Status != http.StatusFound {
			t.Errorf("%s answered %d, want 302", r.Path, r.Status)
		}
	}
}
