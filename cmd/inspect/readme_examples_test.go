package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// docs/repositories.md's "Your first real repository" section shows a
// .github/inspect.yml for a Go module and one for a Node project. These
// tests run them as written, with `inspect run`, against stand-in
// registries through the registry egress, and hold them to fetching each
// file once: a module's .info, .mod and .zip, a package's tarball. A
// config that lets verify fetch again what setup fetched (a module cache
// in each command's own fresh HOME) doubles a session's registry traffic
// on every real repository.

// readmeExample is the first ```yaml block after the paragraph of the
// first-repository section of docs/repositories.md that starts with lead.
func readmeExample(t *testing.T, lead string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "repositories.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## Your first real repository")
	if start < 0 {
		t.Fatal("docs/repositories.md has no section \"Your first real repository\"")
	}
	section := readme[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	i := strings.Index(section, "\n"+lead)
	if i < 0 {
		t.Fatalf("docs/repositories.md's first-repository section has no paragraph starting %q", lead)
	}
	m := regexp.MustCompile("(?s)\n```yaml\n(.*?)```\n").FindStringSubmatch(section[i:])
	if m == nil {
		t.Fatalf("no yaml block follows %q in docs/repositories.md", lead)
	}
	return m[1]
}

// readmeServerConfig writes a server config (inspect serve's keys) whose
// egress.registries names the stand-ins as docs/repositories.md's server example
// names the real registries: goproxy and npmjs.
func readmeServerConfig(t testing.TB, goproxy *fakegoproxy.Proxy, npm *fakenpm.Registry) string {
	t.Helper()
	yaml := "egress:\n  registries:\n"
	if goproxy != nil {
		_, sumKey := goproxy.SumDB()
		yaml += "    goproxy: {kind: goproxy, url: \"" + goproxy.URL() + "\", sumdb: \"" + sumKey + "\"}\n"
	}
	if npm != nil {
		yaml += "    npmjs: {kind: npm, url: \"" + npm.URL() + "\"}\n"
	}
	p := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readmeGoModules are the stand-in's modules: one the repository requires,
// which requires another, so that the graph is more than one file deep.
// Their paths are these tests' own: the go command indexes a module in its
// cache by path and version alone, and the tests' shared Go build cache
// (decision 0050) keeps that index, so another test's fake.test/alpha
// v1.0.0 with other files would be read as this one's.
func readmeGoModules() (greeting, names fakegoproxy.Module) {
	names = fakegoproxy.Module{Path: "fake.test/readme-names", Version: "v1.2.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/readme-names"), "names.go": "package names\n\n// Beta is a name.\nconst Beta = \"beta\"\n"}}
	greeting = fakegoproxy.Module{Path: "fake.test/readme-greeting", Version: "v1.0.0", Files: map[string]string{
		"go.mod":      fakegoproxy.GoMod("fake.test/readme-greeting", names),
		"greeting.go": "package greeting\n\nimport names \"fake.test/readme-names\"\n\n// Hello greets.\nconst Hello = \"hello \" + names.Beta\n"}}
	return greeting, names
}

// readmeGoFiles are a Go module's files needing greeting (and through it
// names), with its go.sum committed, and cfg as its .github/inspect.yml.
func readmeGoFiles(up *fakegoproxy.Proxy, greeting, names fakegoproxy.Module, cfg string) map[string]string {
	return map[string]string{
		"go.mod":              "module example.com/widgets\n\ngo 1.21\n\nrequire " + greeting.Path + " " + greeting.Version + "\n\nrequire " + names.Path + " " + names.Version + " // indirect\n",
		"go.sum":              up.GoSum(greeting.Path, greeting.Version) + up.GoSum(names.Path, names.Version),
		"greet.go":            "package widgets\n\nimport greeting \"" + greeting.Path + "\"\n\n// Greeting comes from a dependency.\nfunc Greeting() string { return greeting.Hello }\n",
		"greet_test.go":       "package widgets\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif Greeting() != \"hello beta\" {\n\t\tt.Fatal(Greeting())\n\t}\n}\n",
		".github/inspect.yml": cfg,
	}
}

