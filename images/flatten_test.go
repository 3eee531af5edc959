package images

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/internal/layertest"
)

// threeLayers is a base a whiteout, an opaque directory, a setuid file and
// a device node exercise.
func threeLayers(t *testing.T) []v1.Layer {
	return []v1.Layer{
		layertest.Layer(t,
			layertest.Dir("usr/"), layertest.Dir("usr/bin/"),
			layertest.File("usr/bin/tool", "v1", 0o755),
			layertest.File("gone.txt", "lower", 0o644),
			layertest.Dir("opq/"), layertest.File("opq/lower.txt", "lower", 0o644),
			layertest.Dir("opq/sub/"), layertest.File("opq/sub/deep.txt", "lower", 0o644),
			layertest.File("dir-then-file/x", "lower", 0o644),
			layertest.Symlink("usr/bin/alias", "tool"),
		),
		layertest.Layer(t,
			layertest.File(".wh.gone.txt", "", 0o644),
			layertest.File("opq/upper.txt", "upper", 0o644),
			layertest.File("opq/sub/new.txt", "upper", 0o644),
			layertest.File("opq/.wh..wh..opq", "", 0o644),
			layertest.File("usr/bin/su", "setuid", 0o4755),
			layertest.Entry{Name: "dev-null", Typeflag: tar.TypeChar},
			layertest.File("dir-then-file", "a file now", 0o644),
		),
		layertest.Layer(t,
			layertest.File("usr/bin/tool", "v3", 0o755),
			layertest.Dir("ro/"),
			layertest.Entry{Name: "ro/", Typeflag: tar.TypeDir, Mode: 0o555},
		),
	}
}

func TestFlattenAppliesLayersWhiteoutsAndOpaqueDirectories(t *testing.T) {
	layers := threeLayers(t)
	counted := make([]v1.Layer, len(layers))
	var counters []*countingLayer
	for i, l := range layers {
		c := &countingLayer{Layer: l}
		counted[i], counters = c, append(counters, c)
	}
	cacheDir := filepath.Join(removableTempDir(t), "base")
	flat, err := Flatten(t.Context(), counted, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	root := flat.Root
	checkFile(t, filepath.Join(root, "usr/bin/tool"), "v3", 0o755)
	if _, err := os.Lstat(filepath.Join(root, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the whiteout-deleted file is there: %v", err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "opq"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"sub", "upper.txt"}) {
		t.Errorf("the opaque directory holds %v, want only the upper layer's sub and upper.txt", names)
	}
	// A lower directory the upper layer writes into under the opaque one
	// keeps only the upper entries.
	if ents, err := os.ReadDir(filepath.Join(root, "opq", "sub")); err != nil || len(ents) != 1 || ents[0].Name() != "new.txt" {
		t.Errorf("opq/sub holds %v (%v), want only new.txt", ents, err)
	}
	checkFile(t, filepath.Join(root, "usr/bin/su"), "setuid", 0o755) // the bit is gone
	checkFile(t, filepath.Join(root, "dir-then-file"), "a file now", 0o644)
	if _, err := os.Lstat(filepath.Join(root, "dev-null")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the device node was created: %v", err)
	}
	if target, err := os.Readlink(filepath.Join(root, "usr/bin/alias")); err != nil || target != "tool" {
		t.Errorf("usr/bin/alias -> %q, %v", target, err)
	}
	checkMode(t, filepath.Join(root, "ro"), os.ModeDir|0o555)
	checkFile(t, filepath.Join(root, "etc/passwd"), "", 0o644) // a place for the session's own
	if want := (FlattenStats{Layers: 3, SetIDBitsDropped: 1, DeviceNodesSkipped: 1}); flat.Stats != want {
		t.Errorf("stats %+v, want %+v", flat.Stats, want)
	}

	// Once per list of digests: a second call reads no layer.
	before := make([]int32, len(counters))
	for i, c := range counters {
		before[i] = c.reads.Load()
	}
	again, err := Flatten(t.Context(), counted, cacheDir)
	if err != nil || again != flat {
		t.Fatalf("second Flatten = %+v, %v; want %+v", again, err, flat)
	}
	for i, c := range counters {
		if c.reads.Load() != before[i] {
			t.Errorf("layer %d was read again", i)
		}
	}
	assertNoFlattenTemps(t, cacheDir)
}

func TestFlattenRefusesEntriesLeavingTheRoot(t *testing.T) {
	outside := t.TempDir()
	cases := map[string]v1.Layer{
		"dot-dot":        layertest.Layer(t, layertest.File("../escape", "x", 0o644)),
		"inner dot-dot":  layertest.Layer(t, layertest.File("a/../../escape", "x", 0o644)),
		"absolute":       layertest.Layer(t, layertest.File("/abs", "x", 0o644)),
		"hard link":      layertest.Layer(t, layertest.Entry{Name: "h", Typeflag: tar.TypeLink, Link: "../../etc/passwd"}),
		"through a link": layertest.Layer(t, layertest.Symlink("out", outside), layertest.File("out/planted", "x", 0o644)),
		"whiteout through a link": layertest.Layer(t, layertest.Symlink("out", outside),
			layertest.File("out/.wh.keep", "", 0o644)),
	}
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			good := layertest.Layer(t, layertest.File("ok", "ok", 0o644))
			cacheDir := t.TempDir()
			_, err := Flatten(t.Context(), []v1.Layer{good, bad}, cacheDir)
			if err == nil {
				t.Fatal("flattened a layer that leaves the root")
			}
			d, _ := bad.Digest()
			if !strings.Contains(err.Error(), d.String()) {
				t.Errorf("the error does not name the layer %s: %v", d, err)
			}
			if name == "dot-dot" && !strings.Contains(err.Error(), `"../escape"`) {
				t.Errorf("the error does not name the path: %v", err)
			}
			if left, _ := os.ReadDir(cacheDir); len(left) != 0 {
				t.Errorf("left %v in the cache", left)
			}
		})
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("something was written or removed outside the root: %v", ents)
	}
}

func TestFlattenChecksDiffIDs(t *testing.T) {
	l := layertest.Layer(t, layertest.File("f", "x", 0o644))
	cacheDir := t.TempDir()
	if _, err := Flatten(t.Context(), []v1.Layer{lyingLayer{l}}, cacheDir); err == nil {
		t.Fatal("flattened mismatching content")
	}
	if left, _ := os.ReadDir(cacheDir); len(left) != 0 {
		t.Errorf("left %v in the cache", left)
	}
}

func assertNoFlattenTemps(t *testing.T, cacheDir string) {
	t.Helper()
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".flatten-") {
			t.Errorf("temp dir %s left in the cache", e.Name())
		}
	}
}
