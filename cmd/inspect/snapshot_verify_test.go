package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// A restored session's verify runs on what the snapshot holds at its caches
// under /workspace (decision 0063): the session's setup does not run again
// (the lockfiles are unchanged), and the agent's phase takes the cache away
// from its own workspace as package managers do, so what setup left there
// is gone, and only the snapshot's layer can give verify its dependencies.
// Before 0063 verify carried only what setup left, and failed on a missing
// module.
func TestARestoredSessionVerifiesWithTheSnapshotsWorkspaceCaches(t *testing.T) {
	cases := []struct {
		name string
		// repo makes the repository's files and the server config whose
		// registry the snapshot build installs from, and a count of the
		// requests that registry has had.
		repo func(t *testing.T) (files map[string]string, serverCfg string, requests func() int)
		// agent is what the agent runs: it removes the workspace cache
		// (the prompt's path, its last argument, is the shell's $1).
		agent string
		// verify is the verify command whose pass the cache makes.
		verify string
	}{
		{
			name: "node_modules",
			repo: func(t *testing.T) (map[string]string, string, func() int) {
				npm := fakenpm.Serve(t, fakenpm.WithAnonymousReads())
				pkg := npm.AddGreet(t)
				return map[string]string{
					".github/inspect.yml": "snapshot:\n  setup:\n    - name: packages\n      run: [npm, ci, --ignore-scripts]\n" +
						"  caches:\n    - path: /workspace/node_modules\n      lockfiles: [package-lock.json]\n" +
						"verify:\n  - name: node tests\n    run: [node, --test]\n",
					".gitignore":        "node_modules/\n",
					"package.json":      pkg,
					"package-lock.json": fakenpm.Lockfile(t, npm, "", pkg),
					"test/greet.test.js": "const test = require('node:test')\nconst assert = require('node:assert')\nconst { greet } = require('greet')\n" +
						"test('greets loudly', () => assert.strictEqual(greet('ana'), 'HELLO ANA'))\n",
				}, readmeServerConfig(t, nil, npm), func() int { return len(npm.Requests()) }
			},
			// What `npm ci` does first, before it fetches anything.
			agent:  `["sh", "-c", "rm -rf node_modules", "agent"]`,
			verify: "node tests",
		},
		{
			name: "a Go module cache under /workspace",
			repo: func(t *testing.T) (map[string]string, string, func() int) {
				greeting, names := readmeGoModules()
				goproxy := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{greeting, names}})
				cfg := "env:\n  GOTOOLCHAIN: local\n  GOMODCACHE: /workspace/.modcache\n" +
					"snapshot:\n  setup:\n    - name: modules\n      run: [go, mod, download]\n" +
					"  caches:\n    - path: /workspace/.modcache\n      lockfiles: [go.sum]\n" +
					"verify:\n  - name: go tests\n    run: [go, test, ./...]\n"
				return readmeGoFiles(goproxy, greeting, names, cfg), readmeServerConfig(t, goproxy, nil), func() int { return len(goproxy.Requests()) }
			},
			agent:  `["sh", "-c", "go clean -modcache", "agent"]`,
			verify: "go tests",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files, serverCfg, requests := tc.repo(t)
			repo := gitRepo(t, files)
			store := "oci:" + t.TempDir() + "/store"
			workDir := sandboxWorkDir(t)
			code, out, errOut := snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widgets", "--store", store,
				"--server-config", serverCfg, "--work-dir", workDir)
			if code != 0 {
				t.Fatalf("snapshot build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}

			built := requests()
			var stdout, stderr strings.Builder
			evidence := filepath.Join(t.TempDir(), "evidence.json")
			code = run([]string{"run", "--repo", repo, "--repo-name", "acme/widgets", "--snapshot-store", store, "--server-config", serverCfg,
				"--agent", tc.agent, "--patch", "", "--evidence", evidence, "--work-dir", workDir, "--", "tidy", "up"}, &stdout, &stderr)
			var ev contract.Evidence
			if b, err := os.ReadFile(evidence); err != nil || json.Unmarshal(b, &ev) != nil || ev.Workspace == nil {
				t.Fatalf("the session's evidence: %v\n%s\nstderr:\n%s", err, b, stderr.String())
			}
			if ev.Workspace.Source != contract.WorkspaceSnapshot {
				t.Fatalf("the session did not restore the snapshot: %+v", ev.Workspace)
			}
			var ran []string
			for _, c := range ev.Commands {
				ran = append(ran, string(c.Phase)+":"+c.Name)
				if c.Phase == contract.PhaseSetup {
					t.Errorf("the session on a snapshot whose lockfiles are unchanged ran setup: %s", c.Name)
				}
			}
			if code != 0 || ev.Outcome != contract.OutcomeOK {
				t.Fatalf("inspect run on the snapshot: exit %d, outcome %s %q (commands %v)\nstdout:\n%s\nstderr:\n%s",
					code, ev.Outcome, ev.Reason, ran, stdout.String(), stderr.String())
			}
			if !strings.Contains(strings.Join(ran, " "), "verify:"+tc.verify) {
				t.Errorf("verify did not run %q: %v", tc.verify, ran)
			}
			// The registry is open to verify: only a fetch there could
			// stand in for the snapshot's cache, and none is needed.
			if n := requests() - built; n > 0 {
				t.Errorf("the session reached the registry %d times: verify did not get the snapshot's cache", n)
			}
			if len(ev.Changes) > 0 {
				t.Errorf("the session's change is not empty: %+v", ev.Changes)
			}
		})
	}
}
