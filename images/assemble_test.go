package images

import (
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestAssembleImageShape(t *testing.T) {
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	in := fx.input(t, base, 0, nil)
	out := assemble(t, in)
	if !slices.Equal(out.Rebuilt, []string{testCachePath}) || len(out.Reused) != 0 {
		t.Fatalf("rebuilt %q reused %q; want the cache rebuilt", out.Rebuilt, out.Reused)
	}
	img := out.Image

	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("media types %q / %q, want OCI manifest / OCI config", m.MediaType, m.Config.MediaType)
	}
	baseDigests := layerDigests(t, base)
	if len(m.Layers) != len(baseDigests)+2 {
		t.Fatalf("%d layers, want base (%d) + cache + workspace", len(m.Layers), len(baseDigests))
	}
	if m.Layers[0].Digest != baseDigests[0] {
		t.Errorf("first layer %s is not the base's %s", m.Layers[0].Digest, baseDigests[0])
	}
	cacheDesc, workspaceDesc := m.Layers[1], m.Layers[2]
	wantCache := map[string]string{
		AnnotationLayer:     LayerKindCache,
		AnnotationCachePath: testCachePath,
		AnnotationCacheKey:  in.Caches[0].Key,
	}
	if !maps.Equal(cacheDesc.Annotations, wantCache) || cacheDesc.MediaType != types.OCILayer {
		t.Errorf("cache layer %q %v; want %q %v", cacheDesc.MediaType, cacheDesc.Annotations, types.OCILayer, wantCache)
	}
	if workspaceDesc.Annotations[AnnotationLayer] != LayerKindWorkspace || workspaceDesc.MediaType != types.OCILayer {
		t.Errorf("workspace layer %q %v", workspaceDesc.MediaType, workspaceDesc.Annotations)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.WorkingDir != WorkspacePath {
		t.Errorf("working dir %q, want %q", cfg.Config.WorkingDir, WorkspacePath)
	}
	if cfg.Config.Labels[baseLabel] != "toolchain" || len(cfg.Config.Env) != 2 || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("base settings lost: labels %v env %v os %q arch %q", cfg.Config.Labels, cfg.Config.Env, cfg.OS, cfg.Architecture)
	}
	if len(cfg.RootFS.DiffIDs) != 3 || len(cfg.History) != 3 {
		t.Errorf("%d diff ids, %d history entries; want 3 each", len(cfg.RootFS.DiffIDs), len(cfg.History))
	}
	var caches []CacheInfo
	if err := json.Unmarshal([]byte(cfg.Config.Labels[LabelCaches]), &caches); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caches, []CacheInfo{{Path: testCachePath, Key: in.Caches[0].Key}}) {
		t.Errorf("caches label %s", cfg.Config.Labels[LabelCaches])
	}
	if !strings.Contains(cfg.Config.Labels[LabelCaches], `"path":"/cache/go/mod"`) {
		t.Errorf("caches label %s lacks the documented field names", cfg.Config.Labels[LabelCaches])
	}

	snap, err := Describe(img)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Repo != testRepo || snap.SHA != in.SHA || !snap.Built.Equal(in.Built) || snap.Version != in.Version ||
		!slices.Equal(snap.Caches, caches) || snap.Digest != imageDigest(t, img) {
		t.Errorf("Describe = %+v", snap)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	names := entryNames(layerEntries(t, layers[2]))
	for _, n := range names {
		if !strings.HasPrefix(n, "workspace/") {
			t.Errorf("workspace entry %q outside workspace/", n)
		}
		for _, volatile := range []string{"workspace/.git/index", "workspace/.git/logs", "workspace/.inspect"} {
			if strings.HasPrefix(n, volatile) {
				t.Errorf("workspace layer holds %q", n)
			}
		}
	}
	for _, must := range []string{"workspace/", "workspace/main.go", "workspace/.git/HEAD", "workspace/.git/objects/ab/cdef"} {
		if !slices.Contains(names, must) {
			t.Errorf("workspace layer lacks %q: %q", must, names)
		}
	}
}

