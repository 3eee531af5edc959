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

	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/contract"
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
// at its snapshot path; a session without a snapshot cannot use that (see
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
//   - cold: a clone, then the repo's session setup `go build ./...`. A
//     session without a snapshot has no /cache/go, and a repo env with
//     GOCACHE=/cache/go/build fails there ("mkdir /cache: read-only file
//     system"), so this case runs without GOCACHE: the build cache is the
//     sandbox's /tmp, which each command gets fresh.
//   - snapshot-empty-layer-cache: a snapshot restored into a layer cache
//     that is empty every iteration (pull, extract, copy).
//   - snapshot-warm-layer-cache: the layers already extracted (copy only).
//   - host-warm-build: `go build ./...` on the host with a warm cache, for
//     comparison with the in-session build.
func BenchmarkSessionStart(b *testing.B) {
	ctx := context.Background()
	subj := newBenchSubject(b)
	ch := channeltest.New(b)
	bare := ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
	subj.git("push", "--quiet", "--force", bare, "HEAD:refs/heads/main")
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

	var seq atomic.Int64
	session := func(b *testing.B, spec contract.Spec, layerCache string, want contract.WorkspaceSource) contract.Evidence {
		b.Helper()
		n := seq.Add(1)
		spec.SessionID, spec.AttemptID = fmt.Sprintf("s-bench-%d", n), fmt.Sprintf("a-bench-%d", n)
		code := ch.AddAttempt(spec)
		rep, err := Run(ctx, Config{
			ChannelURL:     ch.URL(),
			SessionID:      spec.SessionID,
			AttemptID:      spec.AttemptID,
			ClaimCode:      code,
			WorkDir:        workDir,
			SandboxPath:    goBinDir + ":" + DefaultSandboxPath,
			LayerCache:     layerCache,
			RunnerVersion:  "bench",
			RetryDelay:     -1,
			FinishTimeout:  5 * time.Minute,
			RequestTimeout: time.Minute,
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
	report := func(b *testing.B, start, build int64) {
		b.ReportMetric(float64(start)/float64(b.N), "agent-start-ms")
		b.ReportMetric(float64(build)/float64(b.N), "first-build-ms")
	}
	snapshotSpec := func(b *testing.B) contract.Spec {
		store, d := snapshot(b)
		spec := ch.Spec("s", "a", subj.sha, benchAgent)
		spec.Env = benchEnv(true)
		spec.Snapshot = &contract.Snapshot{Store: store, Digest: d.String(), Caches: benchCaches, Setup: []contract.Command{benchBuild}}
		return spec
	}

	b.Run("cold", func(b *testing.B) {
		spec := ch.Spec("s", "a", subj.sha, benchAgent)
		spec.Env = benchEnv(false)
		spec.Setup = []contract.Command{benchBuild}
		var start, build, setup int64
		b.ResetTimer()
		for range b.N {
			ev := session(b, spec, "", contract.WorkspaceClone)
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
			for _, c := range ev.Commands {
				if c.Phase == contract.PhaseSetup {
					setup += c.DurationMS
				}
			}
		}
		report(b, start, build)
		b.ReportMetric(float64(setup)/float64(b.N), "setup-ms")
	})

	b.Run("snapshot-empty-layer-cache", func(b *testing.B) {
		spec := snapshotSpec(b)
		var start, build int64
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			layers := filepath.Join(workDir, fmt.Sprintf("layers-empty-%d", i))
			b.StartTimer()
			ev := session(b, spec, layers, contract.WorkspaceSnapshot)
			b.StopTimer()
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
			if err := os.RemoveAll(layers); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		report(b, start, build)
	})

	b.Run("snapshot-warm-layer-cache", func(b *testing.B) {
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
		var cacheDir string
		for _, l := range ls { // exactly what a restore does first
			dir, err := images.ExtractLayer(ctx, l, layers)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "cache", "go")); err == nil {
				cacheDir = filepath.Join(dir, "cache", "go")
			}
		}
		var start, build int64
		b.ResetTimer()
		for range b.N {
			ev := session(b, spec, layers, contract.WorkspaceSnapshot)
			start += ev.Workspace.PrepareMS
			build += agentMS(b, ev)
		}
		b.StopTimer()
		report(b, start, build)

		// Where a warm restore's time goes: the copy of the cache layer
		// and its hand-over to the sandbox uid.
		if cacheDir != "" {
			dst := filepath.Join(workDir, "copy-probe")
			t0 := time.Now()
			if err := copyTree(cacheDir, dst); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := chownTree(dst, defaultSandboxID, defaultSandboxID); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			b.ReportMetric(float64(t1.Sub(t0).Milliseconds()), "cache-copy-ms")
			b.ReportMetric(float64(t2.Sub(t1).Milliseconds()), "cache-chown-ms")
			b.Logf("/cache/go: %s", benchDu(b, dst))
			_ = os.RemoveAll(dst)
		}
	})

	b.Run("host-warm-build", func(b *testing.B) {
		var cold, warm time.Duration
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			cache := b.TempDir()
			env := []string{"GOFLAGS=" + benchGoFlags, "GOTOOLCHAIN=local", "GOCACHE=" + cache}
			t0 := time.Now()
			benchRun(b, subj.dir, env, "go", "build", "./...")
			cold += time.Since(t0)
			b.StartTimer()
			t1 := time.Now()
			benchRun(b, subj.dir, env, "go", "build", "./...")
			warm += time.Since(t1)
		}
		b.ReportMetric(float64(warm.Milliseconds())/float64(b.N), "host-warm-build-ms")
		b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "host-cold-build-ms")
	})
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

