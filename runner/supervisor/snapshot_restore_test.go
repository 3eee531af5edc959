package supervisor

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// snapshotFixture is a repo on the GitHub stand-in with a snapshot of its
// first commit in an OCI layout: /workspace at that commit (with its own
// .git, as a snapshot build leaves it) and a cache at /cache/deps keyed by
// deps.lock.
type snapshotFixture struct {
	t      testing.TB
	ch     *channeltest.Server
	store  string
	digest string
	first  string
	// baseDigest is the digest of the base image the snapshot names.
	baseDigest string
	// reg logs the requests the snapshot's registry served.
	reg *requestLog
}

var (
	depsCache = []contract.Cache{{Path: "/cache/deps", Lockfiles: []string{"deps.lock"}}}
	depsSetup = []contract.Command{{Name: "deps", Argv: []string{"sh", "-c", "echo rebuilt > /cache/deps/marker"}, Timeout: contract.Duration(time.Minute)}}
	// depsEnv names a directory that holds the cache: the session makes it
	// writable and binds the cache inside it, restored or cold.
	depsEnv = map[string]string{"XDG_CACHE_HOME": "/cache"}
)

func newSnapshotFixture(t *testing.T) *snapshotFixture {
	t.Helper()
	return newSnapshotFixtureWith(t, nil)
}

// newSnapshotFixtureWith is newSnapshotFixture with a change to the
// snapshot's workspace before it is packaged.
func newSnapshotFixtureWith(t *testing.T, tamper func(work string)) *snapshotFixture {
	t.Helper()
	return newSnapshotFixtureOn(t, nil, tamper)
}

// newSnapshotFixtureOn is newSnapshotFixtureWith on a base image (nil: an
// empty one, so the sandbox binds the host's toolchain).
func newSnapshotFixtureOn(t testing.TB, base v1.Image, tamper func(work string)) *snapshotFixture {
	t.Helper()
	return newSnapshotFixtureCaching(t, base, tamper, false)
}

// modulesCache is a cache inside the workspace, as node_modules is: with
// newSnapshotFixtureCaching's withModules, the snapshot holds it with a
// marker file.
var modulesCache = contract.Cache{Path: "/workspace/modules", Lockfiles: []string{"deps.lock"}}

