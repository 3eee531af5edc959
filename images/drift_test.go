package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// treeOf lists a directory as "rel mode [content|-> target]" lines, sorted,
// for comparing two trees whole.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := filepath.ToSlash(rel) + " " + fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += " " + string(b)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func copyTestTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// CopyFS writes symlinks as regular files only on old Go; keep modes exact.
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		return os.Chmod(filepath.Join(dst, rel), fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDriftLayerCarriesOnlyTheChangeAndApplyingItGivesTheNewTree(t *testing.T) {
	prev, next := t.TempDir(), t.TempDir()
	for _, dir := range []string{prev, next} {
		writeFile(t, dir, "same.go", "package same\n", 0o644)
		writeFile(t, dir, "vendor/big/lib.go", strings.Repeat("x", 100_000), 0o644)
		writeFile(t, dir, "vendor/big/other.go", "package big\n", 0o644)
		writeFile(t, dir, ".git/index", "volatile", 0o644)
	}
	writeFile(t, prev, "changed.go", "package old\n", 0o644)
	writeFile(t, next, "changed.go", "package new\n", 0o644)
	writeFile(t, prev, "mode.sh", "#!/bin/sh\n", 0o644)
	writeFile(t, next, "mode.sh", "#!/bin/sh\n", 0o755)
	writeFile(t, prev, "gone.txt", "bye", 0o644)
	writeFile(t, prev, "gonedir/a/b.txt", "bye", 0o644)
	writeFile(t, prev, "becomesfile/x.txt", "dir before", 0o644)
	writeFile(t, next, "becomesfile", "file now", 0o644)
	writeFile(t, prev, "becomesdir", "file before", 0o644)
	writeFile(t, next, "becomesdir/y.txt", "dir now", 0o644)
	writeFile(t, next, "new/deep/file.txt", "hello", 0o600)
	if err := os.Symlink("same.go", filepath.Join(next, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone.txt", filepath.Join(prev, "link")); err != nil {
		t.Fatal(err)
	}

	layer, stats, err := DriftLayer(next, prev, WorkspacePath, WorkspaceExclude)
	if err != nil {
		t.Fatal(err)
	}
	names := entryNames(layerEntries(t, layer))
	for _, unchanged := range []string{"workspace/same.go", "workspace/vendor/big/lib.go", "workspace/.git/index"} {
		if slices.Contains(names, unchanged) {
			t.Errorf("the drift carries the unchanged or excluded %s: %v", unchanged, names)
		}
	}
	for _, want := range []string{"workspace/changed.go", "workspace/mode.sh", "workspace/.wh.gone.txt", "workspace/.wh.gonedir",
		"workspace/.wh.becomesfile", "workspace/becomesfile", "workspace/.wh.becomesdir", "workspace/becomesdir/y.txt",
		"workspace/new/deep/file.txt", "workspace/link"} {
		if !slices.Contains(names, want) {
			t.Errorf("the drift lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "workspace/.wh.a") || slices.Contains(names, "workspace/gonedir/.wh.a") {
		t.Errorf("a deleted directory's contents are whited out one by one: %v", names)
	}
	if stats.Bytes > 1000 {
		t.Errorf("the drift's files are %d bytes; only small files changed", stats.Bytes)
	}

	// Applied onto a copy of prev, the drift gives next (excluded paths
	// aside, which the layer never carries).
	applied := t.TempDir()
	copyTestTree(t, prev, applied)
	if _, err := ApplyDrift(context.Background(), layer, applied, WorkspacePath); err != nil {
		t.Fatal(err)
	}
	want, got := treeOf(t, next), treeOf(t, applied)
	if !slices.Equal(want, got) {
		t.Errorf("prev + drift differs from next:\nwant %q\n got %q", want, got)
	}

	// The same trees give the same layer.
	again, _, err := DriftLayer(next, prev, WorkspacePath, WorkspaceExclude)
	if err != nil {
		t.Fatal(err)
	}
	if layerDigest(t, again) != layerDigest(t, layer) {
		t.Error("DriftLayer is not deterministic")
	}
}

func TestApplyDriftStaysInsideItsDirectory(t *testing.T) {
	prev, next := t.TempDir(), t.TempDir()
	outside := t.TempDir()
	writeFile(t, outside, "secret", "keep me", 0o644)
	// The new tree makes "escape" a symlink out, then the layer is applied
	// onto a tree where a later entry would go through it.
	if err := os.Symlink(outside, filepath.Join(next, "escape")); err != nil {
		t.Fatal(err)
	}
	layer, _, err := DriftLayer(next, prev, WorkspacePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	applied := t.TempDir()
	if _, err := ApplyDrift(context.Background(), layer, applied, WorkspacePath); err != nil {
		t.Fatal(err)
	}
	// A hand-made drift that writes through the symlink is refused.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "workspace/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "workspace/escape/secret", Typeflag: tar.TypeReg, Mode: 0o644, Size: 11},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write([]byte("overwritten")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	bad, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyDrift(context.Background(), bad, applied, WorkspacePath); err == nil {
		t.Error("a drift entry through a symlink leading out was applied")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "keep me" {
		t.Errorf("the file outside is %q, %v", b, err)
	}
}
