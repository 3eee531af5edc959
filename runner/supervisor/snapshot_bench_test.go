package supervisor

// Benchmarks for issue 5 (snapshot images), on a real mid-size Go module:
// this repository at HEAD with its dependencies vendored. They take
// minutes and run only under `make bench` (go test runs no benchmark
// without -bench); nothing here runs at package init. Results are written
// down in BENCHMARKS.md, "Snapshot start (issue 5)".

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// The subject's build settings. -mod=vendor because the sandbox has no
// network; -trimpath so the build cache's keys hold no absolute path (see
// the snapshots notes); -buildvcs=false so a build does not shell out to git
// or stamp the checkout's state into the binaries (the host's own go env
// sets it too, so the host build below is the same build).
const (
	benchGoFlags   = "-mod=vendor -trimpath -buildvcs=false"
	benchGoCache   = "/cache/go/build"
	benchSetupTime = 30 * time.Minute
)

var (
	benchCaches = []contract.Cache{{Path: "/cache/go", Lockfiles: []string{"go.sum"}}}
	benchBuild  = contract.Command{Name: "build", Argv: []string{"go", "build", "./..."}, Timeout: contract.Duration(benchSetupTime)}
	// The agent is the in-session first build. The supervisor appends the
	// prompt file to the agent's argv: sh takes it as $1 and go never sees
	// it.
	benchAgent = []string{"sh", "-c", "go build ./...", "agent"}
)

// benchEnv is the repo's env in the sandbox. withCache puts the build cache
// at its snapshot path; the cold case goes without (see
// BenchmarkSessionStart).
func benchEnv(withCache bool) map[string]string {
	env := map[string]string{"GOFLAGS": benchGoFlags, "GOTOOLCHAIN": "local"}
	if withCache {
		env["GOCACHE"] = benchGoCache
	}
	return env
}

// benchSubject is this repository at HEAD with vendor/ made by `go mod
// vendor`, committed as one commit on main of a git repository in dir.
type benchSubject struct {
	tb  testing.TB
	dir string
	sha string
}

