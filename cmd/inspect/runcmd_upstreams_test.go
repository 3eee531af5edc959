package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// The real upstreams this test is held to: one tiny module with no
// dependencies, at a pinned version, that the repository's go.sum lacks, and
// one tiny npm package with no dependencies, pinned in a lockfile with its
// real integrity hash (as https://registry.npmjs.org/is-number/7.0.0 gives
// it).
const (
	realModule        = "github.com/google/go-cmp"
	realModuleVersion = "v0.6.0"
	realSumDBName     = "sum.golang.org"
	realNPMPackage    = "is-number"
	realNPMVersion    = "7.0.0"
	realNPMIntegrity  = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="
)

// toolOutput runs argv (a tool of this machine) and returns its trimmed
// standard output.
func toolOutput(t *testing.T, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// realUpstreams are the module proxy and the npm registry this machine's
// own tools use: the first proxy of `go env GOPROXY` and `npm config get
// registry`, without a trailing slash.
func realUpstreams(t *testing.T) (goProxy, npmRegistry string) {
	t.Helper()
	list := toolOutput(t, "go", "env", "GOPROXY")
	for _, p := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == '|' }) {
		if p != "direct" && p != "off" {
			goProxy = strings.TrimSuffix(p, "/")
			break
		}
	}
	if goProxy == "" {
		t.Fatalf("go env GOPROXY is %q: this machine names no Go module proxy to test against", list)
	}
	return goProxy, strings.TrimSuffix(toolOutput(t, "npm", "config", "get", "registry"), "/")
}

// probeUpstream asks url directly, from the test's own process, so that a
// network that does not reach the upstream fails the test in those words
// rather than as a session's failure.
func probeUpstream(t *testing.T, what, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s is unreachable from this machine (this test needs the real upstream): %v", what, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s answered %s with %s (this test needs the real upstream to serve it)", what, url, resp.Status)
	}
}

// realDepsRepo is a module that needs realModule, which its go.sum lacks,
// and an npm package whose lockfile pins realNPMPackage. Setup completes
// go.sum (go mod tidy: the checksum database is asked for the module's
// hashes, through the proxy) and installs the package (npm ci); verify
// uses both.
func realDepsRepo() map[string]string {
	lock := map[string]any{
		"name": "realdeps", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"": map[string]any{"name": "realdeps", "version": "1.0.0", "dependencies": map[string]string{realNPMPackage: realNPMVersion}},
			"node_modules/" + realNPMPackage: map[string]any{
				"version":   realNPMVersion,
				"resolved":  "https://registry.npmjs.org/" + realNPMPackage + "/-/" + realNPMPackage + "-" + realNPMVersion + ".tgz",
				"integrity": realNPMIntegrity,
				"license":   "MIT",
				"engines":   map[string]string{"node": ">=0.12.0"},
			},
		},
	}
	lockJSON, err := json.MarshalIndent(lock, "", "  ")
	if err != nil {
		panic(err) // a map of plain values always marshals
	}
	return map[string]string{
		"go.mod": "module example.com/realdeps\n\ngo 1.21\n\nrequire " + realModule + " " + realModuleVersion + "\n",
		"same_test.go": "package realdeps\n\nimport (\n\t\"testing\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\n" +
			"func TestSame(t *testing.T) {\n\tif d := cmp.Diff([]int{1, 2}, []int{1, 2}); d != \"\" {\n\t\tt.Fatal(d)\n\t}\n}\n",
		"package.json":      `{"name": "realdeps", "version": "1.0.0", "private": true, "dependencies": {"` + realNPMPackage + `": "` + realNPMVersion + `"}}` + "\n",
		"package-lock.json": string(lockJSON) + "\n",
		".gitignore":        "node_modules/\n",
		"test/number.test.js": "const test = require('node:test')\nconst assert = require('node:assert')\nconst isNumber = require('is-number')\n" +
			"test('counts', () => assert.ok(isNumber('7') && !isNumber('seven')))\n",
		".github/inspect.yml": "env:\n  GOTOOLCHAIN: local\n" +
			"setup:\n" +
			"  - name: go.sum\n    run: [go, mod, tidy]\n" +
			"  - name: packages\n    run: [npm, ci, --ignore-scripts]\n" +
			"verify:\n" +
			"  - name: go\n    run: [go, test, ./...]\n" +
			"  - name: node\n    run: [node, --test]\n",
	}
}

// A session held to the real services: `inspect run`, through the app's
// registry egress, gets a module its go.sum lacks from this machine's Go
// module proxy, with the checksum database asked through that proxy under
// the server's default key (config.DefaultSumDB, which go refuses unless it
// is the toolchain's own), and a locked npm package from this machine's
// npm registry. The stand-ins elsewhere cannot catch a default that only
// the real database, or the real go, would refuse.
func TestRunReachesTheRealModuleProxyChecksumDatabaseAndNPMRegistry(t *testing.T) {
	goProxy, npmRegistry := realUpstreams(t)
	probeUpstream(t, "the Go module proxy", goProxy+"/"+realModule+"/@v/"+realModuleVersion+".info")
	probeUpstream(t, "the Go module proxy's checksum database", goProxy+"/sumdb/"+realSumDBName+"/supported")
	probeUpstream(t, "the npm registry", npmRegistry+"/"+realNPMPackage+"/"+realNPMVersion)

	dir := t.TempDir()
	// No sumdb: the server's default is what is held to the real one.
	server := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(server, []byte(fmt.Sprintf("egress:\n  registries:\n"+
		"    goproxy: {kind: goproxy, url: %q}\n    npmjs: {kind: npm, url: %q}\n", goProxy, npmRegistry)), 0o600); err != nil {
		t.Fatal(err)
	}
	evidencePath := filepath.Join(dir, "evidence.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--repo", gitRepo(t, realDepsRepo()), "--server-config", server, "--agent", `["true"]`,
		"--patch", "", "--evidence", evidencePath, "--work-dir", sandboxWorkDir(t), "--timeout", "5m", "--", "nothing"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(evidencePath)
	if err != nil {
		t.Fatal(err)
	}
	var ev contract.Evidence
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Egress == nil {
		t.Fatalf("the evidence has no egress audit:\n%s", b)
	}
	got := map[string]int{}
	for _, r := range ev.Egress.Records {
		got[r.Upstream+" "+r.Path] = r.Status
	}
	for _, want := range []string{
		"goproxy sumdb/" + realSumDBName + "/supported",
		"goproxy sumdb/" + realSumDBName + "/lookup/" + realModule + "@" + realModuleVersion,
		"goproxy " + realModule + "/@v/" + realModuleVersion + ".zip",
		"npmjs " + realNPMPackage + "/-/" + realNPMPackage + "-" + realNPMVersion + ".tgz",
	} {
		if got[want] != http.StatusOK {
			t.Errorf("no %s answered 200 through the egress; the session's registry requests: %v", want, got)
		}
	}
	if ev.Egress.RefusedCount != 0 {
		t.Errorf("the egress refused %d requests: %+v", ev.Egress.RefusedCount, ev.Egress.Refused)
	}
}