// readmeRun runs `inspect run` on repo with an agent that changes
// nothing, so that what reaches the registries is setup's and verify's.
func readmeRun(t *testing.T, repo, serverCfg string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run([]string{"run", "--repo", repo, "--server-config", serverCfg, "--agent", `["true"]`, "--patch", "",
		"--work-dir", sandboxWorkDir(t), "--", "change", "nothing"}, &out, &errOut)
	return code, out.String(), errOut.String()
}

// goFetchedTwice lists the module files (.info, .mod, .zip) the proxy
// handed out more than once, with how often.
func goFetchedTwice(up *fakegoproxy.Proxy) []string {
	var twice []string
	for _, kind := range []fakegoproxy.Kind{fakegoproxy.KindInfo, fakegoproxy.KindMod, fakegoproxy.KindZip} {
		for file, n := range up.Fetches(kind) {
			if n > 1 {
				twice = append(twice, fmt.Sprintf("%s .%s %d times", file, kind, n))
			}
		}
	}
	return twice
}

// The Go example: setup's `go mod download` and verify's `go test` see one
// module cache, so each module file crosses the egress once; with the
// example's old config (the cache in each command's own HOME) verify
// fetched every .mod and .zip again. Narrowed to setup, as docs/repositories.md says
// it may be, the registry is not needed in verify at all.
func TestReadmeGoExampleFetchesEachModuleFileOnce(t *testing.T) {
	greeting, names := readmeGoModules()
	for _, tc := range []struct {
		name, narrowing string
	}{
		{"as written", ""},
		{"registry in setup only", "registries:\n  goproxy: {phases: [setup]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{greeting, names}})
			example := readmeExample(t, "A Go module") + tc.narrowing
			code, stdout, stderr := readmeRun(t, gitRepo(t, readmeGoFiles(up, greeting, names, example)), readmeServerConfig(t, up, nil))
			if code != 0 {
				t.Fatalf("docs/repositories.md's Go example: exit %d\nconfig:\n%s\nstdout:\n%s\nstderr:\n%s", code, example, stdout, stderr)
			}
			for _, m := range []fakegoproxy.Module{greeting, names} {
				if n := up.Fetches(fakegoproxy.KindZip)[m.String()]; n != 1 {
					t.Errorf("%s's zip was fetched %d times, want once", m, n)
				}
			}
			if twice := goFetchedTwice(up); len(twice) > 0 {
				t.Errorf("docs/repositories.md's Go example fetched module files more than once in one session: %s\nconfig:\n%s", strings.Join(twice, ", "), example)
			}
		})
	}
}

// The Node example: `npm ci` in setup fetches each tarball once, and verify
// runs on the node_modules setup left, with the registry or without it.
func TestReadmeNodeExampleFetchesEachTarballOnce(t *testing.T) {
	up := fakenpm.Serve(t, fakenpm.WithAnonymousReads())
	pkg := up.AddGreet(t)
	lockfile := fakenpm.Lockfile(t, up, "", pkg)
	for _, tc := range []struct {
		name, narrowing string
	}{
		{"as written", ""},
		{"registry in setup only", "registries:\n  npmjs: {phases: [setup]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			example := readmeExample(t, "A Node project") + tc.narrowing
			repo := gitRepo(t, map[string]string{
				"package.json":      pkg,
				"package-lock.json": lockfile,
				".gitignore":        "node_modules/\n",
				"test/greet.test.js": "const test = require('node:test')\nconst assert = require('node:assert')\nconst { greet } = require('greet')\n" +
					"test('greets loudly', () => assert.strictEqual(greet('ana'), 'HELLO ANA'))\n",
				".github/inspect.yml": example,
			})
			before := len(up.Requests())
			code, stdout, stderr := readmeRun(t, repo, readmeServerConfig(t, nil, up))
			if code != 0 {
				t.Fatalf("docs/repositories.md's Node example: exit %d\nconfig:\n%s\nstdout:\n%s\nstderr:\n%s", code, example, stdout, stderr)
			}
			fetched := map[string]int{}
			for _, q := range up.Requests()[before:] {
				if q.Route == fakenpm.RouteTarball && q.Method == http.MethodGet && q.Status == http.StatusOK {
					fetched[q.Package+"@"+q.Version]++
				}
			}
			for _, p := range []string{"greet@2.1.0", "@acme/util@1.0.0"} {
				if fetched[p] != 1 {
					t.Errorf("%s's tarball was fetched %d times in the session, want once (all: %v)", p, fetched[p], fetched)
				}
			}
		})
	}
}
