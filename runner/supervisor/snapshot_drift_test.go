package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// bulkyFiles are n files of incompressible content, as vendored code is to
// a layer: about n*size bytes whatever the compression.
func bulkyFiles(n, size int) map[string]string {
	rng := rand.New(rand.NewPCG(1, 2))
	files := map[string]string{}
	for i := range n {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		files[fmt.Sprintf("vendor/mod%02d/file%03d.go", i%10, i)] = string(b)
	}
	return files
}

func TestRefreshPushesOnlyTheDriftAndSessionsSeeTheNewCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ch := channeltest.New(t)
	files := bulkyFiles(200, 8<<10) // 1.6 MB
	files["main.txt"] = "zero\n"
	files["old.txt"] = "deleted later\n"
	files["deps.lock"] = "v1\n"
	first := ch.Seed(files)
	reg := newBenchRegistry(t)
	store, err := images.NewRegistryStore(strings.TrimPrefix(reg.server.URL, "http://")+"/inspect", remote.WithTransport(reg.server.Client().Transport))
	if err != nil {
		t.Fatal(err)
	}
	workDir := sandboxtest.ReachableDir(t)
	cloneURL := ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
	build := func(sha string, n int) images.Snapshot {
		t.Helper()
		b := SnapshotBuild{
			Repo: contract.Repo{Owner: channeltest.Owner, Name: channeltest.Repo, CloneURL: cloneURL, DefaultBranch: "main"},
			SHA:  sha, Store: store, Version: "test", WorkDir: workDir, SandboxPath: DefaultSandboxPath,
			Caches: depsCache, Setup: depsSetup, Env: depsEnv,
			Now: func() time.Time { return time.Date(2030, 1, 2, 3, n, 0, 0, time.UTC) },
			Log: zerolog.New(zerolog.NewTestWriter(t)),
		}
		res, err := BuildSnapshot(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return res.Snapshot
	}
	layersOf := func(snap images.Snapshot) []images.WorkspaceLayer {
		t.Helper()
		img, err := store.Image(ctx, channeltest.Owner+"/"+channeltest.Repo, snap.Digest)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := images.WorkspaceLayers(img)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}

	build(first, 0)
	full, _ := reg.take()
	ws1 := layersOf(mustLatest(t, store))
	base, err := ws1[0].Layer.Size()
	if err != nil {
		t.Fatal(err)
	}
	if len(ws1) != 1 || base < 3<<19 {
		t.Fatalf("first snapshot: %d workspace layers, the base %d bytes (pushed %d)", len(ws1), base, full)
	}

	// A one-line change: the refresh pushes the drift, not the workspace.
	second := ch.Seed(map[string]string{"main.txt": "one\n"})
	build(second, 1)
	pushed, _ := reg.take()
	ws2 := layersOf(mustLatest(t, store))
	if len(ws2) != 2 || snapTestDigest(t, ws2[0].Layer) != snapTestDigest(t, ws1[0].Layer) {
		t.Fatalf("after a one-line change: %d workspace layers, base kept: %v", len(ws2), len(ws2) > 0 && snapTestDigest(t, ws2[0].Layer) == snapTestDigest(t, ws1[0].Layer))
	}
	if pushed > 64<<10 {
		t.Errorf("a one-line change pushed %d bytes (the first build %d, its workspace layer %d)", pushed, full, base)
	}
	t.Logf("first build pushed %d bytes; a one-line refresh %d", full, pushed)

	// A deletion and an addition stack a second drift.
	ch.Seed(map[string]string{"main.txt": "two\n"})
	f := &snapshotFixture{t: t, ch: ch}
	f.deleteFile("old.txt")
	third := ch.Seed(map[string]string{"new.txt": "new\n"})
	snap3 := build(third, 2)
	if pushed, _ := reg.take(); pushed > 64<<10 {
		t.Errorf("the second refresh pushed %d bytes", pushed)
	}
	if ws3 := layersOf(snap3); len(ws3) != 3 {
		t.Fatalf("after a second change: %d workspace layers", len(ws3))
	}

	// Sessions restore base + drifts: pinned at the snapshot's commit, and
	// caught up to a later one. The agent reports what it sees, and git in
	// the workspace agrees with the files.
	agent := []string{"sh", "-c", `test ! -e old.txt && cat main.txt new.txt /cache/deps/marker > seen.txt && git status --porcelain --untracked-files=no > git-status.txt && git log --format=%H -1 > head.txt`}
	fourth := ch.Seed(map[string]string{"main.txt": "three\n"})
	for _, tc := range []struct {
		pinned, main string
	}{{third, "two"}, {fourth, "three"}} {
		spec := ch.Spec("s-drift", "a-drift-"+tc.main, tc.pinned, agent)
		spec.Env = depsEnv
		spec.Snapshot = &contract.Snapshot{Store: strings.TrimPrefix(reg.server.URL, "http://") + "/inspect", Digest: snap3.Digest.String(), Caches: depsCache, Setup: depsSetup}
		h := newHarness(t, ch, spec)
		u := h.result(t, h.run(t, ctx))
		if u.Evidence.Outcome != contract.OutcomeOK || u.Evidence.Workspace == nil || u.Evidence.Workspace.Source != contract.WorkspaceSnapshot {
			t.Fatalf("pinned at %s: outcome %s (%s), workspace %+v", tc.main, u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Workspace)
		}
		got := map[string]string{}
		for _, fc := range u.Manifest.Files {
			got[fc.Path] = string(fc.Content)
		}
		if want := tc.main + "\nnew\nrebuilt\n"; got["seen.txt"] != want {
			t.Errorf("pinned at %s: the agent saw %q", tc.main, got["seen.txt"])
		}
		if got["git-status.txt"] != "" || strings.TrimSpace(got["head.txt"]) != tc.pinned {
			t.Errorf("pinned at %s: git status %q, HEAD %q", tc.main, got["git-status.txt"], got["head.txt"])
		}
	}
}

func mustLatest(t *testing.T, store images.Store) images.Snapshot {
	t.Helper()
	snap, err := store.Latest(context.Background(), channeltest.Owner+"/"+channeltest.Repo)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
