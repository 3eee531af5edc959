package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// What a snapshot is for, measured (issue 35): a Go module with 15
// third-party modules and a Node project with 500 packages, each run
//
//   - cold: `inspect run` with no snapshot (clone, setup, agent, verify);
//   - host: the same commands on the host, from an empty module cache,
//     build cache and npm cache, straight at the stand-in registries;
//   - restored: `inspect run --snapshot-store` on a snapshot that
//     `inspect snapshot build --server-config` made with the same setup
//     (GOMODCACHE and GOCACHE under the declared /cache/go, node_modules
//     under /workspace), the branch one commit past the snapshot, on a
//     runner that has restored it before (its layers already extracted);
//     the first restore on a host is reported as first-restore-s.
//
// The agent changes nothing, so a session's time is its workspace, its
// setup (cold only) and its verify. Registries are the stand-ins, reached
// through the registry egress as a real session's are. restored reports
// x-host-cold, its time over host's (the target is at most 0.3; the first
// restore's is first-x-host-cold), and all
// sessions report prepare-ms (supervisor start to agent start, from the
// evidence) and commands-ms (the sum of its commands' durations).
//
// The sub-benchmarks run in the order cold, host, restored; x-host-cold
// needs host to have run in the same process (-bench
// 'SnapshotSession/go/' rather than '/go/restored').
func BenchmarkSnapshotSession(b *testing.B) {
	b.Run("go", func(b *testing.B) { benchSnapshotProject(b, benchGoProject(b)) })
	b.Run("node", func(b *testing.B) { benchSnapshotProject(b, benchNodeProject(b)) })
}

// benchProject is one generated repository, the server config naming its
// registry, and how the host runs the same commands from cold.
type benchProject struct {
	name      string
	files     map[string]string
	serverCfg string
	// host runs the setup and verify commands in a clone at dir with an
	// empty HOME and caches under home.
	host func(b *testing.B, dir, home string)
}

