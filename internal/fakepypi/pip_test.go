package fakepypi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// python is the real pip, in a venv of its own under the test's temp dir,
// with every config and cache pointed at temp dirs and no proxy, so that
// nothing but the loopback index is reached.
//
// Making a venv with pip (ensurepip) takes seconds, so there is one, and
// each case installs into a fresh venv without pip that this one's pip
// drives with --python (pip 22.3 and later).
type python struct {
	dir string   // the temp dir everything is under
	pip string   // the interpreter of the venv that has pip
	env []string // the whole environment of every command
	// interpreter is the real python3 (not a pyenv shim, which needs the
	// caller's HOME).
	interpreter string
}

const commandTimeout = 90 * time.Second

func newPython(t *testing.T) *python {
	t.Helper()
	shim, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not on PATH (%v): install it, and python3-venv with .ci/ensure-python-venv", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, shim, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("%s: %v", shim, err)
	}
	dir := t.TempDir()
	p := &python{dir: dir, interpreter: strings.TrimSpace(string(out))}
	for _, d := range []string{"home", "tmp", "xdg-cache"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	venv := filepath.Join(dir, "pip-venv")
	p.env = []string{
		"PATH=" + filepath.Join(venv, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(dir, "home"),
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "xdg-cache"),
		"LANG=C.UTF-8",
		"PYTHONNOUSERSITE=1",
		"PIP_CONFIG_FILE=" + os.DevNull,
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_NO_INPUT=1",
		"PIP_KEYRING_PROVIDER=disabled",
		"PIP_NO_COLOR=1",
	}
	if out, err := p.run(t, p.interpreter, "-m", "venv", venv); err != nil {
		t.Fatalf("python3 -m venv failed (on Debian's python3, run .ci/ensure-python-venv): %v\n%s", err, out)
	}
	p.pip = filepath.Join(venv, "bin", "python")
	return p
}

// run runs a command in the test's environment and returns its combined
// output.
func (p *python) run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = p.env
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// target makes a fresh venv without pip for one install.
func (p *python) target(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(p.dir, "target-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.run(t, p.interpreter, "-m", "venv", "--without-pip", dir); err != nil {
		t.Fatalf("python3 -m venv --without-pip: %v\n%s", err, out)
	}
	return filepath.Join(dir, "bin", "python")
}

// install runs pip install into target's venv with args after "install".
func (p *python) install(t *testing.T, target string, args ...string) (string, error) {
	t.Helper()
	return p.run(t, p.pip, append([]string{"-m", "pip", "--python", target, "install"}, args...)...)
}