func newBenchSubject(tb testing.TB) *benchSubject {
	tb.Helper()
	top := strings.TrimSpace(benchRun(tb, "", nil, "git", "rev-parse", "--show-toplevel"))
	root := tb.TempDir()
	archive := filepath.Join(root, "head.tar")
	dir := filepath.Join(root, "subject")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	benchRun(tb, "", nil, "git", "-C", top, "archive", "--format=tar", "-o", archive, "HEAD")
	benchRun(tb, "", nil, "tar", "-xf", archive, "-C", dir)
	if err := os.Remove(archive); err != nil {
		tb.Fatal(err)
	}
	benchRun(tb, dir, []string{"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}, "go", "mod", "vendor")
	s := &benchSubject{tb: tb, dir: dir}
	s.git("init", "--quiet", "--initial-branch=main")
	s.git("add", "-A")
	s.git("commit", "--quiet", "-m", "subject")
	s.sha = strings.TrimSpace(s.git("rev-parse", "HEAD"))
	files := strings.Count(s.git("ls-files"), "\n")
	tb.Logf("subject: %s at HEAD of %s, %d files with vendor/, %s", s.sha[:12], top, files, benchDu(tb, dir))
	return s
}

func (s *benchSubject) git(args ...string) string {
	s.tb.Helper()
	return benchRun(s.tb, s.dir, []string{
		"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com",
	}, "git", args...)
}

// changeOneFile commits a one-line change to one Go source file and returns
// the new commit.
func (s *benchSubject) changeOneFile(n int) string {
	s.tb.Helper()
	p := filepath.Join(s.dir, "runner", "supervisor", "supervisor.go")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.tb.Fatal(err)
	}
	if _, err := fmt.Fprintf(f, "\n// refresh %d\n", n); err != nil {
		s.tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		s.tb.Fatal(err)
	}
	s.git("commit", "--quiet", "-am", fmt.Sprintf("refresh %d", n))
	return strings.TrimSpace(s.git("rev-parse", "HEAD"))
}

// benchLoad is the host's load average, from /proc/loadavg.
func benchLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// benchRun runs a command on the host and returns its stdout.
func benchRun(tb testing.TB, dir string, env []string, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return string(out)
}

func benchDu(tb testing.TB, dir string) string {
	tb.Helper()
	f := strings.Fields(benchRun(tb, "", nil, "du", "-sh", dir))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func benchSnapshotBuild(repo contract.Repo, sha string, store images.Store, workDir string) SnapshotBuild {
	return SnapshotBuild{
		Repo:        repo,
		SHA:         sha,
		Setup:       []contract.Command{benchBuild},
		Caches:      benchCaches,
		Env:         benchEnv(true),
		Store:       store,
		Version:     "bench",
		WorkDir:     workDir,
		SandboxPath: goBinDir + ":" + DefaultSandboxPath,
	}
}

// BenchmarkSessionStart measures, per case, the time from the supervisor's
// start to the agent's start (evidence Workspace.PrepareMS) and the first
// `go build ./...` in the session (the agent's own command):
//
//   - cold: a clone, then the repo's session setup `go build ./...`. It
//     runs without GOCACHE, as it was first measured (when
//     GOCACHE=/cache/go/build failed without a snapshot, "mkdir /cache:
//     read-only file system"; decision 0020 made it a writable directory
//     for the whole session): the build cache is the sandbox's /tmp,
//     which each command gets fresh, so the agent's build is cold too.
//   - snapshot-empty-layer-cache: a snapshot restored into a layer cache
//     that is empty every iteration (pull, extract, copy).
//   - snapshot-warm-layer-cache: the layers already extracted (copy only).
//   - host-warm-build: `go build ./...` on the host with a warm cache, for
//     comparison with the in-session build (and the host's cold build,
//     which warms that cache). The snapshot cases also time a warm host
//     build right after each session, so that the two builds they compare
//     ran under the same load.
func BenchmarkSessionStart(b *testing.B) {
	ctx := context.Background()
	subj := newBenchSubject(b)
	ch := channeltest.New(b)
	bare := ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
	// Fetched into the stand-in's bare repository rather than pushed: its
	// receive hook plays GitHub's rule that an App may not push workflow
	// files, and this repository has some.
	benchRun(b, "", nil, "git", "-C", bare, "fetch", "--quiet", subj.dir, "+refs/heads/main:refs/heads/main")
	ch.GitHub.ResyncRefs(channeltest.Owner, channeltest.Repo)
	workDir := sandboxtest.ReachableDir(b)

	// The snapshot, built once, when a case first needs it.
	var (
		once     sync.Once
		storeRef string
		digest   v1.Hash
		snapErr  error
	)
	snapshot := func(b *testing.B) (string, v1.Hash) {
		b.Helper()
		once.Do(func() {
			dir := filepath.Join(workDir, "snapshots")
			store, err := images.NewLayoutStore(dir)
			if err != nil {
				snapErr = err
				return
			}
			build := benchSnapshotBuild(contract.Repo{Owner: channeltest.Owner, Name: channeltest.Repo, CloneURL: bare, DefaultBranch: "main"},
				subj.sha, store, filepath.Join(workDir, "build"))
			if err := os.Mkdir(build.WorkDir, 0o755); err != nil {
				snapErr = err
				return
			}
			start := time.Now()
			res, err := BuildSnapshot(ctx, build)
			if err != nil {
				snapErr = err
				return
			}
			b.Logf("snapshot %s built in %s (setup %d ms)", res.Snapshot.Digest, time.Since(start).Round(time.Second), res.Setup[0].DurationMS)
			storeRef, digest = images.LayoutPrefix+dir, res.Snapshot.Digest
			_ = os.RemoveAll(build.WorkDir) // its layer cache: sessions use their own
		})
		if snapErr != nil {
			b.Fatal(snapErr)
		}
		return storeRef, digest
	}

	// The host's build: the cache is warmed once (the cold build), then
	// each call times a warm `go build ./...`.
	hostEnv := []string{"GOFLAGS=" + benchGoFlags, "GOTOOLCHAIN=local", "GOCACHE=" + b.TempDir()}
	var (
		hostOnce sync.Once
		hostCold time.Duration
	)
	hostBuild := func(b *testing.B) time.Duration {
		b.Helper()
		hostOnce.Do(func() {
			t0 := time.Now()
			benchRun(b, subj.dir, hostEnv, "go", "build", "./...")
			hostCold = time.Since(t0)
		})
		t0 := time.Now()
		benchRun(b, subj.dir, hostEnv, "go", "build", "./...")
		return time.Since(t0)
	}

	var seq atomic.Int64
	session := func(b *testing.B, spec contract.Spec, layerCache, gitBin string, want contract.WorkspaceSource) contract.Evidence {
		b.Helper()
		n := seq.Add(1)
		spec.SessionID, spec.AttemptID = fmt.Sprintf("s-bench-%d", n), fmt.Sprintf("a-bench-%d", n)
		code := ch.AddAttempt(spec)
		rep, err := Run(ctx, Config{
			ChannelURL:      ch.URL(),
			SessionID:       spec.SessionID,
			AttemptID:       spec.AttemptID,
			ClaimCode:       code,
			WorkDir:         workDir,
			SandboxPath:     goBinDir + ":" + DefaultSandboxPath,
			LayerCache:      layerCache,
			Git:             gitBin,
			RunnerVersion:   "bench",
			ForwarderBinary: forwarder,
			RetryDelay:      -1,
			FinishTimeout:   5 * time.Minute,
			RequestTimeout:  time.Minute,
		})
		if err != nil {
			b.Fatalf("Run: %v", err)
		}
		ev := rep.Evidence
		if ev.Outcome != contract.OutcomeOK || ev.Workspace == nil || ev.Workspace.Source != want {
			for _, c := range ev.Commands {
				b.Logf("%s (%s) exit %d in %d ms:\n%s", c.Name, c.Phase, c.ExitCode, c.DurationMS, c.OutputTail)
			}
			b.Fatalf("outcome %s (%s), workspace %+v, want ok from %s", ev.Outcome, ev.Reason, ev.Workspace, want)
		}
		return ev
	}
	agentMS := func(b *testing.B, ev contract.Evidence) int64 {
		b.Helper()
		for _, c := range ev.Commands {
			if c.Phase == contract.PhaseAgent {
				return c.DurationMS
			}
		}
		b.Fatalf("no agent command in %+v", ev.Commands)
		return 0
	}
	report := func(b *testing.B, start, build int64, host time.Duration) {
		b.ReportMetric(float64(start)/float64(b.N), "agent-start-ms")
		b.ReportMetric(float64(build)/float64(b.N), "first-build-ms")
		if host > 0 {
			b.ReportMetric(float64(host.Milliseconds())/float64(b.N), "host-warm-build-ms")
			b.ReportMetric(float64(build)/float64(host.Milliseconds()), "build-over-host")
		}
	}
	snapshotSpec := func(b *testing.B) contract.Spec {
		store, d := snapshot(b)
		spec := ch.Spec("s", "a", subj.sha, benchAgent)
		spec.Env = benchEnv(true)
		spec.Snapshot = &contract.Snapshot{Store: store, Digest: d.String(), Caches: benchCaches, Setup: []contract.Command{benchBuild}}
		return spec
	}

	// The machine may be shared: each case logs the load average around
	// it, to read its numbers by.
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			before := benchLoad()
			f(b)
			b.Logf("load average (1, 5, 15 min): %s before, %s after", before, benchLoad())
		})
	}

	run("host-warm-build", func(b *testing.B) {
		hostBuild(b) // the cold build, once, then a warm one
		b.ResetTimer()
		var warm time.Duration
		for range b.N {
			warm += hostBuild(b)
		}
		b.ReportMetric(float64(warm.Milliseconds())/float64(b.N), "host-warm-build-ms")
		b.ReportMetric(float64(hostCold.Milliseconds()), "host-cold-build-ms")
	})

	run("cold", func(b *testing.B) {
		spec := ch.Spec("s", "a", subj.sha, benchAgent)
		spec.Env = benchEnv(false)
		spec.Setup = []contract.Command{benchBuild}
		var start, build, setup int64
		b.ResetTimer()
		for range b.N {
			ev := session(b, spec, "", "", contract.WorkspaceClone)
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
			for _, c := range ev.Commands {
				if c.Phase == contract.PhaseSetup {
					setup += c.DurationMS
				}
			}
		}
		report(b, start, build, 0)
		b.ReportMetric(float64(setup)/float64(b.N), "setup-ms")
	})

	run("snapshot-empty-layer-cache", func(b *testing.B) {
		spec := snapshotSpec(b)
		hostBuild(b) // warm before the timer, if not yet
		var start, build int64
		var host time.Duration
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			layers := filepath.Join(workDir, fmt.Sprintf("layers-empty-%d", i))
			b.StartTimer()
			ev := session(b, spec, layers, "", contract.WorkspaceSnapshot)
			b.StopTimer()
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
			host += hostBuild(b)
			if err := os.RemoveAll(layers); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.StopTimer()
		report(b, start, build, host)
	})

	run("snapshot-warm-layer-cache", func(b *testing.B) {
		spec := snapshotSpec(b)
		layers := filepath.Join(workDir, "layers-warm")
		store, err := images.OpenStore(spec.Snapshot.Store)
		if err != nil {
			b.Fatal(err)
		}
		img, err := store.Image(ctx, channeltest.Owner+"/"+channeltest.Repo, digest)
		if err != nil {
			b.Fatal(err)
		}
		ls, err := img.Layers()
		if err != nil {
			b.Fatal(err)
		}
		var cacheDir, wsDir string
		for _, l := range ls { // exactly what a restore does first
			dir, err := images.ExtractLayer(ctx, l, layers)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "cache", "go")); err == nil {
				cacheDir = filepath.Join(dir, "cache", "go")
			}
			if _, err := os.Stat(filepath.Join(dir, "workspace")); err == nil {
				wsDir = filepath.Join(dir, "workspace")
			}
		}
		if cacheDir == "" || wsDir == "" {
			b.Fatalf("the snapshot's layers hold no /cache/go or no /workspace")
		}
		hostBuild(b) // warm before the timer, if not yet
		// One untimed session first, so the layer cache is warm exactly as
		// a restore leaves it (its own layout, the layers given to the
		// sandbox uid), not only extracted.
		session(b, spec, layers, "", contract.WorkspaceSnapshot)
		var start, build int64
		var host time.Duration
		b.ResetTimer()
		for range b.N {
			ev := session(b, spec, layers, "", contract.WorkspaceSnapshot)
			b.StopTimer()
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
			host += hostBuild(b)
			b.StartTimer()
		}
		b.StopTimer()
		report(b, start, build, host)

		// Where a warm restore's time goes, measured apart from the timed
		// sessions: the copies of the workspace and cache layers alone,
		// and one more session with git behind a wrapper that logs each
		// command's start and end. The supervisor runs its git commands
		// after the restore (claim, pull, copies) and before the hand-over
		// to the sandbox uid and the prompt, so the log splits the time to
		// the agent's start in three.
		for _, c := range []struct{ src, metric string }{{wsDir, "workspace-copy-ms"}, {cacheDir, "cache-copy-ms"}} {
			dst := filepath.Join(workDir, "copy-probe")
			t0 := time.Now()
			if err := copyTree(c.src, dst); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(t0).Milliseconds()), c.metric)
			b.Logf("%s: %s", c.metric, benchDu(b, dst))
			if err := os.RemoveAll(dst); err != nil {
				b.Fatal(err)
			}
		}
		gitBin, gitLog := benchGitWrapper(b)
		ev := session(b, spec, layers, gitBin, contract.WorkspaceSnapshot)
		agentAt := ev.StartedAt.Add(time.Duration(ev.Workspace.PrepareMS) * time.Millisecond)
		g := benchGitTimes(b, gitLog, agentAt)
		b.ReportMetric(float64(ev.Workspace.PrepareMS), "diag-agent-start-ms")
		b.ReportMetric(float64(g.first.Sub(ev.StartedAt).Milliseconds()), "diag-until-git-ms")
		b.ReportMetric(float64(g.total.Milliseconds()), "diag-git-ms")
		b.ReportMetric(float64(agentAt.Sub(g.last).Milliseconds()), "diag-after-git-ms")
	})

}