func benchSnapshotProject(b *testing.B, p benchProject) {
	var hostPerOp time.Duration
	b.Run("cold", func(b *testing.B) {
		repo := gitRepo(b, p.files)
		var ev sessionTimes
		for range b.N {
			ev.add(benchSession(b, p, repo, "", ""))
		}
		ev.report(b)
	})
	b.Run("host", func(b *testing.B) {
		repo := gitRepo(b, p.files)
		for range b.N {
			b.StopTimer()
			dir, home := filepath.Join(b.TempDir(), "clone"), b.TempDir()
			b.StartTimer()
			benchCommand(b, "", nil, "git", "clone", "--quiet", repo, dir)
			p.host(b, dir, home)
		}
		hostPerOp = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("restored", func(b *testing.B) {
		repo := gitRepo(b, p.files)
		store := "oci:" + filepath.Join(b.TempDir(), "store")
		code, out, errOut := benchRun(b, "snapshot", "build", "--dir", repo, "--repo", "acme/"+p.name, "--store", store,
			"--server-config", p.serverCfg, "--work-dir", sandboxWorkDir(b))
		if code != 0 {
			b.Fatalf("snapshot build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		// The branch moves on after the snapshot, as it does between a
		// snapshot's refreshes: the session catches up one commit.
		if err := os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("moved on\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		benchCommand(b, repo, gitTestEnv(), "git", "add", "NOTES.md")
		benchCommand(b, repo, gitTestEnv(), "git", "commit", "--quiet", "-m", "after the snapshot")
		// A runner keeps one work directory, whose layer cache extracts
		// each layer once per host (WORK_DIR/inspect-layers): the first
		// session on a host to restore this snapshot extracts its layers,
		// every later one reuses them. The first is timed apart
		// (first-restore-s), then the steady state is the benchmark's.
		workDir := sandboxWorkDir(b)
		start := time.Now()
		benchSession(b, p, repo, store, workDir)
		first := time.Since(start)
		b.ResetTimer()
		var ev sessionTimes
		for range b.N {
			ev.add(benchSession(b, p, repo, store, workDir))
		}
		perOp := b.Elapsed() / time.Duration(b.N)
		ev.report(b)
		b.ReportMetric(first.Seconds(), "first-restore-s")
		if hostPerOp > 0 {
			b.ReportMetric(float64(perOp)/float64(hostPerOp), "x-host-cold")
			b.ReportMetric(float64(first)/float64(hostPerOp), "first-x-host-cold")
		}
	})
}

// benchSession runs one `inspect run` with an agent that changes nothing,
// in workDir ("" for a new one), from store's snapshot when store is not
// "", and returns its evidence.
// A restored session that ran setup, or a cold one that did not, fails
// the benchmark: it would be measuring something else.
func benchSession(b *testing.B, p benchProject, repo, store, workDir string) contract.Evidence {
	b.StopTimer()
	if workDir == "" {
		workDir = sandboxWorkDir(b)
	}
	evidence := filepath.Join(b.TempDir(), "evidence.json")
	args := []string{"run", "--repo", repo, "--repo-name", "acme/" + p.name, "--server-config", p.serverCfg,
		"--agent", `["true"]`, "--patch", "", "--evidence", evidence, "--work-dir", workDir}
	if store != "" {
		args = append(args, "--snapshot-store", store)
	}
	// INSPECT_BENCH_VERBOSE=DIR logs each session's steps to a file in
	// DIR, to find where a session's time goes.
	verbose := os.Getenv("INSPECT_BENCH_VERBOSE") != ""
	if verbose {
		args = append(args, "--verbose")
	}
	args = append(args, "--", "change", "nothing")
	b.StartTimer()
	code, out, errOut := benchRun(b, args...)
	b.StopTimer()
	defer b.StartTimer()
	if verbose {
		if err := os.WriteFile(filepath.Join(os.Getenv("INSPECT_BENCH_VERBOSE"), p.name+"-"+filepath.Base(filepath.Dir(evidence))+".log"), []byte(errOut), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if code != 0 {
		b.Fatalf("inspect run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	raw, err := os.ReadFile(evidence)
	if err != nil {
		b.Fatal(err)
	}
	var ev contract.Evidence
	if err := json.Unmarshal(raw, &ev); err != nil || ev.Workspace == nil {
		b.Fatalf("the session's evidence: %v\n%s", err, raw)
	}
	ranSetup := false
	for _, c := range ev.Commands {
		ranSetup = ranSetup || c.Phase == contract.PhaseSetup
	}
	switch restored := ev.Workspace.Source == contract.WorkspaceSnapshot; {
	case store != "" && (!restored || ranSetup):
		b.Fatalf("the session did not restore the snapshot without setup: %+v, setup ran: %v", ev.Workspace, ranSetup)
	case store == "" && !ranSetup:
		b.Fatal("the cold session ran no setup")
	}
	return ev
}

func benchRun(b *testing.B, args ...string) (code int, stdout, stderr string) {
	b.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// sessionTimes sums what the sessions' evidence says their time went to.
type sessionTimes struct {
	n                    int
	prepareMS, commandMS int64
}

func (s *sessionTimes) add(ev contract.Evidence) {
	s.n++
	s.prepareMS += ev.Workspace.PrepareMS
	for _, c := range ev.Commands {
		s.commandMS += c.DurationMS
	}
}

func (s *sessionTimes) report(b *testing.B) {
	if s.n == 0 {
		return
	}
	b.ReportMetric(float64(s.prepareMS)/float64(s.n), "prepare-ms")
	b.ReportMetric(float64(s.commandMS)/float64(s.n), "commands-ms")
}

// benchCommand runs name with args in dir (env added to a minimal one),
// failing the benchmark on error.
func benchCommand(b *testing.B, dir string, env []string, name string, args ...string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func gitTestEnv() []string {
	return []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=t@example.com"}
}

// benchGoConfig is the Go module's .github/inspect.yml: the snapshot's
// setup downloads the modules and compiles the tests into GOCACHE, both
// under the declared /cache/go, so a restored verify compiles nothing.
const benchGoConfig = `env:
  GOTOOLCHAIN: local
  GOMODCACHE: /cache/go/mod
  GOCACHE: /cache/go/build
snapshot:
  setup:
    - name: modules
      run: [go, mod, download]
    - name: build
      run: [go, test, -run, ^$, ./...]
  caches:
    - path: /cache/go
      lockfiles: [go.sum]
verify:
  - name: tests
    run: [go, test, ./...]
`

// benchGoProject is a module requiring 15 generated modules (each
// importing the next two, fakegoproxy.Graph), with a complete go.sum, and
// importing net/http and encoding/json as most services do: a cold build
// compiles them, a restored GOCACHE has them.
func benchGoProject(b *testing.B) benchProject {
	mods := fakegoproxy.Graph("fake.test/bench35", 15)
	up := fakegoproxy.New(b, fakegoproxy.Options{Modules: mods})
	var require, sum strings.Builder
	for _, m := range mods {
		fmt.Fprintf(&require, "\t%s %s\n", m.Path, m.Version)
		sum.WriteString(up.GoSum(m.Path, m.Version))
	}
	files := map[string]string{
		"go.mod": "module example.com/bench\n\ngo 1.21\n\nrequire (\n" + require.String() + ")\n",
		"go.sum": sum.String(),
		"server.go": "package bench\n\nimport (\n\t\"encoding/json\"\n\t\"net/http\"\n\n\tm00 \"" + mods[0].Path + "\"\n)\n\n" +
			"// Handler answers the modules' names.\nfunc Handler(w http.ResponseWriter, _ *http.Request) {\n\t_ = json.NewEncoder(w).Encode(m00.Name())\n}\n",
		"server_test.go": "package bench\n\nimport (\n\t\"net/http/httptest\"\n\t\"strings\"\n\t\"testing\"\n)\n\n" +
			"func TestHandler(t *testing.T) {\n\trec := httptest.NewRecorder()\n\tHandler(rec, httptest.NewRequest(\"GET\", \"/\", nil))\n" +
			"\tif !strings.Contains(rec.Body.String(), \"m14\") {\n\t\tt.Fatal(rec.Body.String())\n\t}\n}\n",
		".github/inspect.yml": benchGoConfig,
	}
	_, sumKey := up.SumDB()
	return benchProject{
		name: "bench-go", files: files, serverCfg: readmeServerConfig(b, up, nil),
		host: func(b *testing.B, dir, home string) {
			env := []string{"HOME=" + home, "GOTOOLCHAIN=local", "GOPROXY=" + up.URL(), "GOSUMDB=" + sumKey,
				"GOMODCACHE=" + filepath.Join(home, "mod"), "GOCACHE=" + filepath.Join(home, "build"),
				"GOFLAGS=-modcacherw"} // so that the temporary directory can be removed
			benchCommand(b, dir, env, "go", "mod", "download")
			benchCommand(b, dir, env, "go", "test", "-run", "^$", "./...")
			benchCommand(b, dir, env, "go", "test", "./...")
		},
	}
}

// benchNodeConfig is the Node project's .github/inspect.yml: the
// snapshot's setup installs node_modules, a declared cache path.
const benchNodeConfig = `snapshot:
  setup:
    - name: install
      run: [npm, ci, --ignore-scripts, --no-audit, --no-fund]
  caches:
    - path: /workspace/node_modules
      lockfiles: [package-lock.json]
verify:
  - name: tests
    run: [node, --test]
`

// benchNodePackages is how many packages the Node project installs.
const benchNodePackages = 500

// benchNodeProject is a project depending on bench-p000, the root of a
// binary tree of 500 generated packages (bench-pI depends on bench-p(2I+1)
// and bench-p(2I+2)), so npm resolves nine levels and installs all 500;
// its test counts them through require.
func benchNodeProject(b *testing.B) benchProject {
	up := fakenpm.Serve(b, fakenpm.WithAnonymousReads())
	name := func(i int) string { return fmt.Sprintf("bench-p%03d", i) }
	for i := range benchNodePackages {
		deps := map[string]string{}
		var requires []string
		for _, j := range []int{2*i + 1, 2*i + 2} {
			if j < benchNodePackages {
				deps[name(j)] = "^1.0.0"
				requires = append(requires, fmt.Sprintf("require(%q)", name(j)))
			}
		}
		index := fmt.Sprintf("// %s counts itself and the packages under it.\nconst deps = [%s]\nmodule.exports = () => deps.reduce((n, d) => n + d(), 1)\n",
			name(i), strings.Join(requires, ", "))
		if _, err := up.Add(fakenpm.Version{Name: name(i), Version: "1.0.0", Dependencies: deps,
			Manifest: map[string]any{"main": "index.js", "license": "MIT"},
			Files:    map[string]string{"index.js": index, "README.md": "# " + name(i) + "\n"}}); err != nil {
			b.Fatal(err)
		}
	}
	pkg := `{"name": "bench", "version": "1.0.0", "private": true, "dependencies": {"bench-p000": "^1.0.0"}}` + "\n"
	files := map[string]string{
		"package.json":      pkg,
		"package-lock.json": fakenpm.Lockfile(b, up, "", pkg),
		".gitignore":        "node_modules/\n",
		"test/count.test.js": "const test = require('node:test')\nconst assert = require('node:assert')\nconst count = require('bench-p000')\n" +
			fmt.Sprintf("test('all packages installed', () => assert.strictEqual(count(), %d))\n", benchNodePackages),
		".github/inspect.yml": benchNodeConfig,
	}
	return benchProject{
		name: "bench-node", files: files, serverCfg: readmeServerConfig(b, nil, up),
		host: func(b *testing.B, dir, home string) {
			env := []string{"HOME=" + home, "npm_config_registry=" + up.URL() + "/", "npm_config_cache=" + filepath.Join(home, "npm"),
				"npm_config_update_notifier=false"}
			benchCommand(b, dir, env, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
			benchCommand(b, dir, env, "node", "--test")
		},
	}
}
