package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/images"
	runsupervisor "github.com/inspecthq/inspect/runner/supervisor"
)

// A session on a repo with a snapshot gets the newest one pinned by digest
// in its spec, with the caches and the snapshot setup to catch it up; the
// repo's env and session setup come along too.
func TestDispatchPinsTheNewestSnapshot(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent: {preset: command, command: [./agent.sh]}\n" +
		"env: {GOFLAGS: -trimpath}\n" +
		"setup: [{name: tools, run: [make, tools]}]\n" +
		"snapshot:\n  setup: [{name: deps, run: [go, mod, download]}]\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"}, "snapshots on")

	// Two snapshots; the second is the newest.
	dir := strings.TrimPrefix(h.cfg.Snapshots.Store, images.LayoutPrefix)
	st, err := images.NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	for i, sha := range []string{strings.Repeat("1", 40), strings.Repeat("2", 40)} {
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "go.sum"), []byte{byte('a' + i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		built, err := images.Assemble(images.Input{Base: base, Repo: owner + "/" + repoName, SHA: sha, Version: "test",
			Built: time.Now().Add(time.Duration(i) * time.Minute).UTC(), WorkspaceDir: ws})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := st.Push(context.Background(), built.Image)
		if err != nil {
			t.Fatal(err)
		}
		newest = snap.Digest.String()
	}

	_, spec := startOnPR(t, h, ex, "/inspect fix it")
	sn := spec.Snapshot
	if sn == nil || sn.Digest != newest || sn.Store != h.cfg.Snapshots.Store {
		t.Fatalf("snapshot = %+v, want %s in %s", sn, newest, h.cfg.Snapshots.Store)
	}
	if len(sn.Caches) != 1 || sn.Caches[0].Path != "/cache/go" || len(sn.Setup) != 1 || sn.Setup[0].Name != "snapshot deps" {
		t.Errorf("snapshot = %+v", sn)
	}
	if spec.Env["GOFLAGS"] != "-trimpath" || len(spec.Setup) != 1 || spec.Setup[0].Name != "tools" {
		t.Errorf("env %v, setup %+v", spec.Env, spec.Setup)
	}
}

// Without a snapshot yet, or with snapshots off, the session clones cold.
func TestDispatchWithoutASnapshotClonesCold(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent: {preset: command, command: [./agent.sh]}\n" +
		"snapshot:\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"}, "snapshots on")
	_, spec := startOnPR(t, h, ex, "/inspect fix it")
	if sn := spec.Snapshot; sn == nil || sn.Digest != "" || sn.Store != "" || len(sn.Caches) != 1 {
		t.Fatalf("snapshot = %+v, want the caches and no image", spec.Snapshot)
	}
}

// fakeBuilds stands in for supervisor.BuildSnapshot: it records each build
// and pushes a minimal snapshot of the build's SHA, as a real build would.
type fakeBuilds struct {
	mu     sync.Mutex
	builds []runsupervisor.SnapshotBuild
}

func (f *fakeBuilds) build(ctx context.Context, b runsupervisor.SnapshotBuild) (runsupervisor.SnapshotResult, error) {
	f.mu.Lock()
	f.builds = append(f.builds, b)
	f.mu.Unlock()
	ws, err := os.MkdirTemp("", "fake-snapshot-")
	if err != nil {
		return runsupervisor.SnapshotResult{}, err
	}
	defer os.RemoveAll(ws)
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	built, err := images.Assemble(images.Input{Base: base, Repo: b.Repo.Owner + "/" + b.Repo.Name, SHA: b.SHA, Version: b.Version,
		Built: time.Now().UTC(), WorkspaceDir: ws})
	if err != nil {
		return runsupervisor.SnapshotResult{}, err
	}
	snap, err := b.Store.Push(ctx, built.Image)
	return runsupervisor.SnapshotResult{Snapshot: snap}, err
}

func (f *fakeBuilds) all() []runsupervisor.SnapshotBuild {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]runsupervisor.SnapshotBuild(nil), f.builds...)
}

// A repo whose config asks for snapshots is built once it is known, then
// every snapshots.refresh, and within a minute of a push to its default
// branch; one build at a time, with a read token that is revoked after.
// The next session pins what was built.
func TestSnapshotsAreBuiltOnScheduleAndAfterAPush(t *testing.T) {
	h, ex := newSessionHarness(t)
	fb := &fakeBuilds{}
	h.stop()
	h.snapshotBuilder = fb.build
	h.start()
	withRealPR(t, h)
	head := h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent: {preset: command, command: [./agent.sh]}\n" +
		"snapshot:\n  setup: [{name: deps, run: [go, mod, download]}]\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"}, "snapshots on")

	// The first session reads the config: the repo goes on the schedule,
	// and the next pass of the workers builds it.
	startOnPR(t, h, ex, "/inspect fix it")
	h.runWorkers()
	builds := fb.all()
	if len(builds) != 1 {
		t.Fatalf("builds = %d, want 1\n%s", len(builds), h.logs)
	}
	b := builds[0]
	if b.SHA != head || b.Repo.Owner != owner || b.Token == "" || len(b.Caches) != 1 || len(b.Setup) != 1 || b.Setup[0].Name != "snapshot deps" {
		t.Errorf("build = %+v", b)
	}
	// The token is dead once the build is over.
	tc := github.NewClient(nil).WithAuthToken(b.Token)
	tc.BaseURL, _ = tc.BaseURL.Parse(h.gh.APIURL())
	if _, resp, err := tc.Repositories.Get(context.Background(), owner, repoName); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Errorf("the build's token still works: %v", err)
	}

	// Nothing more before the refresh interval.
	h.clock.Advance(time.Minute)
	h.runWorkers()
	if n := len(fb.all()); n != 1 {
		t.Fatalf("builds = %d before the refresh, want 1", n)
	}
	// A push to main: built again within a minute.
	if code, _ := h.deliver("push", pushEvent(t, repoName, "calc.go")); code != 200 {
		t.Fatal(code)
	}
	h.clock.Advance(time.Minute)
	h.runWorkers()
	if n := len(fb.all()); n != 2 {
		t.Fatalf("builds = %d after a push, want 2", n)
	}
	// And every refresh after that.
	h.clock.Advance(h.cfg.Snapshots.Refresh)
	h.runWorkers()
	if n := len(fb.all()); n != 3 {
		t.Fatalf("builds = %d after the refresh, want 3", n)
	}
}
