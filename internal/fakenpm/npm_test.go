package fakenpm

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// npmClient runs the real npm CLI against a registry with everything it
// keeps (config, cache, logs, HOME) in temp dirs and no proxy, so that
// nothing but loopback is reached.
type npmClient struct {
	t     *testing.T
	home  string
	cache string
	reg   *Registry
}

// newNPMClient makes a client whose user config holds token for the
// registry ("" for none) and whose cache is empty.
func newNPMClient(t *testing.T, reg *Registry, token string) *npmClient {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is needed (Debian's nodejs and npm): %v", err)
	}
	c := &npmClient{t: t, home: t.TempDir(), cache: t.TempDir(), reg: reg}
	npmrc := ""
	if token != "" {
		// npm sends a token only to the registry its "nerf dart" names.
		npmrc = "//" + strings.TrimPrefix(reg.URL(), "http://") + "/:_authToken=" + token + "\n"
	}
	if err := os.WriteFile(filepath.Join(c.home, ".npmrc"), []byte(npmrc), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *npmClient) env() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + c.home,
		"npm_config_registry=" + c.reg.URL() + "/",
		"npm_config_cache=" + c.cache,
		"npm_config_userconfig=" + filepath.Join(c.home, ".npmrc"),
		"npm_config_globalconfig=" + filepath.Join(c.home, "global-npmrc"),
		"npm_config_audit=false",
		"npm_config_fund=false",
		"npm_config_update_notifier=false",
		"npm_config_progress=false",
		// npm retries a tarball that fails its integrity check, and a
		// failed fetch, with a backoff from 10 s up to 60 s; a tampered
		// tarball would take minutes to be refused. Same retries, short
		// waits.
		"npm_config_fetch_retry_mintimeout=10",
		"npm_config_fetch_retry_maxtimeout=50",
	}
}

// run runs name (npm or node) in dir and returns its combined output.
func (c *npmClient) run(dir, name string, args ...string) (string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = c.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeFiles writes files (path -> contents) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// installed lists the packages in dir's node_modules ("@acme/util").
func installed(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // .package-lock.json, .bin
		}
		if strings.HasPrefix(name, "@") {
			scoped, err := os.ReadDir(filepath.Join(dir, "node_modules", name))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range scoped {
				out = append(out, name+"/"+s.Name())
			}
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// summary is a log slice as "METHOD path status" lines, for messages.
func summary(reqs []Request) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString("\n  " + r.Method + " " + r.Path + " " + strconv.Itoa(r.Status) + " " + string(r.Route))
	}
	return b.String()
}

const (
	token      = "npm_0123456789abcdefABCDEF"
	appPackage = `{
  "name": "demo-app",
  "version": "1.0.0",
  "private": true,
  "scripts": {"test": "node --test"},
  "dependencies": {"@acme/util": "^1.0.0", "greet": "^2.0.0"}
}
`
	appTest = `const test = require('node:test');
const assert = require('node:assert');
const greet = require('greet');
const { shout } = require('@acme/util');

test('the installed packages work together', () => {
  assert.strictEqual(shout(greet('npm')), 'HELLO    NPM');
});
`
)

// addDemoPackages serves a scoped package, one with a dependency of its
// own, and two versions of that dependency (the newer one matches).
func addDemoPackages(t *testing.T, reg *Registry) map[string]Tarball {
	t.Helper()
	tbs := map[string]Tarball{}
	for _, v := range []Version{
		{Name: "left-pad", Version: "1.0.0", Manifest: map[string]any{"main": "index.js"},
			Files: map[string]string{"index.js": "module.exports = (s, n) => 'old:' + s;\n"}},
		{Name: "left-pad", Version: "1.1.0", Manifest: map[string]any{"main": "index.js"},
			Files: map[string]string{"index.js": "module.exports = (s, n) => String(s).padStart(n);\n"}},
		{Name: "greet", Version: "2.0.0", Dependencies: map[string]string{"left-pad": "^1.0.0"},
			Manifest: map[string]any{"main": "index.js", "description": "says hello"},
			Files:    map[string]string{"index.js": "const pad = require('left-pad');\nmodule.exports = (name) => 'hello ' + pad(name, 6);\n"}},
		{Name: "@acme/util", Version: "1.0.0", Manifest: map[string]any{"main": "lib/index.js"},
			Files: map[string]string{"lib/index.js": "exports.shout = (s) => s.toUpperCase();\n"}},
	} {
		tb, err := reg.Add(v)
		if err != nil {
			t.Fatal(err)
		}
		tbs[v.Name+"@"+v.Version] = tb
	}
	return tbs
}