func TestAssembleCacheInsideWorkspace(t *testing.T) {
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	writeFile(t, fx.workspace, "package-lock.json", "{}", 0o644)
	writeFile(t, fx.workspace, "node_modules/left-pad/index.js", "module.exports = 1", 0o644)
	key, err := LockfileKey(fx.workspace, "/workspace/node_modules", []string{"package-lock.json"})
	if err != nil {
		t.Fatal(err)
	}
	in := fx.input(t, base, 0, nil)
	in.Caches = append(in.Caches, Cache{Path: "/workspace/node_modules", HostDir: filepath.Join(fx.workspace, "node_modules"), Key: key})
	out := assemble(t, in)
	layers, err := out.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 4 {
		t.Fatalf("%d layers, want 4", len(layers))
	}
	nodeNames := entryNames(layerEntries(t, layers[2]))
	if !slices.Contains(nodeNames, "workspace/node_modules/left-pad/index.js") {
		t.Errorf("node_modules cache layer lacks its files: %q", nodeNames)
	}
	for _, n := range entryNames(layerEntries(t, layers[3])) {
		if strings.HasPrefix(n, "workspace/node_modules") {
			t.Errorf("workspace layer holds cache entry %q", n)
		}
	}
}

// TestAssembleOnEmptyBase covers a server configured without a base image:
// the snapshot is then the caches and the workspace alone.
func TestAssembleOnEmptyBase(t *testing.T) {
	fx := newRepoFixture(t)
	out := assemble(t, fx.input(t, empty.Image, 0, nil))
	if n := len(layerDigests(t, out.Image)); n != 2 {
		t.Fatalf("%d layers on an empty base, want cache and workspace", n)
	}
	s, err := NewLayoutStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(t.Context(), out.Image); err != nil {
		t.Fatal(err)
	}
	latest, err := s.Latest(t.Context(), testRepo)
	if err != nil || latest.Digest != imageDigest(t, out.Image) {
		t.Fatalf("Latest = %+v, %v", latest, err)
	}
}

func TestAssembleValidates(t *testing.T) {
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	good := fx.input(t, base, 0, nil)
	key := good.Caches[0].Key
	withCaches := func(cs ...Cache) func(*Input) {
		return func(in *Input) { in.Caches = cs }
	}
	cases := map[string]func(*Input){
		"no base":            func(in *Input) { in.Base = nil },
		"repo without owner": func(in *Input) { in.Repo = "widget" },
		"repo with spaces":   func(in *Input) { in.Repo = "acme/wid get" },
		"repo three parts":   func(in *Input) { in.Repo = "a/b/c" },
		"short sha":          func(in *Input) { in.SHA = "abc123" },
		"uppercase sha":      func(in *Input) { in.SHA = strings.ToUpper(testSHA(0)) },
		"zero built":         func(in *Input) { in.Built = time.Time{} },
		"no workspace":       func(in *Input) { in.WorkspaceDir = "" },
		"relative cache":     withCaches(Cache{Path: "cache/go", HostDir: fx.cache, Key: key}),
		"unclean cache":      withCaches(Cache{Path: "/cache//go", HostDir: fx.cache, Key: key}),
		"root cache":         withCaches(Cache{Path: "/", HostDir: fx.cache, Key: key}),
		"workspace cache":    withCaches(Cache{Path: WorkspacePath, HostDir: fx.cache, Key: key}),
		"bad key":            withCaches(Cache{Path: "/cache/a", HostDir: fx.cache, Key: "md5:abc"}),
		"duplicate cache": withCaches(
			Cache{Path: "/cache/a", HostDir: fx.cache, Key: key},
			Cache{Path: "/cache/a", HostDir: fx.cache, Key: key}),
		"nested caches": withCaches(
			Cache{Path: "/cache/a", HostDir: fx.cache, Key: key},
			Cache{Path: "/cache/a/b", HostDir: fx.cache, Key: key}),
		"nested caches reversed": withCaches(
			Cache{Path: "/cache/a/b", HostDir: fx.cache, Key: key},
			Cache{Path: "/cache/a", HostDir: fx.cache, Key: key}),
		"cache without host dir or previous": withCaches(Cache{Path: "/cache/a", Key: key}),
		"missing host dir":                   withCaches(Cache{Path: "/cache/a", HostDir: filepath.Join(fx.cache, "nope"), Key: key}),
	}
	for name, mutateInput := range cases {
		t.Run(name, func(t *testing.T) {
			in := good
			mutateInput(&in)
			if _, err := Assemble(in); err == nil {
				t.Fatal("Assemble accepted it")
			}
		})
	}
	// Siblings that merely share a prefix do not nest.
	in := good
	in.Caches = []Cache{{Path: "/cache/a", HostDir: fx.cache, Key: key}, {Path: "/cache/ab", HostDir: fx.cache, Key: key}}
	if _, err := Assemble(in); err != nil {
		t.Fatalf("sibling caches refused: %v", err)
	}
}