// benchGitWrapper writes a git that runs the real one and appends "<start
// ns> <end ns> <args>" to a log, and returns both paths.
func benchGitWrapper(tb testing.TB) (bin, logFile string) {
	tb.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	bin, logFile = filepath.Join(dir, "git"), filepath.Join(dir, "git.log")
	script := fmt.Sprintf(`#!/bin/sh
s=$(date +%%s%%N)
%q "$@"
rc=$?
e=$(date +%%s%%N)
while [ "$1" = -c ]; do shift 2; done
echo "$s $e $*" >> %q
exit $rc
`, gitPath, logFile)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	return bin, logFile
}

// benchGitSpan is what the git commands before the agent took: their
// summed durations, the first one's start and the last one's end.
type benchGitSpan struct {
	total       time.Duration
	first, last time.Time
}

// benchGitTimes reads the log of benchGitWrapper for the commands that
// started before the agent did, and logs the slow ones.
func benchGitTimes(tb testing.TB, logFile string, agentAt time.Time) benchGitSpan {
	tb.Helper()
	b, err := os.ReadFile(logFile)
	if err != nil {
		tb.Fatal(err)
	}
	var span benchGitSpan
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s, e int64
		if _, err := fmt.Sscan(line, &s, &e); err != nil {
			tb.Fatalf("git log line %q: %v", line, err)
		}
		start, end := time.Unix(0, s), time.Unix(0, e)
		if start.After(agentAt) {
			continue
		}
		if span.first.IsZero() {
			span.first = start
		}
		span.last = end
		d := end.Sub(start)
		span.total += d
		var args []string
		for _, a := range strings.Fields(line)[2:] {
			if !strings.HasPrefix(a, "--git-dir=") && !strings.HasPrefix(a, "--work-tree=") && !strings.HasPrefix(a, "--quiet") {
				args = append(args, filepath.Base(a))
			}
		}
		if d >= 100*time.Millisecond { // a benchmark's log keeps 10 lines
			tb.Logf("git %5d ms: %.60s", d.Milliseconds(), strings.Join(args, " "))
		}
	}
	if span.first.IsZero() {
		tb.Fatal("no git command ran before the agent")
	}
	return span
}