// BenchmarkSnapshotRefreshBytes builds a snapshot of the subject into a
// registry, then refreshes it after a one-file change, and reports the
// bytes the refresh pushed against the image's and the workspace layer's
// compressed sizes.
func BenchmarkSnapshotRefreshBytes(b *testing.B) {
	ctx := context.Background()
	subj := newBenchSubject(b)
	reg := newBenchRegistry(b)
	store, err := images.NewRegistryStore(strings.TrimPrefix(reg.server.URL, "http://")+"/inspect", remote.WithTransport(reg.server.Client().Transport))
	if err != nil {
		b.Fatal(err)
	}
	workDir := sandboxtest.ReachableDir(b)
	repo := contract.Repo{Owner: "acme", Name: "widgets", CloneURL: subj.dir, DefaultBranch: "main"}

	t0 := time.Now()
	first, err := BuildSnapshot(ctx, benchSnapshotBuild(repo, subj.sha, store, workDir))
	if err != nil {
		b.Fatal(err)
	}
	firstBlobs, _ := reg.take()
	b.Logf("first snapshot %s in %s (setup %d ms), pushed %d blob bytes", first.Snapshot.Digest, time.Since(t0).Round(time.Second), first.Setup[0].DurationMS, firstBlobs)

	var pushed, manifests, imageBytes, wsBytes int64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		sha := subj.changeOneFile(i)
		reg.take()
		b.StartTimer()
		res, err := BuildSnapshot(ctx, benchSnapshotBuild(repo, sha, store, workDir))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if res.SetupRan || len(res.Rebuilt) != 0 || len(res.Reused) != 1 {
			b.Fatalf("the refresh was not a workspace-only one: %+v", res)
		}
		blobs, man := reg.take()
		pushed += blobs
		manifests += man
		img, err := store.Image(ctx, "acme/widgets", res.Snapshot.Digest)
		if err != nil {
			b.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			b.Fatal(err)
		}
		imageBytes += m.Config.Size
		for _, d := range m.Layers {
			imageBytes += d.Size
			if d.Annotations[images.AnnotationLayer] == images.LayerKindWorkspace {
				wsBytes += d.Size
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(pushed)/n, "refresh-pushed-bytes")
	b.ReportMetric(float64(manifests)/n, "refresh-manifest-bytes")
	b.ReportMetric(float64(imageBytes)/n, "image-bytes")
	b.ReportMetric(float64(wsBytes)/n, "workspace-layer-bytes")
	b.ReportMetric(float64(pushed)/float64(wsBytes), "refresh-over-workspace")
}