func TestAssembleReusesPreviousCacheLayer(t *testing.T) {
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	first := assemble(t, fx.input(t, base, 0, nil))

	// Same key, no host dir: the layer can only come from Previous, so the
	// cache is provably not tarred again.
	in := fx.input(t, base, 1, first.Image)
	in.Caches[0].HostDir = ""
	second := assemble(t, in)
	if !slices.Equal(second.Reused, []string{testCachePath}) || len(second.Rebuilt) != 0 {
		t.Fatalf("reused %q rebuilt %q", second.Reused, second.Rebuilt)
	}
	if a, b := layerDigests(t, first.Image)[1], layerDigests(t, second.Image)[1]; a != b {
		t.Fatalf("cache layer %s became %s", a, b)
	}

	// Same path, other key: rebuilt.
	writeFile(t, fx.workspace, "go.sum", "example.com/dep v1.1.0 h1:def=\n", 0o644)
	third := assemble(t, fx.input(t, base, 2, second.Image))
	if !slices.Equal(third.Rebuilt, []string{testCachePath}) || len(third.Reused) != 0 {
		t.Fatalf("reused %q rebuilt %q after a lockfile change", third.Reused, third.Rebuilt)
	}
}

func TestDescribeRejectsOtherImages(t *testing.T) {
	base := newBaseImage(t)
	if _, err := Describe(base); !errors.Is(err, ErrNotSnapshot) {
		t.Fatalf("Describe(base) = %v, want ErrNotSnapshot", err)
	}
	fx := newRepoFixture(t)
	img := assemble(t, fx.input(t, base, 0, nil)).Image
	for _, label := range []string{LabelRepo, LabelSHA, LabelBuilt, LabelCaches} {
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		delete(cfg.Config.Labels, label)
		broken, err := mutate.ConfigFile(img, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Describe(broken); !errors.Is(err, ErrNotSnapshot) {
			t.Errorf("without %s: Describe = %v, want ErrNotSnapshot", label, err)
		}
	}
}

// TestAssembleNamesItsBase: the snapshot's labels name the base it was
// built on, by the reference without its digest and the base's own
// manifest digest, and Describe reads them back; labels of those names
// that the base itself carries (its own base) are not the snapshot's.
// With no base named, Describe names none.
func TestAssembleNamesItsBase(t *testing.T) {
	base, fx := newBaseImage(t), newRepoFixture(t)
	cfg, err := base.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels[LabelBaseName] = "docker.io/library/debian"
	cfg.Config.Labels[LabelBaseDigest] = "sha256:" + strings.Repeat("0", 64)
	if base, err = mutate.ConfigFile(base, cfg); err != nil {
		t.Fatal(err)
	}
	want, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}

	in := fx.input(t, base, 0, nil)
	in.BaseName = "registry.example.com/toolchain/go@" + want.String()
	snap, err := Describe(assemble(t, in).Image)
	if err != nil {
		t.Fatal(err)
	}
	if snap.BaseName != "registry.example.com/toolchain/go" || snap.BaseDigest != want.String() {
		t.Errorf("base = %q %q, want registry.example.com/toolchain/go %s", snap.BaseName, snap.BaseDigest, want)
	}

	in = fx.input(t, base, 1, nil)
	snap, err = Describe(assemble(t, in).Image)
	if err != nil {
		t.Fatal(err)
	}
	if snap.BaseName != "" || snap.BaseDigest != "" {
		t.Errorf("with no base named, Describe names %q %q (the base's own base?)", snap.BaseName, snap.BaseDigest)
	}
}