// demoFiles are demo-app 1.0, which needs demo-dep>=1.0, and demo-dep
// 1.0 and 1.1, in the order they are added.
func demoFiles(t *testing.T) []File {
	t.Helper()
	var files []File
	for _, w := range []Wheel{
		{Name: "demo-dep", Version: "1.0", Source: "VALUE = 'old'\n"},
		{Name: "demo-dep", Version: "1.1", Source: "VALUE = 'dep 1.1'\n", RequiresPython: ">=3.8"},
		{Name: "Demo_App", Version: "1.0", Source: "import demo_dep\n\ndef greet():\n    return 'hello from ' + demo_dep.VALUE\n",
			Requires: []string{"demo-dep>=1.0"}},
	} {
		f, err := w.Build()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// addAll adds files to x.
func addAll(t *testing.T, x *Index, files []File) {
	t.Helper()
	for _, f := range files {
		if err := x.Add(f); err != nil {
			t.Fatal(err)
		}
	}
}

// demoIndex serves demoFiles on its own server; the files are returned by
// filename.
func demoIndex(t *testing.T, opts ...Option) (*Index, map[string]File) {
	t.Helper()
	x := Serve(t, opts...)
	files := demoFiles(t)
	addAll(t, x, files)
	byName := map[string]File{}
	for _, f := range files {
		byName[f.Filename] = f
	}
	return x, byName
}

const (
	appWheel   = "demo_app-1.0-py3-none-any.whl"
	depWheel   = "demo_dep-1.1-py3-none-any.whl"
	oldWheel   = "demo_dep-1.0-py3-none-any.whl"
	demoToken  = "pypi-AgEIcHlwaS5vcmcfake"
	latency    = 30 * time.Millisecond
	importDemo = "import demo_app; print(demo_app.greet())"
)

// hostPort is the index's host:port, as --trusted-host takes it.
func hostPort(x *Index) string { return strings.TrimPrefix(x.URL(), "http://") }

// paths lists the log's requests as "METHOD path status".
func paths(reqs []Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
	}
	return out
}

func TestPip(t *testing.T) {
	py := newPython(t)

	t.Run("installs a package and its dependency, as JSON", func(t *testing.T) {
		x, _ := demoIndex(t, WithToken(demoToken), WithLatency(latency))
		target := py.target(t)
		out, err := py.install(t, target, "--index-url", x.SimpleURL(demoToken), "--no-cache-dir", "demo-app")
		if err != nil || !strings.Contains(out, "Successfully installed demo-app-1.0 demo-dep-1.1") {
			t.Fatalf("pip install: %v\n%s", err, out)
		}
		got, err := py.run(t, target, "-c", importDemo)
		if err != nil || strings.TrimSpace(got) != "hello from dep 1.1" {
			t.Fatalf("import demo_app: %v\n%s", err, got)
		}

		reqs := x.Requests()
		want := []string{
			"GET /files/demo-app/" + appWheel + " 200",
			"GET /files/demo-dep/" + depWheel + " 200",
			"GET /simple/demo-app/ 200",
			"GET /simple/demo-dep/ 200",
		}
		if got := slices.Sorted(slices.Values(paths(reqs))); !slices.Equal(got, want) {
			t.Errorf("requests = %q, want %q", got, want)
		}
		for _, r := range reqs {
			if !r.AuthValid || r.AuthUser != TokenUser || r.AuthScheme != "Basic" {
				t.Errorf("%s %s: auth %s %q valid=%v; pip sends the index URL's credentials on every request to its host", r.Method, r.Path, r.AuthScheme, r.AuthUser, r.AuthValid)
			}
			if !strings.HasPrefix(r.UserAgent, "pip/") {
				t.Errorf("%s: User-Agent %q is not pip's", r.Path, r.UserAgent)
			}
			if r.Duration < latency {
				t.Errorf("%s took %v, less than the latency %v", r.Path, r.Duration, latency)
			}
			if r.Route == RouteProject {
				// pip asks for JSON first, HTML as a fallback.
				if !strings.HasPrefix(r.Accept, TypeV1JSON) || !strings.Contains(r.Accept, TypeHTML) {
					t.Errorf("%s: Accept %q; want PEP 691 JSON first", r.Path, r.Accept)
				}
				if r.ContentType != TypeV1JSON {
					t.Errorf("%s: served %q, want %s", r.Path, r.ContentType, TypeV1JSON)
				}
			}
		}
		if d := x.Downloads(); !maps.Equal(d, map[string]int{appWheel: 1, depWheel: 1}) {
			t.Errorf("downloads = %v; want each wheel once and not demo-dep 1.0", d)
		}
	})

	t.Run("--require-hashes passes, and a tampered file fails", func(t *testing.T) {
		x, files := demoIndex(t, WithToken(demoToken))
		reqs := filepath.Join(t.TempDir(), "requirements.txt")
		pins := fmt.Sprintf("demo-app==1.0 --hash=sha256:%s\ndemo-dep==1.1 --hash=sha256:%s\n",
			files[appWheel].SHA256(), files[depWheel].SHA256())
		if err := os.WriteFile(reqs, []byte(pins), 0o644); err != nil {
			t.Fatal(err)
		}
		target := py.target(t)
		out, err := py.install(t, target, "--index-url", x.SimpleURL(demoToken), "--no-cache-dir", "--require-hashes", "-r", reqs)
		if err != nil {
			t.Fatalf("pip install --require-hashes: %v\n%s", err, out)
		}
		if got, err := py.run(t, target, "-c", importDemo); err != nil {
			t.Fatalf("import demo_app: %v\n%s", err, got)
		}

		if err := x.Tamper(depWheel, []byte("not the wheel that was hashed")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"--require-hashes", "-r", reqs},
			// Without a requirements file the index's #sha256 is
			// what pip checks: the hash a proxy must pass untouched.
			{"demo-app"},
		} {
			args = append([]string{"--index-url", x.SimpleURL(demoToken), "--no-cache-dir"}, args...)
			out, err := py.install(t, py.target(t), args...)
			if err == nil {
				t.Fatalf("pip install %q of a tampered file succeeded:\n%s", args, out)
			}
			for _, want := range []string{"THESE PACKAGES DO NOT MATCH THE HASHES", "Expected sha256 " + files[depWheel].SHA256()} {
				if !strings.Contains(out, want) {
					t.Errorf("pip install %q: output lacks %q:\n%s", args, want, out)
				}
			}
		}
		if d := x.Downloads(); d[depWheel] != 3 {
			t.Errorf("downloads = %v; want %s served 3 times (once good, twice tampered)", d, depWheel)
		}
	})

	t.Run("a wrong token is a 401 pip reports", func(t *testing.T) {
		// (A missing one is the same 401, without Authorization: the
		// HTTP-level tests cover it.)
		x, _ := demoIndex(t, WithToken(demoToken))
		// -vv: pip logs a page it could not fetch at debug level, then
		// fails as if the project had no versions.
		out, err := py.install(t, py.target(t), "-vv", "--index-url", x.SimpleURL("pypi-wrong"), "--no-cache-dir", "demo-app")
		if err == nil {
			t.Fatalf("pip install with a wrong token succeeded:\n%s", out)
		}
		for _, want := range []string{"401 Client Error: Unauthorized", "No matching distribution found for demo-app"} {
			if !strings.Contains(out, want) {
				t.Errorf("pip's output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "pypi-wrong") {
			t.Errorf("pip printed the token:\n%s", out)
		}
		reqs := x.Requests()
		if got, want := paths(reqs), []string{"GET /simple/demo-app/ 401"}; !slices.Equal(got, want) {
			t.Fatalf("requests = %q, want %q", got, want)
		}
		if r := reqs[0]; !r.AuthPresent || r.AuthUser != TokenUser || r.AuthValid {
			t.Errorf("logged auth present=%v user=%q valid=%v", r.AuthPresent, r.AuthUser, r.AuthValid)
		}
		if d := x.Downloads(); len(d) != 0 {
			t.Errorf("downloads = %v, want none", d)
		}
	})

	t.Run("a token from a netrc", func(t *testing.T) {
		x, _ := demoIndex(t, WithToken(demoToken))
		// pip (through requests) looks the index's host up in
		// $HOME/.netrc when its URL carries no credentials.
		netrc := filepath.Join(py.dir, "home", ".netrc")
		entry := fmt.Sprintf("machine 127.0.0.1 login %s password %s\n", TokenUser, demoToken)
		if err := os.WriteFile(netrc, []byte(entry), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.Remove(netrc); err != nil {
				t.Error(err)
			}
		})
		if out, err := py.install(t, py.target(t), "--index-url", x.SimpleURL(""), "--no-cache-dir", "demo-app"); err != nil {
			t.Fatalf("pip install with a netrc: %v\n%s", err, out)
		}
		for _, r := range x.Requests() {
			if !r.AuthValid || r.Status != 200 {
				t.Errorf("%s %s: %d, auth valid=%v", r.Method, r.Path, r.Status, r.AuthValid)
			}
		}
		if d := x.Downloads(); !maps.Equal(d, map[string]int{appWheel: 1, depWheel: 1}) {
			t.Errorf("downloads = %v", d)
		}
	})

	t.Run("the HTML form, when the client is not offered JSON", func(t *testing.T) {
		// A mounted index, behind a server that takes JSON out of
		// pip's Accept: the pages are then PEP 503 HTML, and the file
		// links follow the request's Host.
		mounted := New(WithToken(demoToken))
		addAll(t, mounted, demoFiles(t))
		htmlOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("Accept", "text/html")
			mounted.ServeHTTP(w, r)
		}))
		t.Cleanup(htmlOnly.Close)
		index := strings.Replace(htmlOnly.URL, "http://", "http://"+TokenUser+":"+demoToken+"@", 1) + "/simple/"
		target := py.target(t)
		out, err := py.install(t, target, "--index-url", index, "--no-cache-dir", "demo-app")
		if err != nil {
			t.Fatalf("pip install from HTML pages: %v\n%s", err, out)
		}
		if got, err := py.run(t, target, "-c", importDemo); err != nil || strings.TrimSpace(got) != "hello from dep 1.1" {
			t.Fatalf("import demo_app: %v\n%s", err, got)
		}
		pages := 0
		for _, r := range mounted.Requests() {
			if r.Route == RouteProject {
				pages++
				if r.ContentType != TypeHTML+"; charset=utf-8" {
					t.Errorf("%s: served %q, want HTML", r.Path, r.ContentType)
				}
			}
		}
		if pages != 2 {
			t.Errorf("%d pages served, want 2: %q", pages, paths(mounted.Requests()))
		}
		if d := mounted.Downloads(); !maps.Equal(d, map[string]int{appWheel: 1, depWheel: 1}) {
			t.Errorf("downloads = %v", d)
		}
	})

	t.Run("metadata files (PEP 658/714)", func(t *testing.T) {
		x, _ := demoIndex(t, WithToken(demoToken), WithMetadataFiles())
		out, err := py.install(t, py.target(t), "--index-url", x.SimpleURL(demoToken), "--no-cache-dir", "demo-app")
		if err != nil {
			t.Fatalf("pip install: %v\n%s", err, out)
		}
		// pip resolves from the .metadata files, then fetches the
		// wheels it installs.
		want := []string{
			"GET /simple/demo-app/ 200",
			"GET /files/demo-app/" + appWheel + ".metadata 200",
			"GET /simple/demo-dep/ 200",
			"GET /files/demo-dep/" + depWheel + ".metadata 200",
			"GET /files/demo-app/" + appWheel + " 200",
			"GET /files/demo-dep/" + depWheel + " 200",
		}
		if got := paths(x.Requests()); !slices.Equal(got, want) {
			t.Errorf("requests = %q\nwant %q", got, want)
		}
	})

	t.Run("a warm cache fetches no wheel again", func(t *testing.T) {
		x, _ := demoIndex(t, WithToken(demoToken))
		cache := filepath.Join(t.TempDir(), "pip-cache")
		plain := []string{"--index-url", x.SimpleURL(demoToken), "--cache-dir", cache, "demo-app"}
		trusted := append([]string{"--trusted-host", hostPort(x)}, plain...)
		if out, err := py.install(t, py.target(t), trusted...); err != nil {
			t.Fatalf("pip install, cold cache: %v\n%s", err, out)
		}
		if d := x.Downloads(); !maps.Equal(d, map[string]int{appWheel: 1, depWheel: 1}) {
			t.Fatalf("cold: downloads = %v", d)
		}

		// Over plain HTTP, pip uses no cache unless the host is a
		// --trusted-host (its http:// adapter has none): the same warm
		// cache, and every wheel is downloaded again.
		if out, err := py.install(t, py.target(t), plain...); err != nil {
			t.Fatalf("pip install, untrusted host: %v\n%s", err, out)
		}
		if d := x.Downloads(); !maps.Equal(d, map[string]int{appWheel: 2, depWheel: 2}) {
			t.Errorf("untrusted http host: downloads = %v; pip 23.2 was seen to fetch each wheel again", d)
		}

		// With the host trusted, the warm install asks again for each
		// page (pip sends Cache-Control: max-age=0 for index pages),
		// revalidating with If-None-Match, and is answered 304; the
		// wheels come from the cache with no request at all.
		before := len(x.Requests())
		target := py.target(t)
		out, err := py.install(t, target, trusted...)
		if err != nil {
			t.Fatalf("pip install, warm cache: %v\n%s", err, out)
		}
		if !strings.Contains(out, "Using cached") {
			t.Errorf("pip did not say it used its cache:\n%s", out)
		}
		if got, err := py.run(t, target, "-c", importDemo); err != nil {
			t.Fatalf("import demo_app: %v\n%s", err, got)
		}
		warm := x.Requests()[before:]
		if got, want := paths(warm), []string{"GET /simple/demo-app/ 304", "GET /simple/demo-dep/ 304"}; !slices.Equal(got, want) {
			t.Errorf("warm requests = %q, want %q", got, want)
		}
		for _, r := range warm {
			if r.IfNoneMatch == "" {
				t.Errorf("%s: no If-None-Match", r.Path)
			}
		}
		if d := x.Downloads(); !maps.Equal(d, map[string]int{appWheel: 2, depWheel: 2}) {
			t.Errorf("downloads = %v; the warm install fetched a wheel", d)
		}
	})
}
