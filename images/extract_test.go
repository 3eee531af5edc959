package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// countingLayer counts how often its content is read.
type countingLayer struct {
	v1.Layer
	reads atomic.Int32
}

func (l *countingLayer) Uncompressed() (io.ReadCloser, error) {
	l.reads.Add(1)
	return l.Layer.Uncompressed()
}

func (l *countingLayer) Compressed() (io.ReadCloser, error) {
	l.reads.Add(1)
	return l.Layer.Compressed()
}

func TestExtractLayerRoundTrip(t *testing.T) {
	src := removableTempDir(t)
	writeFile(t, src, "bin/tool", "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, src, "ro/file", "read only", 0o444)
	writeFile(t, src, "private", "secret", 0o600)
	if err := os.Chmod(filepath.Join(src, "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/tool", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "abs")); err != nil {
		t.Fatal(err)
	}
	l, err := DirLayer(src, "/cache/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingLayer{Layer: l}
	cacheDir := filepath.Join(removableTempDir(t), "layers")

	dir, err := ExtractLayer(t.Context(), counted, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	digest := layerDigest(t, l)
	if want := filepath.Join(cacheDir, "sha256-"+digest.Hex); dir != want {
		t.Fatalf("extracted to %s, want %s", dir, want)
	}
	root := filepath.Join(dir, "cache", "x")
	checkFile(t, filepath.Join(root, "bin/tool"), "#!/bin/sh\necho hi\n", 0o755)
	checkFile(t, filepath.Join(root, "ro/file"), "read only", 0o444)
	checkFile(t, filepath.Join(root, "private"), "secret", 0o600)
	checkMode(t, filepath.Join(root, "ro"), os.ModeDir|0o555)
	checkMode(t, filepath.Join(dir, "cache"), os.ModeDir|0o755)
	checkMode(t, dir, os.ModeDir|0o755)
	for link, target := range map[string]string{"link": "bin/tool", "abs": "/etc/passwd"} {
		got, err := os.Readlink(filepath.Join(root, link))
		if err != nil || got != target {
			t.Errorf("symlink %s -> %q, %v; want %q", link, got, err, target)
		}
	}
	if n := counted.reads.Load(); n != 1 {
		t.Fatalf("layer read %d times for one extraction", n)
	}

	// Second call: the directory is reused as it is, the layer not read.
	marker := filepath.Join(dir, "marker")
	if err := os.WriteFile(marker, []byte("still here"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := ExtractLayer(t.Context(), counted, cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	if again != dir {
		t.Fatalf("second call returned %s, first %s", again, dir)
	}
	if n := counted.reads.Load(); n != 1 {
		t.Fatalf("second call read the layer again (%d reads)", n)
	}
	checkFile(t, marker, "still here", 0o644)
	assertNoTempDirs(t, cacheDir)
}

func TestExtractLayerConcurrentCallers(t *testing.T) {
	src := t.TempDir()
	for _, name := range []string{"a", "b/c", "d/e/f"} {
		writeFile(t, src, name, strings.Repeat(name, 1000), 0o644)
	}
	l, err := DirLayer(src, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	const callers = 6
	dirs := make([]string, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			dirs[i], errs[i] = ExtractLayer(t.Context(), l, cacheDir)
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("caller %d got %s, caller 0 %s", i, dirs[i], dirs[0])
		}
	}
	checkFile(t, filepath.Join(dirs[0], "d/e/f"), strings.Repeat("d/e/f", 1000), 0o644)
	assertNoTempDirs(t, cacheDir)
}

// rawEntry is one entry of a hand-made (possibly hostile) tar.
type rawEntry struct {
	name     string
	typeflag byte
	link     string
	content  string
}

func rawTarLayer(t *testing.T, entries ...rawEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Mode: 0o644, Size: int64(len(e.content))}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if e.typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestExtractLayerRefusesHostileTars(t *testing.T) {
	outside := t.TempDir()
	cases := map[string][]rawEntry{
		"dot-dot name":  {{name: "../escape", typeflag: tar.TypeReg, content: "x"}},
		"inner dot-dot": {{name: "a/../../escape", typeflag: tar.TypeReg, content: "x"}},
		"absolute name": {{name: filepath.Join(outside, "escape"), typeflag: tar.TypeReg, content: "x"}},
		"file through relative symlink": {
			{name: "evil", typeflag: tar.TypeSymlink, link: "../../../../../../../../" + strings.TrimPrefix(outside, "/")},
			{name: "evil/escape", typeflag: tar.TypeReg, content: "x"},
		},
		"file through absolute symlink": {
			{name: "evil", typeflag: tar.TypeSymlink, link: outside},
			{name: "evil/escape", typeflag: tar.TypeReg, content: "x"},
		},
		"dir through symlink": {
			{name: "evil", typeflag: tar.TypeSymlink, link: outside},
			{name: "evil/sub/", typeflag: tar.TypeDir},
		},
		"hard link out": {
			{name: "hl", typeflag: tar.TypeLink, link: "../../etc/passwd"},
		},
		"hard link through symlink": {
			{name: "evil", typeflag: tar.TypeSymlink, link: "/etc"},
			{name: "hl", typeflag: tar.TypeLink, link: "evil/passwd"},
		},
		"whiteout":        {{name: "dir/.wh.gone", typeflag: tar.TypeReg}},
		"opaque whiteout": {{name: "dir/.wh..wh..opq", typeflag: tar.TypeReg}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			cacheDir := t.TempDir()
			dir, err := ExtractLayer(t.Context(), rawTarLayer(t, entries...), cacheDir)
			if err == nil {
				t.Fatalf("extracted to %s", dir)
			}
			t.Logf("refused: %v", err)
			if _, err := os.Lstat(filepath.Join(outside, "escape")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("something was written outside: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(outside, "sub")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a directory was made outside: %v", err)
			}
			left, err := os.ReadDir(cacheDir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Fatalf("a failed extraction left %v behind", left)
			}
		})
	}
}

func TestExtractLayerSkipsDevicesAndFollowsTarOrder(t *testing.T) {
	l := rawTarLayer(t,
		rawEntry{name: "./", typeflag: tar.TypeDir},
		rawEntry{name: "fifo", typeflag: tar.TypeFifo},
		rawEntry{name: "null", typeflag: tar.TypeChar},
		rawEntry{name: "implicit/parent/file", typeflag: tar.TypeReg, content: "made"},
		rawEntry{name: "dup", typeflag: tar.TypeReg, content: "first"},
		rawEntry{name: "dup", typeflag: tar.TypeReg, content: "second"},
		rawEntry{name: "target", typeflag: tar.TypeReg, content: "t"},
		rawEntry{name: "hard", typeflag: tar.TypeLink, link: "target"},
		// A symlink replaced by a file: the file must not be written
		// through the old link.
		rawEntry{name: "swap", typeflag: tar.TypeSymlink, link: "target"},
		rawEntry{name: "swap", typeflag: tar.TypeReg, content: "own"},
	)
	dir, err := ExtractLayer(t.Context(), l, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, skipped := range []string{"fifo", "null"} {
		if _, err := os.Lstat(filepath.Join(dir, skipped)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", skipped, err)
		}
	}
	checkFile(t, filepath.Join(dir, "implicit/parent/file"), "made", 0o644)
	checkFile(t, filepath.Join(dir, "dup"), "second", 0o644)
	checkFile(t, filepath.Join(dir, "hard"), "t", 0o644)
	checkFile(t, filepath.Join(dir, "target"), "t", 0o644)
	checkFile(t, filepath.Join(dir, "swap"), "own", 0o644)
}

// lyingLayer claims a diff ID its content does not have, as a corrupt or
// tampered download would.
type lyingLayer struct{ v1.Layer }

func (lyingLayer) DiffID() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}, nil
}

func TestExtractLayerChecksDiffID(t *testing.T) {
	l := rawTarLayer(t, rawEntry{name: "f", typeflag: tar.TypeReg, content: "x"})
	cacheDir := t.TempDir()
	if dir, err := ExtractLayer(t.Context(), lyingLayer{l}, cacheDir); err == nil {
		t.Fatalf("extracted mismatching content to %s", dir)
	}
	assertNoTempDirs(t, cacheDir)
	left, err := os.ReadDir(cacheDir)
	if err != nil || len(left) != 0 {
		t.Fatalf("left %v, %v", left, err)
	}
}

func TestExtractLayerHonoursCancellation(t *testing.T) {
	l := rawTarLayer(t, rawEntry{name: "f", typeflag: tar.TypeReg, content: "x"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ExtractLayer(ctx, l, t.TempDir()); err == nil {
		t.Fatal("extracted with a cancelled context")
	}
}

func checkFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return
	}
	if string(b) != content {
		t.Errorf("%s holds %q, want %q", p, b, content)
	}
	checkMode(t, p, mode)
}

func checkMode(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return
	}
	if info.Mode() != mode {
		t.Errorf("%s has mode %v, want %v", p, info.Mode(), mode)
	}
}

func assertNoTempDirs(t *testing.T, cacheDir string) {
	t.Helper()
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".extract-") {
			t.Errorf("temp dir %s left in the cache", e.Name())
		}
	}
}