// benchRegistry is an in-process registry that counts the bytes of blob
// upload bodies and of manifest bodies.
type benchRegistry struct {
	server    *httptest.Server
	blobs     atomic.Int64
	manifests atomic.Int64
}

func newBenchRegistry(tb testing.TB) *benchRegistry {
	r := &benchRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case strings.Contains(req.URL.Path, "/blobs/uploads/") &&
			(req.Method == http.MethodPost || req.Method == http.MethodPatch || req.Method == http.MethodPut):
			req.Body = &benchCountingBody{ReadCloser: req.Body, n: &r.blobs}
		case strings.Contains(req.URL.Path, "/manifests/") && req.Method == http.MethodPut:
			req.Body = &benchCountingBody{ReadCloser: req.Body, n: &r.manifests}
		}
		inner.ServeHTTP(w, req)
	}))
	tb.Cleanup(r.server.Close)
	return r
}

// take returns the bytes counted since the last call.
func (r *benchRegistry) take() (blobs, manifests int64) {
	return r.blobs.Swap(0), r.manifests.Swap(0)
}

type benchCountingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *benchCountingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// BenchmarkSnapshotRefreshBytes builds a snapshot of the subject (this
// repository, vendored) into a registry, then refreshes it after a change
// of each kind, and reports the blob bytes the refresh pushed against the
// bytes of the files the change touched and the workspace layer's size.
// The workspace is what a refresh moves (decision 0028); the builds run no
// setup, so no cache layer is in the figures (a dependency bump also
// rebuilds the caches its lockfile keys, whole). Each kind starts from a
// new base, so its figure is one drift on a fresh workspace layer. The
// one-line figure is the acceptance bound of issue 16: under 1 MB plus the
// changed file.
func BenchmarkSnapshotRefreshBytes(b *testing.B) {
	subj := newBenchSubject(b)
	for _, kind := range []struct {
		name   string
		change func(s *benchSubject, i int) (sha string, changedBytes int64)
	}{
		{"one-line", func(s *benchSubject, i int) (string, int64) {
			sha := s.changeOneFile(i)
			return sha, benchSize(s.tb, filepath.Join(s.dir, "runner", "supervisor", "supervisor.go"))
		}},
		{"100-files", func(s *benchSubject, i int) (string, int64) { return s.changeFiles(i, 100, ".go", "vendor/") }},
		{"dependency-bump", func(s *benchSubject, i int) (string, int64) { return s.bumpDependency(i) }},
	} {
		b.Run(kind.name, func(b *testing.B) {
			benchRefresh(b, subj, kind.change)
		})
	}
}