// TestRealNPM drives npm install, npm ci (cold, warm, tampered), node
// --test, a wrong token and npm publish against one registry, in order:
// later steps use the lockfile the first one writes.
func TestRealNPM(t *testing.T) {
	reg := Serve(t, WithToken(token, "ci-bot"), WithLatency(5*time.Millisecond))
	tbs := addDemoPackages(t, reg)
	wantInstalled := []string{"@acme/util", "greet", "left-pad"}
	wantTarballs := []string{"@acme/util@1.0.0", "greet@2.0.0", "left-pad@1.1.0"}

	project := t.TempDir()
	writeFiles(t, project, map[string]string{"package.json": appPackage})
	installer := newNPMClient(t, reg, token)

	ok := t.Run("npm install writes a lockfile", func(t *testing.T) {
		out, err := installer.run(project, "npm", "install")
		if err != nil {
			t.Fatalf("npm install: %v\n%s", err, out)
		}
		var lock struct {
			LockfileVersion int `json:"lockfileVersion"`
			Packages        map[string]struct {
				Version, Resolved, Integrity string
			}
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(project, "package-lock.json"))), &lock); err != nil {
			t.Fatal(err)
		}
		for _, id := range wantTarballs {
			name, ver, _ := strings.Cut(id[1:], "@")
			name = id[:1] + name
			got := lock.Packages["node_modules/"+name]
			want := tbs[id]
			if got.Version != ver || got.Integrity != want.Integrity || got.Resolved != reg.URL()+"/"+name+"/-/"+tarballFile(name, ver) {
				t.Errorf("lockfile entry for %s = %+v; want version %s, integrity %s, resolved under %s", name, got, ver, want.Integrity, reg.URL())
			}
		}
		reqs := reg.Requests()
		var packuments []string
		for _, r := range reqs {
			if r.Route == RoutePackument {
				packuments = append(packuments, r.Path)
				// npm 11 asks for the full document (Accept:
				// application/json) when it builds the ideal tree, to
				// read publish times; older npm, and npm inflating an
				// old lockfile, ask for the abbreviated one. Either is
				// served (the abbreviated form is tested in
				// TestPackumentForms).
				if (r.Accept != "application/json" && !strings.Contains(r.Accept, abbreviatedType)) || r.Status != 200 || !r.AuthValid {
					t.Errorf("packument request %+v: want one of the two forms asked for, 200, valid auth", r)
				}
			}
		}
		slices.Sort(packuments)
		if want := []string{"/@acme%2futil", "/greet", "/left-pad"}; !slices.Equal(packuments, want) {
			t.Errorf("packuments asked for: %v; want %v (scoped name escaped as npm sends it)%s", packuments, want, summary(reqs))
		}
		if got := reg.TarballFetches(); len(got) != 3 || got["@acme/util@1.0.0"] != 1 || got["greet@2.0.0"] != 1 || got["left-pad@1.1.0"] != 1 {
			t.Errorf("tarball fetches = %v; want one each of %v", got, wantTarballs)
		}
	})
	if !ok {
		return
	}

	// A clean checkout: the manifest, the lockfile and a test, no
	// node_modules, and a cold cache.
	clean := t.TempDir()
	writeFiles(t, clean, map[string]string{
		"package.json":      appPackage,
		"package-lock.json": readFile(t, filepath.Join(project, "package-lock.json")),
		"greet.test.js":     appTest,
	})
	ciClient := newNPMClient(t, reg, token)
	ok = t.Run("npm ci in a clean copy installs exactly the lockfile", func(t *testing.T) {
		before := len(reg.Requests())
		out, err := ciClient.run(clean, "npm", "ci")
		if err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
		if got := installed(t, clean); !slices.Equal(got, wantInstalled) {
			t.Errorf("node_modules holds %v; want %v", got, wantInstalled)
		}
		reqs := reg.Requests()[before:]
		var tarballs []string
		for _, r := range reqs {
			if r.Route != RouteTarball {
				// npm ci with a lockfile asks for no metadata at all:
				// resolved and integrity are in the lockfile.
				t.Errorf("npm ci made a %s request: %+v", r.Route, r)
				continue
			}
			if r.Status != 200 || !r.AuthValid || r.NpmCommand != "ci" {
				t.Errorf("tarball request %+v: want 200 with valid auth from npm ci", r)
			}
			tarballs = append(tarballs, r.Package+"@"+r.Version)
		}
		slices.Sort(tarballs)
		if !slices.Equal(tarballs, wantTarballs) {
			t.Errorf("npm ci fetched %v; want %v%s", tarballs, wantTarballs, summary(reqs))
		}
	})
	if !ok {
		return
	}

	t.Run("node --test runs a test requiring the packages", func(t *testing.T) {
		out, err := ciClient.run(clean, "node", "--test")
		if err != nil || !strings.Contains(out, "# pass 1") || !strings.Contains(out, "# fail 0") {
			t.Fatalf("node --test: %v\n%s", err, out)
		}
	})

	t.Run("npm ci with a warm cache fetches no tarball again", func(t *testing.T) {
		for _, args := range [][]string{{"ci"}, {"ci", "--prefer-offline"}} {
			before := len(reg.Requests())
			out, err := ciClient.run(clean, "npm", args...)
			if err != nil {
				t.Fatalf("npm %v: %v\n%s", args, err, out)
			}
			if got := installed(t, clean); !slices.Equal(got, wantInstalled) {
				t.Errorf("npm %v: node_modules holds %v; want %v", args, got, wantInstalled)
			}
			// npm 11 reads a tarball whose lockfile integrity is in its
			// cache from the cache without asking the registry, with or
			// without --prefer-offline, so it sends nothing at all.
			if reqs := reg.Requests()[before:]; len(reqs) != 0 {
				t.Errorf("npm %v with a warm cache sent %d requests; want none%s", args, len(reqs), summary(reqs))
			}
		}
		if got := reg.TarballFetches(); got["left-pad@1.1.0"] != 2 || got["greet@2.0.0"] != 2 || got["@acme/util@1.0.0"] != 2 {
			t.Errorf("tarball fetches = %v; want two each (npm install, then the cold npm ci)", got)
		}
	})

	t.Run("a wrong or missing token is E401", func(t *testing.T) {
		for _, tok := range []string{"npm_wrong", ""} {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"package.json": appPackage})
			before := len(reg.Requests())
			out, err := newNPMClient(t, reg, tok).run(dir, "npm", "install")
			if err == nil || !strings.Contains(out, "E401") {
				t.Fatalf("npm install with token %q: err %v, want E401 in\n%s", tok, err, out)
			}
			reqs := reg.Requests()[before:]
			if len(reqs) == 0 {
				t.Fatalf("token %q: no request reached the registry", tok)
			}
			for _, r := range reqs {
				if r.Status != 401 || r.AuthPresent != (tok != "") || r.AuthValid {
					t.Errorf("token %q: %+v; want a 401 with auth present=%v and not valid", tok, r, tok != "")
				}
			}
		}
	})

	t.Run("npm publish reaches the registry as a PUT and is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"package.json": `{"name": "brand-new", "version": "1.0.0", "main": "index.js"}` + "\n",
			"index.js":     "module.exports = 1;\n",
		})
		before := len(reg.Requests())
		out, err := newNPMClient(t, reg, token).run(dir, "npm", "publish")
		if err == nil || !strings.Contains(out, "E403") {
			t.Fatalf("npm publish: err %v, want E403 in\n%s", err, out)
		}
		reqs := reg.Requests()[before:]
		var puts []Request
		for _, r := range reqs {
			if r.Method == "PUT" {
				puts = append(puts, r)
			}
		}
		if len(puts) != 1 || puts[0].Path != "/brand-new" || puts[0].Route != RoutePublish || puts[0].Status != 403 ||
			!puts[0].AuthValid || puts[0].RequestBytes == 0 || puts[0].NpmCommand != "publish" {
			t.Fatalf("PUT requests: %+v; want one PUT /brand-new, publish, 403, valid auth, with a body%s", puts, summary(reqs))
		}
		if _, ok := reg.distTags("brand-new"); ok {
			t.Error("the refused publish added brand-new")
		}
	})

	t.Run("a tampered tarball fails npm ci with EINTEGRITY", func(t *testing.T) {
		if err := reg.Tamper("left-pad", "1.1.0"); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"package.json":      appPackage,
			"package-lock.json": readFile(t, filepath.Join(project, "package-lock.json")),
		})
		before := len(reg.Requests())
		out, err := newNPMClient(t, reg, token).run(dir, "npm", "ci")
		if err == nil || !strings.Contains(out, "EINTEGRITY") {
			t.Fatalf("npm ci of a tampered tarball: err %v, want EINTEGRITY in\n%s", err, out)
		}
		// npm fetches the tarball again before giving up: its fetch
		// retries (fetch-retries, 2) and pacote's own retry of corrupt
		// data.
		fetched := 0
		for _, r := range reg.Requests()[before:] {
			if r.Route == RouteTarball && r.Package == "left-pad" && r.Status == 200 {
				fetched++
			}
		}
		if fetched < 2 {
			t.Errorf("the tampered tarball was fetched %d times; want npm to have retried%s", fetched, summary(reg.Requests()[before:]))
		}
	})
}
