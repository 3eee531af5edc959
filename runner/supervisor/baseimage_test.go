package supervisor

import (
	"archive/tar"
	"context"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/layertest"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// requestLog records what a registry served, "GET /v2/.../blobs/sha256:…".
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = nil
}

// blobGets counts the GETs of each blob digest since the last reset.
func (l *requestLog) blobGets() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, r := range l.reqs {
		if p, ok := strings.CutPrefix(r, "GET "); ok {
			if i := strings.Index(p, "/blobs/"); i >= 0 {
				out[p[i+len("/blobs/"):]]++
			}
		}
	}
	return out
}

// requests are the requests since the last reset.
func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// testImages memoises the tests' base images and layers by name: made
// from megabytes of the host's programs, they are slow to tar and gzip
// under -race, and they are immutable, so tests share them.
var testImages = struct {
	sync.Mutex
	layers map[string]v1.Layer
	images map[string]v1.Image
}{layers: map[string]v1.Layer{}, images: map[string]v1.Image{}}

// sharedToolchainLayer is toolchainLayer without extras, made once.
func sharedToolchainLayer(t testing.TB) v1.Layer {
	t.Helper()
	testImages.Lock()
	defer testImages.Unlock()
	if l, ok := testImages.layers["toolchain"]; ok {
		return l
	}
	l := toolchainLayer(t)
	testImages.layers["toolchain"] = l
	return l
}

// toolchainLayer is a layer holding a few of the host's programs at their
// paths, with the shared libraries they (and the forwarder, which wraps
// the agent) load: enough for sh -c scripts in an image root.
func toolchainLayer(t testing.TB, extra ...layertest.Entry) v1.Layer {
	t.Helper()
	progs := []string{"/bin/sh", "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/whoami", "/usr/bin/env", "/usr/bin/wc", "/usr/bin/sed", forwarder}
	files := map[string]bool{}
	for _, p := range progs {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		if p != forwarder {
			files[p+"\x00"+real] = true
		}
		out, err := exec.Command("ldd", real).CombinedOutput()
		if err != nil && strings.Contains(string(out), "not a dynamic executable") {
			continue // static (the forwarder is built as production builds it): it loads nothing
		}
		if err != nil {
			t.Fatalf("ldd %s: %v\n%s", real, err, out)
		}
		for _, f := range strings.Fields(string(out)) {
			if strings.HasPrefix(f, "/") {
				files[f+"\x00"+f] = true
			}
		}
	}
	entries := []layertest.Entry{layertest.Dir("usr/"), layertest.Dir("usr/bin/"), layertest.Dir("bin/")}
	for _, k := range slices.Sorted(maps.Keys(files)) {
		at, from, _ := strings.Cut(k, "\x00")
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, layertest.File(strings.TrimPrefix(at, "/"), string(b), 0o755))
	}
	return layertest.Layer(t, append(entries, extra...)...)
}

// threeLayerBase is the acceptance test's base image: a toolchain layer, a
// layer that whites out and makes opaque what the first put there and
// adds a setuid file and a tool on the image's PATH, and a third with a
// device node and a tool the repo's env overrides.
func threeLayerBase(t testing.TB) v1.Image {
	t.Helper()
	testImages.Lock()
	defer testImages.Unlock()
	if img, ok := testImages.images["three-layer"]; ok {
		return img
	}
	img := makeThreeLayerBase(t)
	testImages.images["three-layer"] = img
	return img
}

func makeThreeLayerBase(t testing.TB) v1.Image {
	t.Helper()
	return layertest.Image(t, []string{"PATH=/opt/tools/bin:/usr/bin:/bin", "TOOL_MODE=image", "IMAGE_ONLY=from-image"},
		toolchainLayer(t,
			layertest.File("opt/data/gone.txt", "lower", 0o644),
			layertest.File("opt/data/kept.txt", "kept", 0o644),
			layertest.File("opt/opq/lower.txt", "lower", 0o644),
			layertest.File("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", 0o644),
			layertest.File("etc/group", "root:x:0:\nnogroup:x:65534:\n", 0o644),
		),
		layertest.Layer(t,
			layertest.File("opt/data/.wh.gone.txt", "", 0o644),
			layertest.File("opt/opq/.wh..wh..opq", "", 0o644),
			layertest.File("opt/opq/upper.txt", "upper", 0o644),
			layertest.File("opt/suid", "#!/bin/sh\n", 0o4755),
			layertest.File("opt/tools/bin/imgtool", "#!/bin/sh\necho imgtool ran\n", 0o755),
		),
		layertest.Layer(t,
			layertest.Entry{Name: "opt/null", Typeflag: tar.TypeChar},
			layertest.File("opt/data/third.txt", "third", 0o644),
		),
	)
}