func benchRefresh(b *testing.B, subj *benchSubject, change func(*benchSubject, int) (string, int64)) {
	ctx := context.Background()
	reg := newBenchRegistry(b)
	store, err := images.NewRegistryStore(strings.TrimPrefix(reg.server.URL, "http://")+"/inspect", remote.WithTransport(reg.server.Client().Transport))
	if err != nil {
		b.Fatal(err)
	}
	workDir := sandboxtest.ReachableDir(b)
	repo := contract.Repo{Owner: "acme", Name: "widgets", CloneURL: subj.dir, DefaultBranch: "main"}
	buildAt := func(sha string) SnapshotResult {
		res, err := BuildSnapshot(ctx, SnapshotBuild{Repo: repo, SHA: sha, Store: store, Version: "bench", WorkDir: workDir, SandboxPath: DefaultSandboxPath})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	head := strings.TrimSpace(subj.git("rev-parse", "HEAD"))
	t0 := time.Now()
	first := buildAt(head)
	firstBlobs, _ := reg.take()
	b.Logf("first snapshot %s in %s, pushed %d blob bytes", first.Snapshot.Digest, time.Since(t0).Round(time.Millisecond), firstBlobs)

	var pushed, changed, wsBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		sha, n := change(subj, i)
		changed += n
		reg.take()
		b.StartTimer()
		res := buildAt(sha)
		b.StopTimer()
		blobs, _ := reg.take()
		pushed += blobs
		img, err := store.Image(ctx, "acme/widgets", res.Snapshot.Digest)
		if err != nil {
			b.Fatal(err)
		}
		ws, err := images.WorkspaceLayers(img)
		if err != nil {
			b.Fatal(err)
		}
		size, err := ws[0].Layer.Size()
		if err != nil {
			b.Fatal(err)
		}
		wsBytes += size
		b.StartTimer()
	}
	b.StopTimer()
	b.Logf("load average (1, 5, 15 min) at the end: %s", benchLoad())
	n := float64(b.N)
	b.ReportMetric(float64(pushed)/n, "refresh-pushed-bytes")
	b.ReportMetric(float64(changed)/n, "changed-file-bytes")
	b.ReportMetric(float64(wsBytes)/n, "workspace-layer-bytes")
	if b.Name() == "BenchmarkSnapshotRefreshBytes/one-line" && float64(pushed)/n >= float64(1<<20)+float64(changed)/n {
		b.Fatalf("a one-line refresh pushed %.0f bytes: not under 1 MB plus the changed file (%.0f)", float64(pushed)/n, float64(changed)/n)
	}
}

