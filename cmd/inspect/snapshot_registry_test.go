package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// snapshotRegistryConfig is a repository (a Go module and a Node project
// in one) whose snapshot setup downloads its Go modules and installs its
// npm packages into declared caches, and whose verify needs both.
const snapshotRegistryConfig = `env:
  GOTOOLCHAIN: local
  GOMODCACHE: /cache/go/mod
snapshot:
  setup:
    - name: modules
      run: [go, mod, download]
    - name: packages
      run: [npm, ci, --ignore-scripts]
  caches:
    - path: /cache/go
      lockfiles: [go.sum]
    - path: /workspace/node_modules
      lockfiles: [package-lock.json]
verify:
  - name: go tests
    run: [go, test, ./...]
  - name: node tests
    run: [node, --test]
`

// `inspect snapshot build --server-config` runs the snapshot setup with the
// server config's registries, through the same registry egress as `inspect
// run`: it warms the Go module cache and node_modules. A session that
// restores that snapshot (`inspect run --snapshot-store`) then fetches
// nothing from either registry, in setup or after.
func TestSnapshotBuildWithServerConfigWarmsWhatARunThenNeverFetches(t *testing.T) {
	greeting, names := readmeGoModules()
	goproxy := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{greeting, names}})
	npm := fakenpm.Serve(t, fakenpm.WithAnonymousReads())
	if _, err := npm.Add(fakenpm.Version{Name: "greet", Version: "2.1.0", Manifest: map[string]any{"main": "index.js"},
		Files: map[string]string{"index.js": "exports.greet = n => 'HELLO ' + n.toUpperCase()\n"}}); err != nil {
		t.Fatal(err)
	}
	pkg := `{"name": "widgets", "version": "1.0.0", "private": true, "dependencies": {"greet": "^2.1.0"}}` + "\n"
	files := readmeGoFiles(goproxy, greeting, names, snapshotRegistryConfig)
	files["package.json"] = pkg
	files["package-lock.json"] = fakenpm.Lockfile(t, npm, "", pkg)
	files[".gitignore"] = "node_modules/\n"
	files["test/greet.test.js"] = "const test = require('node:test')\nconst assert = require('node:assert')\nconst { greet } = require('greet')\n" +
		"test('greets loudly', () => assert.strictEqual(greet('ana'), 'HELLO ANA'))\n"
	repo := gitRepo(t, files)
	serverCfg := readmeServerConfig(t, goproxy, npm)
	store := "oci:" + t.TempDir() + "/store"

	npmBefore := len(npm.Requests())
	code, out, errOut := snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widgets", "--store", store,
		"--server-config", serverCfg, "--work-dir", sandboxWorkDir(t))
	if code != 0 {
		t.Fatalf("snapshot build --server-config: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"setup    ran (2 commands)", "rebuilt  /cache/go", "rebuilt  /workspace/node_modules"} {
		if !strings.Contains(out, want) {
			t.Errorf("the build's output lacks %q:\n%s", want, out)
		}
	}
	for _, m := range []fakegoproxy.Module{greeting, names} {
		if n := goproxy.Fetches(fakegoproxy.KindZip)[m.String()]; n != 1 {
			t.Errorf("the build fetched %s's zip %d times, want once", m, n)
		}
	}
	if n := npm.TarballFetches()["greet@2.1.0"]; n != 1 || len(npm.Requests()) == npmBefore {
		t.Errorf("the build fetched greet's tarball %d times, want once", n)
	}
	// It prints setup's egress audit: every registry request, each
	// module's zip and the tarball among them, and nothing refused.
	egressLine := regexp.MustCompile(`(?m)^egress   ([1-9][0-9]*) registry requests, [1-9][0-9]* bytes, 0 refused$`).FindStringSubmatch(out)
	if egressLine == nil || strings.Count(out, "\nrequest  ") != atoi(t, egressLine[1]) || strings.Contains(out, "\nrefused  ") {
		t.Errorf("the build's output lacks its egress audit:\n%s", out)
	}
	for _, want := range []string{
		"request  GET goproxy " + greeting.Path + "/@v/" + greeting.Version + ".zip -> 200, ",
		"request  GET goproxy " + names.Path + "/@v/" + names.Version + ".zip -> 200, ",
		"request  GET npmjs greet/-/greet-2.1.0.tgz -> 200, ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the build's egress lacks %q:\n%s", want, out)
		}
	}

	goproxy.Reset()
	npmBefore = len(npm.Requests())
	var stdout, stderr strings.Builder
	evidence := filepath.Join(t.TempDir(), "evidence.json")
	code = run([]string{"run", "--repo", repo, "--repo-name", "acme/widgets", "--snapshot-store", store, "--server-config", serverCfg,
		"--agent", `["true"]`, "--patch", "", "--evidence", evidence, "--work-dir", sandboxWorkDir(t), "--", "change", "nothing"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("inspect run on the snapshot: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	var ev contract.Evidence
	if b, err := os.ReadFile(evidence); err != nil || json.Unmarshal(b, &ev) != nil || ev.Workspace == nil {
		t.Fatalf("the session's evidence: %v\n%s", err, b)
	}
	if ev.Workspace.Source != contract.WorkspaceSnapshot || ev.Workspace.SnapshotDigest != snapshotTestField(out, "digest") {
		t.Errorf("the session did not restore the snapshot it was given: %+v", ev.Workspace)
	}
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseSetup {
			t.Errorf("the session on a snapshot whose lockfiles are unchanged ran setup: %s", c.Name)
		}
	}
	if reqs := goproxy.Requests(); len(reqs) > 0 {
		t.Errorf("the session on a warm snapshot reached the Go module proxy %d times: %+v", len(reqs), reqs)
	}
	if reqs := npm.Requests()[npmBefore:]; len(reqs) > 0 {
		t.Errorf("the session on a warm snapshot reached the npm registry %d times: %+v", len(reqs), reqs)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A build whose setup the egress refused fails, and says on stderr what
// setup fetched and what was refused, and why: the same audit the app
// keeps with a build (decision 0065).
func TestSnapshotBuildRefusedByTheEgressPrintsItsAudit(t *testing.T) {
	greeting, names := readmeGoModules()
	goproxy := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{greeting, names}})
	cfg := "env:\n  GOTOOLCHAIN: local\n  GOMODCACHE: /cache/go/mod\n" +
		"snapshot:\n  setup:\n    - {name: modules, run: [go, mod, download]}\n" +
		"    - name: elsewhere\n      run: [sh, -c, 'GOPROXY=\"${GOPROXY%goproxy/}elsewhere/\" go mod download fake.test/readme-other@v1.0.0']\n" +
		"  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"
	repo := gitRepo(t, readmeGoFiles(goproxy, greeting, names, cfg))
	code, out, errOut := snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widgets", "--store", "oci:"+t.TempDir()+"/store",
		"--server-config", readmeServerConfig(t, goproxy, nil), "--work-dir", sandboxWorkDir(t))
	if code != 1 || strings.Contains(out, "digest") {
		t.Fatalf("a build whose setup failed: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"\nrequest  GET goproxy " + greeting.Path + "/@v/" + greeting.Version + ".zip -> 200, ",
		"\nrefused  GET elsewhere fake.test/readme-other/@v/v1.0.0.info: the server opens no registry named \"elsewhere\" to this attempt\n",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !regexp.MustCompile(`(?m)^egress   [1-9][0-9]* registry requests, [1-9][0-9]* bytes, 1 refused$`).MatchString(errOut) {
		t.Errorf("stderr lacks the egress count:\n%s", errOut)
	}
	for _, q := range goproxy.Requests() {
		if strings.Contains(q.Path, "readme-other") {
			t.Errorf("the refused request reached the upstream: %s", q.Path)
		}
	}
}