// baseImageAgent reports what the image root looks like from inside.
var baseImageAgent = []string{"sh", "-c", `{
	imgtool
	echo "mode=$TOOL_MODE only=$IMAGE_ONLY"
	test -e /opt/data/gone.txt && echo "gone.txt is there"
	cat /opt/data/kept.txt /opt/data/third.txt; echo
	ls /opt/opq
	test -u /opt/suid && echo "suid kept its bit"
	test -e /opt/null && echo "the device is there"
	echo "user=$(whoami) home=$HOME pwd=$(pwd)"
} > seen.txt 2>&1`}

func TestSessionOnAThreeLayerBaseImage(t *testing.T) {
	t.Run("the image is the root", func(t *testing.T) {
		f := newSnapshotFixtureOn(t, threeLayerBase(t), nil)
		spec := f.spec(f.first)
		spec.Env = map[string]string{"XDG_CACHE_HOME": "/cache", "TOOL_MODE": "repo"}
		spec.Agent.Command = baseImageAgent
		h := newHarness(t, f.ch, spec)
		u := h.result(t, h.run(t, context.Background()))
		ev := u.Evidence
		if ev.Outcome != contract.OutcomeOK {
			t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
		}
		w := ev.Workspace
		if w == nil || w.Source != contract.WorkspaceSnapshot {
			t.Fatalf("workspace evidence = %+v", w)
		}
		if want := (contract.ImageRoot{Layers: 3, SetIDBitsDropped: 1, DeviceNodesSkipped: 1}); w.ImageRoot == nil || *w.ImageRoot != want {
			t.Errorf("image root evidence = %+v, want %+v", w.ImageRoot, want)
		}
		want := "imgtool ran\n" +
			"mode=repo only=from-image\n" +
			"keptthird\n" +
			"upper.txt\n" +
			"user=inspect home=/tmp pwd=/workspace\n"
		if got := seenFile(t, u); got != want {
			t.Errorf("the agent saw\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("a layer climbing out is refused", func(t *testing.T) {
		evil := layertest.Layer(t, layertest.File("opt/../../escape", "x", 0o644))
		base := layertest.Image(t, []string{"PATH=/usr/bin:/bin"}, sharedToolchainLayer(t), evil)
		f := newSnapshotFixtureOn(t, base, nil)
		spec := f.spec(f.first)
		spec.Agent.Command = []string{"sh", "-c", "cat main.txt > seen.txt"}
		h := newHarness(t, f.ch, spec)
		u := h.result(t, h.run(t, context.Background()))
		w := u.Evidence.Workspace
		if w == nil || w.Source != contract.WorkspaceClone {
			t.Fatalf("workspace evidence = %+v, want a cold clone", w)
		}
		d, err := evil.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(w.RestoreError, d.String()) || !strings.Contains(w.RestoreError, `"opt/../../escape"`) {
			t.Errorf("the restore error names neither the layer %s nor the path: %q", d, w.RestoreError)
		}
		if _, err := os.Stat("/escape"); err == nil {
			t.Error("/escape was written on the host")
		}
	})
}

// A restore on the three-layer base fetches each blob once; a second
// session on the host fetches no layer and no config, only the manifest.
func TestRestoreOnAThreeLayerBaseFetchesEachBlobOncePerHost(t *testing.T) {
	base := threeLayerBase(t)
	f := newSnapshotFixtureOn(t, base, nil)
	layerCache := filepath.Join(channeltest.WorkDir(t), "layers")

	spec := f.spec(f.first)
	spec.Agent.Command = []string{"sh", "-c", "imgtool > seen.txt"}
	h := newHarness(t, f.ch, spec)
	h.cfg.LayerCache = layerCache
	u := h.result(t, h.run(t, context.Background()))
	if w := u.Evidence.Workspace; u.Evidence.Outcome != contract.OutcomeOK || w == nil || w.Source != contract.WorkspaceSnapshot {
		t.Fatalf("outcome %s (%s), workspace %+v", u.Evidence.Outcome, u.Evidence.Reason, w)
	}
	got := f.reg.blobGets()
	m := f.manifest(t)
	want := map[string]int{m.Config.Digest.String(): 1}
	for _, l := range m.Layers {
		want[l.Digest.String()] = 1
	}
	if len(m.Layers) != 5 {
		t.Fatalf("the snapshot has %d layers, want 3 base + cache + workspace", len(m.Layers))
	}
	if !mapsEqual(got, want) {
		t.Errorf("the first restore fetched %v, want each blob once: %v", got, want)
	}

	// A second session: a new attempt on the same host (layer cache). Its
	// PATH (the repo's) leaves the image's tool out.
	f.reg.reset()
	spec2 := f.ch.Spec("s-snap-2", "a-snap-2", f.first, []string{"sh", "-c", "command -v imgtool > seen.txt || echo no imgtool > seen.txt"})
	spec2.Env = map[string]string{"XDG_CACHE_HOME": "/cache", "PATH": "/usr/bin:/bin"}
	spec2.Snapshot = &contract.Snapshot{Store: f.store, Digest: f.digest, Caches: depsCache, Setup: depsSetup}
	h2 := newHarness(t, f.ch, spec2)
	h2.cfg.LayerCache = layerCache
	u2 := h2.result(t, h2.run(t, context.Background()))
	if w := u2.Evidence.Workspace; u2.Evidence.Outcome != contract.OutcomeOK || w == nil || w.Source != contract.WorkspaceSnapshot {
		t.Fatalf("second session: outcome %s (%s), workspace %+v", u2.Evidence.Outcome, u2.Evidence.Reason, w)
	}
	if got := seenFile(t, u2); got != "no imgtool\n" {
		t.Errorf("with the repo's PATH the agent saw %q", got)
	}
	if got := f.reg.blobGets(); len(got) != 0 {
		t.Errorf("the second session fetched blobs %v; want none", got)
	}
	for _, r := range f.reg.requests() {
		if !strings.HasSuffix(r, "/manifests/"+f.digest) && r != "GET /v2/" {
			t.Errorf("the second session asked the registry for %s; want at most the manifest by digest", r)
		}
	}
}

// manifest is the fixture's snapshot's manifest, read from its registry
// (the request log is reset after).
func (f *snapshotFixture) manifest(t *testing.T) *v1.Manifest {
	t.Helper()
	defer f.reg.reset()
	store, err := images.OpenStore(f.store)
	if err != nil {
		t.Fatal(err)
	}
	d, err := v1.NewHash(f.digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := store.Image(context.Background(), channeltest.Owner+"/"+channeltest.Repo, d)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A snapshot build's setup runs on the three-layer base, as the session
// does: the image's PATH (under the repo's env), the sandbox uid by name.
func TestSnapshotSetupRunsOnAThreeLayerBase(t *testing.T) {
	repo := newSnapTestRepo(t, map[string]string{"deps.lock": "v1\n"})
	sha := repo.git("rev-parse", "HEAD")
	store := newSnapTestStore(t)
	b := snapTestBuild(t, repo, sha, store, sandboxtest.ReachableDir(t), time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), nil)
	b.Base = threeLayerBase(t)
	b.Env = map[string]string{"TOOL_MODE": "repo"}
	b.Caches = []contract.Cache{{Path: "/cache/deps", Lockfiles: []string{"deps.lock"}}}
	b.Setup = []contract.Command{command("fill", time.Minute, "sh", "-c",
		`{ test -e /opt/data/gone.txt && echo gone.txt; imgtool; echo "$TOOL_MODE $IMAGE_ONLY $(whoami)"; } > /cache/deps/seen`)}
	res, err := BuildSnapshot(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	layers := snapTestLayers(t, snapTestImage(t, store, res.Snapshot))
	if got, want := snapTestFiles(t, layers["/cache/deps"])["cache/deps/seen"], "imgtool ran\nrepo from-image inspect\n"; got != want {
		t.Errorf("setup saw %q, want %q", got, want)
	}
}