// newSnapshotFixtureCaching is newSnapshotFixtureOn whose snapshot also
// has modulesCache, when withModules is set.
func newSnapshotFixtureCaching(t testing.TB, base v1.Image, tamper func(work string), withModules bool) *snapshotFixture {
	t.Helper()
	ctx := context.Background()
	ch := channeltest.New(t)
	first := ch.Seed(map[string]string{"deps.lock": "v1\n", "main.txt": "zero\n", "old.txt": "deleted later\n"})

	// The snapshot's workspace, made as a snapshot build makes it.
	ws, err := newWorkspace(channeltest.WorkDir(t), "snapshot-build")
	if err != nil {
		t.Fatal(err)
	}
	g := &git{bin: "git", home: ws.homeDir, path: os.Getenv("PATH")}
	if err := ws.fetch(ctx, g, ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo), first, ""); err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(ws.work)
	}
	cacheHost := t.TempDir()
	if err := os.WriteFile(filepath.Join(cacheHost, "marker"), []byte("from-snapshot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key, err := cacheKey(ws.work, depsCache[0], depsSetup, depsEnv)
	if err != nil {
		t.Fatal(err)
	}
	caches := []images.Cache{{Path: "/cache/deps", HostDir: cacheHost, Key: key}}
	if withModules {
		modulesHost := t.TempDir()
		if err := os.WriteFile(filepath.Join(modulesHost, "marker"), []byte("modules-from-snapshot\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		key, err := cacheKey(ws.work, modulesCache, depsSetup, depsEnv)
		if err != nil {
			t.Fatal(err)
		}
		caches = append(caches, images.Cache{Path: modulesCache.Path, HostDir: modulesHost, Key: key})
	}
	if base == nil {
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	built, err := images.Assemble(images.Input{
		Base: base, BaseName: "registry.example.com/toolchain/test@sha256:" + strings.Repeat("0", 64),
		Repo: channeltest.Owner + "/" + channeltest.Repo, SHA: first, Version: "test", Built: time.Now().UTC(),
		WorkspaceDir: ws.work, Caches: caches,
	})
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	// In an OCI registry (go-containerregistry's, in process), as on
	// Buildkite; the layout store is the images package's to test.
	reqs := &requestLog{}
	reg := httptest.NewServer(reqs.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(reg.Close)
	storeName := strings.TrimPrefix(reg.URL, "http://") + "/inspect"
	store, err := images.OpenStore(storeName)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Push(ctx, built.Image)
	if err != nil {
		t.Fatal(err)
	}
	reqs.reset() // the push is not what a test counts
	return &snapshotFixture{t: t, ch: ch, store: storeName, digest: snap.Digest.String(), first: first, baseDigest: baseDigest.String(), reg: reqs}
}

// drift makes three commits after the snapshot's: one edits, one deletes,
// one adds (and, when lock is set, changes deps.lock).
func (f *snapshotFixture) drift(lock string) string {
	f.ch.Seed(map[string]string{"main.txt": "one\n"})
	f.deleteFile("old.txt")
	files := map[string]string{"new.txt": "new\n"}
	if lock != "" {
		files["deps.lock"] = lock
	}
	return f.ch.Seed(files)
}

// deleteFile commits the removal of name onto main, with git, behind the
// stand-in's back (its CommitFiles only adds and changes).
func (f *snapshotFixture) deleteFile(name string) {
	f.t.Helper()
	bare := f.ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
	work := f.t.TempDir()
	for _, args := range [][]string{
		{"clone", "-q", bare, work},
		{"-C", work, "rm", "-q", name},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "delete " + name},
		{"-C", work, "push", "-q", "origin", "HEAD:main"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			f.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	f.ch.GitHub.ResyncRefs(channeltest.Owner, channeltest.Repo)
}

// The agent sees what it reports in seen.txt: the pinned tree, the cache.
var reportAgent = []string{"sh", "-c", "test ! -e old.txt && cat main.txt new.txt /cache/deps/marker > seen.txt"}

func (f *snapshotFixture) spec(pinned string) contract.Spec {
	spec := f.ch.Spec("s-snap", "a-snap", pinned, reportAgent)
	spec.Env = depsEnv
	spec.Snapshot = &contract.Snapshot{
		Store: f.store, Digest: f.digest, Caches: depsCache,
		Setup: depsSetup,
	}
	return spec
}

// setupRan says whether the snapshot setup ("deps") ran and passed.
func setupRan(ev contract.Evidence) bool {
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseSetup && c.Name == "deps" && c.ExitCode == 0 {
			return true
		}
	}
	return false
}

func seenFile(t *testing.T, u contract.ResultUpload) string {
	t.Helper()
	if u.Manifest == nil {
		t.Fatalf("no manifest; evidence: %+v", u.Evidence)
	}
	for _, fc := range u.Manifest.Files {
		if fc.Path == "seen.txt" {
			return string(fc.Content)
		}
	}
	t.Fatalf("the agent wrote no seen.txt: %+v", u.Manifest.Files)
	return ""
}

func TestRestoredSnapshotCatchesUpToThePinnedCommit(t *testing.T) {
	f := newSnapshotFixture(t)
	pinned := f.drift("")
	spec := f.spec(pinned)
	spec.Agent.Command = []string{"sh", "-c", reportAgent[2] + ` && echo restored > "$XDG_CACHE_HOME/agent"`}
	h := newHarness(t, f.ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	// The env's directory (which holds the restored cache) was writable:
	// as root the agent wrote to its own view of it (decision 0057).
	agentFile := filepath.Join(rep.AttemptDir, "caches", "env-0", "agent")
	if os.Geteuid() == 0 {
		agentFile = filepath.Join(rep.AttemptDir, "overlay", "agent-0", "upper", "agent")
	}
	if b, err := os.ReadFile(agentFile); err != nil || string(b) != "restored\n" {
		t.Errorf("the agent's file in $XDG_CACHE_HOME: %q, %v", b, err)
	}
	w := ev.Workspace
	if w == nil || w.Source != contract.WorkspaceSnapshot || w.SnapshotDigest != f.digest || w.DriftCommits != 3 || w.SnapshotCreatedAt.IsZero() {
		t.Fatalf("workspace evidence = %+v", w)
	}
	// The snapshot's labels name its base, for the PR's where-it-ran lines.
	if b := w.BaseImage; b == nil || b.Name != "registry.example.com/toolchain/test" || b.Digest != f.baseDigest {
		t.Errorf("base image in evidence = %+v, want registry.example.com/toolchain/test at %s", b, f.baseDigest)
	}
	if got := seenFile(t, u); got != "one\nnew\nfrom-snapshot\n" {
		t.Errorf("the agent saw %q", got)
	}
	if os.Geteuid() == 0 {
		// A root supervisor mounts the layers instead of copying them: the
		// agent's file is in the workspace overlay's upper directory.
		if _, err := os.Stat(filepath.Join(rep.AttemptDir, "overlay", "workspace", "upper", "seen.txt")); err != nil {
			t.Errorf("the workspace was not an overlay: %v", err)
		}
	}
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseSetup {
			t.Errorf("setup ran though no lockfile changed: %+v", c)
		}
	}
}

// A cache inside the workspace (node_modules) is restored with it, and is
// there for the agent and for verify, whether the supervisor mounts the
// workspace layer (as root) or copies it: its layer comes before the
// workspace's in the image, and the workspace's overlay must not hide it.
func TestRestoredWorkspaceCacheIsInTheWorkspace(t *testing.T) {
	f := newSnapshotFixtureCaching(t, nil, nil, true)
	pinned := f.drift("")
	spec := f.spec(pinned)
	spec.Snapshot.Caches = append(slices.Clone(depsCache), modulesCache)
	spec.Agent.Command = []string{"sh", "-c", reportAgent[2] + " && cat modules/marker >> seen.txt"}
	spec.Verify = []contract.Command{{Name: "modules", Argv: []string{"grep", "-q", "modules-from-snapshot", "modules/marker"}, Timeout: contract.Duration(time.Minute)}}
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	if u.Evidence.Workspace == nil || u.Evidence.Workspace.Source != contract.WorkspaceSnapshot {
		t.Fatalf("workspace evidence = %+v", u.Evidence.Workspace)
	}
	if got := seenFile(t, u); got != "one\nnew\nfrom-snapshot\nmodules-from-snapshot\n" {
		t.Errorf("the agent saw %q", got)
	}
	if setupRan(u.Evidence) {
		t.Errorf("the snapshot setup ran though no lockfile changed: %+v", u.Evidence.Commands)
	}
}

// A root supervisor stacks a cache inside the workspace under the
// workspace's overlay instead of copying it: nothing of the cache is in
// the overlay's upper directory unless written, and the directory is no
// mount point, so the agent (or a setup's `npm ci`) can still remove it.
func TestRestoredWorkspaceCacheIsStackedNotCopied(t *testing.T) {
	f := newSnapshotFixtureCaching(t, nil, nil, true)
	pinned := f.drift("")
	spec := f.spec(pinned)
	spec.Snapshot.Caches = append(slices.Clone(depsCache), modulesCache)
	spec.Agent.Command = []string{"sh", "-c", "cat modules/marker > seen.txt && rm -rf modules && test ! -e modules"}
	h := newHarness(t, f.ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	if got := seenFile(t, u); got != "modules-from-snapshot\n" {
		t.Errorf("the agent saw %q", got)
	}
	if os.Geteuid() != 0 {
		return // the copy: what TestRestoredWorkspaceCacheIsInTheWorkspace covers
	}
	upper := filepath.Join(rep.AttemptDir, "overlay", "workspace", "upper", "modules")
	if fi, err := os.Lstat(upper); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("the workspace overlay's upper directory holds %s other than as the agent's removal (a whiteout): %v, %v", upper, fi, err)
	}
}

func TestChangedLockfileRerunsTheSnapshotSetup(t *testing.T) {
	f := newSnapshotFixture(t)
	pinned := f.drift("v2\n")
	h := newHarness(t, f.ch, f.spec(pinned))
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", u.Evidence.Outcome, u.Evidence.Reason)
	}
	if !setupRan(u.Evidence) {
		t.Errorf("the snapshot setup did not run: %+v", u.Evidence.Commands)
	}
	if got := seenFile(t, u); got != "one\nnew\nrebuilt\n" {
		t.Errorf("the agent saw %q", got)
	}
}

// A snapshot that cannot be restored is not fatal: the session clones
// cold, and the evidence says so.
func TestUnrestorableSnapshotFallsBackToAColdClone(t *testing.T) {
	f := newSnapshotFixture(t)
	pinned := f.drift("")
	spec := f.spec(pinned)
	spec.Snapshot.Digest = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	spec.Agent.Command = []string{"sh", "-c", "cat main.txt new.txt > seen.txt"}
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", u.Evidence.Outcome, u.Evidence.Reason)
	}
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone || w.SnapshotDigest != "" {
		t.Fatalf("workspace evidence = %+v", w)
	}
	// Cold, the caches are empty directories at their paths, and the
	// snapshot setup fills them.
	if !setupRan(u.Evidence) {
		t.Errorf("the snapshot setup did not run on the cold clone: %+v", u.Evidence.Commands)
	}
	if got := seenFile(t, u); got != "one\nnew\n" {
		t.Errorf("the agent saw %q", got)
	}
}

// A repo whose snapshot is not built yet: the spec carries its caches and
// setup but no image; the session binds empty caches and runs the setup.
func TestSessionBeforeTheFirstSnapshotRunsItsSetup(t *testing.T) {
	f := newSnapshotFixture(t)
	pinned := f.drift("")
	spec := f.spec(pinned)
	spec.Snapshot.Store, spec.Snapshot.Digest = "", ""
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone {
		t.Fatalf("workspace evidence = %+v", w)
	}
	if got := seenFile(t, u); got != "one\nnew\nrebuilt\n" {
		t.Errorf("the agent saw %q", got)
	}
}

// A layer cache someone else could write (planted in a shared temp dir, or
// left world-writable) is not trusted: the session clones cold instead.
func TestLayerCacheWritableByOthersIsRefused(t *testing.T) {
	f := newSnapshotFixture(t)
	pinned := f.drift("")
	h := newHarness(t, f.ch, f.spec(pinned))
	planted := filepath.Join(h.workDir, "planted-layers")
	if err := os.Mkdir(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	h.cfg.LayerCache = planted
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", u.Evidence.Outcome, u.Evidence.Reason)
	}
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone {
		t.Fatalf("workspace evidence = %+v, want a cold clone", w)
	}
	if entries, _ := os.ReadDir(planted); len(entries) != 0 {
		t.Errorf("something was extracted into the planted cache: %v", entries)
	}
}

// A session pinned at the snapshot's own commit fetches nothing from the
// remote: the snapshot has it all.
func TestSnapshotAtThePinnedCommitFetchesNothing(t *testing.T) {
	f := newSnapshotFixture(t)
	spec := f.spec(f.first)
	spec.Agent.Command = []string{"sh", "-c", "cat main.txt old.txt /cache/deps/marker > seen.txt"}
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", u.Evidence.Outcome, u.Evidence.Reason)
	}
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceSnapshot || w.DriftCommits != 0 {
		t.Fatalf("workspace evidence = %+v", w)
	}
	if got := seenFile(t, u); got != "zero\ndeleted later\nfrom-snapshot\n" {
		t.Errorf("the agent saw %q", got)
	}
	for _, r := range f.ch.GitHub.Requests() {
		if r.IsGit() {
			t.Errorf("a git request reached the remote: %s %s", r.Method, r.Path)
		}
	}
}

// A snapshot whose workspace cannot be caught up (its .git is broken) is
// dropped for a cold clone, not a failed session.
func TestSnapshotThatCannotCatchUpFallsBackToAColdClone(t *testing.T) {
	f := newSnapshotFixtureWith(t, func(work string) {
		if err := os.RemoveAll(filepath.Join(work, ".git", "objects")); err != nil {
			t.Fatal(err)
		}
	})
	pinned := f.drift("")
	h := newHarness(t, f.ch, f.spec(pinned))
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", u.Evidence.Outcome, u.Evidence.Reason)
	}
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone {
		t.Fatalf("workspace evidence = %+v, want a cold clone", w)
	}
	if got := seenFile(t, u); got != "one\nnew\nrebuilt\n" {
		t.Errorf("the agent saw %q", got)
	}
}

// A tampered image whose cache layer leads out of itself through a symlink
// (a -> /, cache path /x/a/etc) is refused: the session clones cold, and
// nothing on the host is touched.
func TestSnapshotLayerLeadingOutOfItselfIsRefused(t *testing.T) {
	f := newSnapshotFixture(t)
	ctx := context.Background()
	store, err := images.OpenStore(f.store)
	if err != nil {
		t.Fatal(err)
	}
	d, err := v1.NewHash(f.digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := store.Image(ctx, channeltest.Owner+"/"+channeltest.Repo, d)
	if err != nil {
		t.Fatal(err)
	}
	evil := t.TempDir()
	if err := os.Symlink("/", filepath.Join(evil, "a")); err != nil {
		t.Fatal(err)
	}
	layer, err := images.DirLayer(evil, "/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := mutate.Append(img, mutate.Addendum{Layer: layer, Annotations: map[string]string{
		images.AnnotationLayer: images.LayerKindCache, images.AnnotationCachePath: "/x/a/etc", images.AnnotationCacheKey: "sha256:" + strings.Repeat("0", 64),
	}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Push(ctx, tampered)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat("/etc")
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec(f.drift(""))
	spec.Snapshot.Digest = snap.Digest.String()
	spec.Snapshot.Caches = append(spec.Snapshot.Caches, contract.Cache{Path: "/x/a/etc", Lockfiles: []string{"deps.lock"}})
	h := newHarness(t, f.ch, spec)
	u := h.result(t, h.run(t, ctx))
	if w := u.Evidence.Workspace; w == nil || w.Source != contract.WorkspaceClone {
		t.Fatalf("workspace evidence = %+v, want a cold clone", w)
	}
	after, err := os.Stat("/etc")
	if err != nil {
		t.Fatal(err)
	}
	if after.Sys().(*syscall.Stat_t).Uid != before.Sys().(*syscall.Stat_t).Uid {
		t.Fatal("the host's /etc changed owner")
	}
	if matches, _ := filepath.Glob("/etc.owner-*"); len(matches) != 0 {
		t.Errorf("a marker was written beside /etc: %v", matches)
	}
}