// changeFiles appends a line to the first n tracked files named *ext
// outside skipPrefix and commits; it returns the commit and the files'
// sizes after the change.
func (s *benchSubject) changeFiles(i, n int, ext, skipPrefix string) (string, int64) {
	s.tb.Helper()
	var total int64
	count := 0
	for name := range strings.Lines(s.git("ls-files")) {
		name = strings.TrimSpace(name)
		if count == n || !strings.HasSuffix(name, ext) || strings.HasPrefix(name, skipPrefix) {
			continue
		}
		p := filepath.Join(s.dir, filepath.FromSlash(name))
		benchAppend(s.tb, p, fmt.Sprintf("\n// refresh %d\n", i))
		total += benchSize(s.tb, p)
		count++
	}
	if count < n {
		s.tb.Fatalf("only %d files to change", count)
	}
	s.git("commit", "--quiet", "-am", fmt.Sprintf("refresh %d: %d files", i, n))
	return strings.TrimSpace(s.git("rev-parse", "HEAD")), total
}

// bumpDependency stands in for a version bump of one vendored module (no
// module proxy is reached): every file of vendor/github.com/rs/zerolog
// changes, and so do go.sum and vendor/modules.txt.
func (s *benchSubject) bumpDependency(i int) (string, int64) {
	s.tb.Helper()
	var total int64
	dir := filepath.Join(s.dir, "vendor", "github.com", "rs", "zerolog")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		benchAppend(s.tb, p, fmt.Sprintf("\n// bump %d\n", i))
		total += benchSize(s.tb, p)
		return nil
	})
	if err != nil {
		s.tb.Fatal(err)
	}
	for _, name := range []string{"go.sum", filepath.Join("vendor", "modules.txt")} {
		p := filepath.Join(s.dir, name)
		benchAppend(s.tb, p, fmt.Sprintf("# bump %d\n", i))
		total += benchSize(s.tb, p)
	}
	s.git("commit", "--quiet", "-am", fmt.Sprintf("bump %d", i))
	return strings.TrimSpace(s.git("rev-parse", "HEAD")), total
}

func benchAppend(tb testing.TB, p, text string) {
	tb.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func benchSize(tb testing.TB, p string) int64 {
	tb.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
