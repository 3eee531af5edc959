package supervisor

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// snapTestToken stands in for a read token: it must reach neither the
// build's output, nor its errors, nor the store.
const snapTestToken = "snapshot-read-token-0123456789abcdef"

// snapTestRepo is a git repository in a temp dir that tests commit to.
type snapTestRepo struct {
	t   *testing.T
	dir string
}

func newSnapTestRepo(t *testing.T, files map[string]string) *snapTestRepo {
	t.Helper()
	r := &snapTestRepo{t: t, dir: t.TempDir()}
	r.git("init", "--quiet", "--initial-branch=main")
	r.commit("initial", files)
	return r
}

func (r *snapTestRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (an empty content deletes one) and commits them,
// returning the new HEAD.
func (r *snapTestRepo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "--quiet", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// key is the cacheKey of a cache at the repository's current files, for a
// build with setup and env.
func (r *snapTestRepo) key(setup []contract.Command, env map[string]string, path string, lockfiles ...string) string {
	r.t.Helper()
	k, err := cacheKey(r.dir, contract.Cache{Path: path, Lockfiles: lockfiles}, setup, env)
	if err != nil {
		r.t.Fatal(err)
	}
	return k
}

// snapTestBuild is a build of repo at sha into store, with the sandbox's
// directories where its uid reaches them.
func snapTestBuild(t *testing.T, repo *snapTestRepo, sha string, store images.Store, workDir string, built time.Time, out io.Writer) SnapshotBuild {
	return SnapshotBuild{
		Repo:        contract.Repo{Owner: "acme", Name: "widget", CloneURL: repo.dir, DefaultBranch: "main"},
		SHA:         sha,
		Token:       snapTestToken,
		Store:       store,
		Version:     "test",
		WorkDir:     workDir,
		SandboxPath: goBinDir + ":" + DefaultSandboxPath,
		Now:         func() time.Time { return built },
		Log:         zerolog.New(zerolog.NewTestWriter(t)),
		Stdout:      out,
	}
}

func newSnapTestStore(t *testing.T) images.Store {
	t.Helper()
	// An OCI registry (go-containerregistry's, in process), as production
	// pushes to; the layout store is the images package's to test.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	s, err := images.OpenStore(strings.TrimPrefix(reg.URL, "http://") + "/inspect")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snapTestLayers returns the image's layers by kind: "base", "workspace",
// or the cache's path.
func snapTestLayers(t *testing.T, img v1.Image) map[string]v1.Layer {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Layer{}
	for _, d := range m.Layers {
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		switch d.Annotations[images.AnnotationLayer] {
		case images.LayerKindCache:
			out[d.Annotations[images.AnnotationCachePath]] = l
		case images.LayerKindWorkspace:
			out["workspace"] = l
		case images.LayerKindWorkspaceDrift:
			out["drift"] = l // the last one
		default:
			out["base"] = l
		}
	}
	return out
}

func snapTestDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	h, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// snapTestFiles reads a layer's entries: regular files' contents (up to
// 4 KiB each), "<dir>" for directories, "-> target" for symlinks.
func snapTestFiles(t *testing.T, l v1.Layer) map[string]string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		switch hdr.Typeflag {
		case tar.TypeDir:
			out[name] = "<dir>"
		case tar.TypeSymlink:
			out[name] = "-> " + hdr.Linkname
		default:
			b, err := io.ReadAll(io.LimitReader(tr, 4096))
			if err != nil {
				t.Fatal(err)
			}
			out[name] = string(b)
		}
	}
}

func snapTestImage(t *testing.T, store images.Store, snap images.Snapshot) v1.Image {
	t.Helper()
	img, err := store.Image(context.Background(), "acme/widget", snap.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func snapTestDigests(t *testing.T, store images.Store) []string {
	t.Helper()
	list, err := store.List(context.Background(), "acme/widget")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Digest.String())
	}
	return out
}

func TestSnapshotBuildRunsSetupThenReusesAndRebuildsCaches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	repo := newSnapTestRepo(t, map[string]string{
		"go.mod":    "module example.com/widget\n\ngo 1.21\n",
		"main.go":   "package main\n\nfunc main() { println(\"one\") }\n",
		"deps.lock": "v1\n",
	})
	shaA := repo.git("rev-parse", "HEAD")
	store := newSnapTestStore(t)
	workDir := sandboxtest.ReachableDir(t)
	caches := []contract.Cache{
		{Path: "/cache/go", Lockfiles: []string{"go.mod"}},
		{Path: "/workspace/node_modules", Lockfiles: []string{"deps.lock"}},
	}
	setup := []contract.Command{
		command("deps", time.Minute, "sh", "-c",
			`mkdir -p node_modules && echo "built-$(cat deps.lock)" > node_modules/out &&
			 if [ -f /cache/go/marker ]; then echo prefilled; else echo empty; fi > node_modules/go-state &&
			 echo run >> /cache/go/marker`),
		command("build", 5*time.Minute, "go", "build", "-o", "node_modules/bin", "."),
		// Setup's writes outside the caches never reach the image, not
		// even those to a directory the env names outside them, which is
		// writable for setup.
		command("scribble", time.Minute, "sh", "-c", `echo scribbled >> main.go && echo stray > stray.txt && echo xdg > "$XDG_CACHE_HOME/stray" && echo "token? `+snapTestToken+`"`),
	}
	env := map[string]string{"GOCACHE": "/cache/go/build", "GOTOOLCHAIN": "local", "GOFLAGS": "-trimpath -buildvcs=false", "XDG_CACHE_HOME": "/var/cache/xdg"}
	var out bytes.Buffer
	build := func(sha string, built time.Time) (SnapshotResult, error) {
		b := snapTestBuild(t, repo, sha, store, workDir, built, &out)
		b.Setup, b.Caches, b.Env = setup, caches, env
		return BuildSnapshot(ctx, b)
	}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	// 1. The first build runs setup and packages everything.
	res1, err := build(shaA, t0)
	if err != nil {
		t.Fatalf("first build: %v\noutput:\n%s", err, out.String())
	}
	if !res1.SetupRan || len(res1.Setup) != 3 || len(res1.Reused) != 0 || !slices.Equal(res1.Rebuilt, []string{"/cache/go", "/workspace/node_modules"}) {
		t.Fatalf("first build: %+v", res1)
	}
	for _, r := range res1.Setup {
		if !r.Succeeded() || r.Phase != contract.PhaseSetup {
			t.Errorf("setup %s: %+v", r.Name, r)
		}
	}
	if strings.Contains(out.String(), snapTestToken) || !strings.Contains(out.String(), contract.Redacted) ||
		strings.Contains(res1.Setup[2].OutputTail, snapTestToken) || strings.Contains(strings.Join(res1.Setup[2].Argv, " "), snapTestToken) {
		t.Errorf("the token was not redacted from setup's output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `--- snapshot setup "build"`) {
		t.Errorf("setup output has no command headers:\n%s", out.String())
	}
	img1 := snapTestImage(t, store, res1.Snapshot)
	desc, err := images.Describe(img1)
	if err != nil {
		t.Fatal(err)
	}
	wantCaches := []images.CacheInfo{
		{Path: "/cache/go", Key: repo.key(setup, env, "/cache/go", "go.mod")},
		{Path: "/workspace/node_modules", Key: repo.key(setup, env, "/workspace/node_modules", "deps.lock")},
	}
	if desc.Repo != "acme/widget" || desc.SHA != shaA || desc.Version != "test" || !desc.Built.Equal(t0) || !slices.Equal(desc.Caches, wantCaches) {
		t.Errorf("Describe = %+v, want caches %+v", desc, wantCaches)
	}
	if desc.Digest != res1.Snapshot.Digest {
		t.Errorf("digest %s, result says %s", desc.Digest, res1.Snapshot.Digest)
	}
	layers1 := snapTestLayers(t, img1)
	if len(layers1) != 3 {
		t.Fatalf("layers: %v", layers1)
	}
	// Its footprint is the pushed image's, read back from the store.
	if fp, err := images.FootprintOf(img1); err != nil || res1.Footprint != fp || fp.Layers != 3 || fp.Size == 0 {
		t.Errorf("footprint = %+v, the stored image's %+v (%v)", res1.Footprint, fp, err)
	}
	// The build's log, from the results: every command's header, the
	// token redacted.
	if log := contract.SnapshotLog(res1.Setup); !strings.Contains(log, "--- build: go build -o node_modules/bin . exited with status 0") ||
		strings.Contains(log, snapTestToken) || !strings.Contains(log, "token? "+contract.Redacted) {
		t.Errorf("log:\n%s", log)
	}
	for kind, l := range layers1 {
		for name := range snapTestFiles(t, l) {
			if strings.HasPrefix(name, "var/") {
				t.Errorf("layer %s holds %s, from the env's directory outside the caches", kind, name)
			}
		}
	}
	ws := snapTestFiles(t, layers1["workspace"])
	if ws["workspace/main.go"] != "package main\n\nfunc main() { println(\"one\") }\n" {
		t.Errorf("the workspace layer's main.go is %q: setup's scribble reached it", ws["workspace/main.go"])
	}
	if _, ok := ws["workspace/stray.txt"]; ok {
		t.Error("a file setup wrote outside the caches is in the workspace layer")
	}
	if _, ok := ws["workspace/.git/shallow"]; !ok {
		t.Error("the workspace layer has no shallow .git")
	}
	for name := range ws {
		if strings.HasPrefix(name, "workspace/node_modules") {
			t.Errorf("the workspace layer holds %s, which is the cache's", name)
		}
	}
	nm := snapTestFiles(t, layers1["/workspace/node_modules"])
	if nm["workspace/node_modules/out"] != "built-v1\n" || nm["workspace/node_modules/go-state"] != "empty\n" || nm["workspace/node_modules/bin"] == "" {
		t.Errorf("node_modules layer: out %q, go-state %q, bin %d bytes", nm["workspace/node_modules/out"], nm["workspace/node_modules/go-state"], len(nm["workspace/node_modules/bin"]))
	}
	gc := snapTestFiles(t, layers1["/cache/go"])
	if gc["cache/go/marker"] != "run\n" || gc["cache/go/build"] != "<dir>" {
		t.Errorf("/cache/go layer: marker %q, build %q", gc["cache/go/marker"], gc["cache/go/build"])
	}

	// 2. A source change keeps every lockfile: setup is skipped and both
	// cache layers are reused, digest for digest.
	shaB := repo.commit("source only", map[string]string{"main.go": "package main\n\nfunc main() { println(\"two\") }\n"})
	out.Reset()
	res2, err := build(shaB, t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("second build: %v", err)
	}
	if res2.SetupRan || len(res2.Setup) != 0 || len(res2.Rebuilt) != 0 || !slices.Equal(res2.Reused, []string{"/cache/go", "/workspace/node_modules"}) {
		t.Fatalf("second build: %+v", res2)
	}
	if out.Len() != 0 {
		t.Errorf("setup printed something though it was skipped:\n%s", out.String())
	}
	layers2 := snapTestLayers(t, snapTestImage(t, store, res2.Snapshot))
	for _, p := range []string{"/cache/go", "/workspace/node_modules"} {
		if a, b := snapTestDigest(t, layers1[p]), snapTestDigest(t, layers2[p]); a != b {
			t.Errorf("cache %s: layer %s, then %s", p, a, b)
		}
	}
	if got := snapTestFiles(t, layers2["workspace"])["workspace/main.go"]; !strings.Contains(got, "two") {
		t.Errorf("second workspace main.go = %q", got)
	}
	if latest, err := store.Latest(ctx, "acme/widget"); err != nil || latest.Digest != res2.Snapshot.Digest || latest.SHA != shaB {
		t.Errorf("latest = %+v, %v", latest, err)
	}

	// 3. A lockfile change runs setup again: that cache's layer is new,
	// the other, pre-filled for setup, is reused as it was.
	shaC := repo.commit("new deps", map[string]string{"deps.lock": "v2\n"})
	res3, err := build(shaC, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatalf("third build: %v\noutput:\n%s", err, out.String())
	}
	if !res3.SetupRan || !slices.Equal(res3.Rebuilt, []string{"/workspace/node_modules"}) || !slices.Equal(res3.Reused, []string{"/cache/go"}) {
		t.Fatalf("third build: %+v", res3)
	}
	layers3 := snapTestLayers(t, snapTestImage(t, store, res3.Snapshot))
	if a, b := snapTestDigest(t, layers1["/cache/go"]), snapTestDigest(t, layers3["/cache/go"]); a != b {
		t.Errorf("/cache/go: layer %s, then %s", a, b)
	}
	if a, b := snapTestDigest(t, layers1["/workspace/node_modules"]), snapTestDigest(t, layers3["/workspace/node_modules"]); a == b {
		t.Errorf("/workspace/node_modules kept layer %s though deps.lock changed", a)
	}
	nm3 := snapTestFiles(t, layers3["/workspace/node_modules"])
	if nm3["workspace/node_modules/out"] != "built-v2\n" || nm3["workspace/node_modules/go-state"] != "prefilled\n" {
		t.Errorf("rebuilt node_modules: out %q, go-state %q", nm3["workspace/node_modules/out"], nm3["workspace/node_modules/go-state"])
	}
	if desc3, err := images.Describe(snapTestImage(t, store, res3.Snapshot)); err != nil || desc3.Caches[1].Key != repo.key(setup, env, "/workspace/node_modules", "deps.lock") || desc3.Caches[1].Key == wantCaches[1].Key {
		t.Errorf("third build's caches: %+v, %v", desc3.Caches, err)
	}

	// 4. A failing setup command fails the build, by name, and pushes
	// nothing: the latest snapshot stays.
	before := snapTestDigests(t, store)
	shaD := repo.commit("newer deps", map[string]string{"deps.lock": "v3\n"})
	b := snapTestBuild(t, repo, shaD, store, workDir, t0.Add(3*time.Minute), &out)
	b.Caches, b.Env = caches, env
	b.Setup = []contract.Command{
		command("fine", time.Minute, "true"),
		command("breaks", time.Minute, "sh", "-c", "echo about to fail >&2; exit 3"),
		command("never", time.Minute, "true"),
	}
	res4, err := BuildSnapshot(ctx, b)
	if err == nil || !strings.Contains(err.Error(), `"breaks"`) || !strings.Contains(err.Error(), "exited with status 3") {
		t.Fatalf("failing setup: %v", err)
	}
	if strings.Contains(err.Error(), snapTestToken) {
		t.Error("the error holds the token")
	}
	if len(res4.Setup) != 2 || res4.Setup[1].ExitCode != 3 || !strings.Contains(res4.Setup[1].OutputTail, "about to fail") || res4.Snapshot.Digest != (v1.Hash{}) {
		t.Errorf("failed build's result: %+v", res4)
	}
	// Its log says which command failed and what it printed.
	if log := contract.SnapshotLog(res4.Setup); !strings.HasSuffix(log, "--- breaks: sh -c echo about to fail >&2; exit 3 exited with status 3 after "+
		(time.Duration(res4.Setup[1].DurationMS)*time.Millisecond).String()+"\nabout to fail\n") || res4.Footprint != (images.Footprint{}) {
		t.Errorf("failed build's log:\n%s\nfootprint %+v", log, res4.Footprint)
	}
	if after := snapTestDigests(t, store); !slices.Equal(before, after) {
		t.Errorf("a failed build changed the store: %v, then %v", before, after)
	}
	if latest, err := store.Latest(ctx, "acme/widget"); err != nil || latest.Digest != res3.Snapshot.Digest {
		t.Errorf("latest after a failed build = %+v, %v", latest, err)
	}

	// Nothing is left behind but the shared layer cache, and the token is
	// nowhere in the store.
	ents, err := os.ReadDir(workDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "inspect-layers" {
			t.Errorf("left in the work dir: %s", e.Name())
		}
	}
	snapTestNoToken(t, filepath.Dir(repo.dir)) // the repository and the store
	snapTestNoToken(t, workDir)
}

// snapTestNoToken fails when any file under dir holds the token.
func snapTestNoToken(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(snapTestToken)) || bytes.Contains(b, []byte(basicCredential(snapTestToken))) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotBuildRefusesSymlinksAtAWorkspaceCache(t *testing.T) {
	ctx := context.Background()
	workDir := sandboxtest.ReachableDir(t)
	caches := []contract.Cache{{Path: "/workspace/node_modules", Lockfiles: []string{"deps.lock"}}}

	// The checkout's own symlink where the cache goes.
	repo := newSnapTestRepo(t, map[string]string{"deps.lock": "v1\n"})
	if err := os.Symlink("/etc", filepath.Join(repo.dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	sha := repo.commit("symlink", nil)
	store := newSnapTestStore(t)
	b := snapTestBuild(t, repo, sha, store, workDir, time.Now(), nil)
	b.Caches = caches
	b.Setup = []contract.Command{command("noop", time.Minute, "true")}
	_, err := BuildSnapshot(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "symlink at /workspace/node_modules") {
		t.Errorf("checkout symlink: %v", err)
	}

	// Setup's symlink where the cache goes.
	repo = newSnapTestRepo(t, map[string]string{"deps.lock": "v1\n"})
	b = snapTestBuild(t, repo, repo.git("rev-parse", "HEAD"), store, workDir, time.Now(), nil)
	b.Caches = caches
	b.Setup = []contract.Command{command("swap", time.Minute, "sh", "-c", "rm -rf node_modules && ln -s /etc node_modules")}
	_, err = BuildSnapshot(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "setup left a symlink at /workspace/node_modules") {
		t.Errorf("setup symlink: %v", err)
	}
	if got := snapTestDigests(t, store); len(got) != 0 {
		t.Errorf("pushed %v", got)
	}
}

func TestSnapshotBuildOnANewBaseReusesNothing(t *testing.T) {
	ctx := context.Background()
	repo := newSnapTestRepo(t, map[string]string{"deps.lock": "v1\n"})
	sha := repo.git("rev-parse", "HEAD")
	store := newSnapTestStore(t)
	workDir := sandboxtest.ReachableDir(t)
	build := func(base v1.Image, built time.Time) SnapshotResult {
		t.Helper()
		b := snapTestBuild(t, repo, sha, store, workDir, built, nil)
		b.Base = base
		b.Caches = []contract.Cache{{Path: "/cache/deps", Lockfiles: []string{"deps.lock"}}}
		b.Setup = []contract.Command{command("fill", time.Minute, "sh", "-c", "cat deps.lock > /cache/deps/copy")}
		res, err := BuildSnapshot(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if res := build(nil, t0); !res.SetupRan || len(res.Rebuilt) != 1 {
		t.Fatalf("first build: %+v", res)
	}
	if res := build(nil, t0.Add(time.Minute)); res.SetupRan || len(res.Reused) != 1 {
		t.Fatalf("same base, same keys: %+v", res)
	}

	// A one-layer base without /usr/bin: its layer comes first, and the
	// sandbox still binds the host's toolchain (sh ran).
	baseDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(baseDir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(baseDir, "etc", "base-marker"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	baseLayer, err := images.DirLayer(baseDir, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, baseLayer)
	if err != nil {
		t.Fatal(err)
	}
	res := build(base, t0.Add(2*time.Minute))
	if !res.SetupRan || len(res.Reused) != 0 || len(res.Rebuilt) != 1 {
		t.Fatalf("new base: %+v", res)
	}
	img := snapTestImage(t, store, res.Snapshot)
	layers := snapTestLayers(t, img)
	if snapTestDigest(t, layers["base"]) != snapTestDigest(t, baseLayer) {
		t.Error("the base layer is not the snapshot's first")
	}
	if got := snapTestFiles(t, layers["/cache/deps"])["cache/deps/copy"]; got != "v1\n" {
		t.Errorf("cache copy = %q", got)
	}
}
