package toolsimage_test

import (
	"archive/tar"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/toolsimage"
)

// fakePrefix is an npm prefix as Install leaves one, with the files the
// launchers run (not the real CLIs: this is about the packing), a nested
// package and a relative symlink, every file stamped with mtime.
func fakePrefix(t *testing.T, mtime time.Time) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"package.json":      `{"dependencies":{"@openai/codex":"0.171.0"}}`,
		"package-lock.json": `{"lockfileVersion":3}`,
		"node_modules/@openai/codex/bin/codex.js":                    "#!/usr/bin/env node\n",
		"node_modules/@openai/codex/package.json":                    `{"version":"0.171.0"}`,
		"node_modules/opencode-linux-x64-baseline/bin/opencode":      "opencode\n",
		"node_modules/opencode-linux-x64/bin/opencode":               "opencode avx2\n",
		"node_modules/@anthropic-ai/claude-code-linux-x64/claude":    "claude\n",
		"node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs":     "wrapper\n",
		"node_modules/@anthropic-ai/claude-code/node_modules/x/a.js": "a\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(name, "/bin/") || strings.HasSuffix(name, "/claude") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../@openai/codex/bin/codex.js", filepath.Join(dir, "node_modules", "opencode-linux-x64", "codex-link")); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, mtime, mtime)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostNode is a small dynamically linked host executable standing in for
// node: what matters is its loader and libraries.
func hostNode(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("no /usr/bin/true")
	return ""
}

func build(t *testing.T, prefix string) toolsimage.Image {
	t.Helper()
	img, err := toolsimage.Build(context.Background(), toolsimage.Inputs{
		Node: hostNode(t), Prefix: prefix, Arch: "amd64",
		Packages: []toolsimage.Package{{Name: "@openai/codex", Version: "0.171.0"}},
	}, filepath.Join(t.TempDir(), "layout"))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The same inputs give the same digest, whatever the files' times, the
// directory the prefix is in and where the layout is written; a changed
// input gives another. The layer's entries are sorted, owned by 0:0 with no
// names, and dated 1970; it holds node, its loader and libraries, the
// CLIs' files and the four launchers, each running through the image's
// own loader.
func TestTheToolsImageIsReproducible(t *testing.T) {
	first := build(t, fakePrefix(t, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)))
	second := build(t, fakePrefix(t, time.Now()))
	if first.Digest != second.Digest {
		t.Fatalf("two builds of the same inputs: %s and %s", first.Digest, second.Digest)
	}
	changed := fakePrefix(t, time.Now())
	if err := os.WriteFile(filepath.Join(changed, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"), []byte("claude 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if other := build(t, changed); other.Digest == first.Digest {
		t.Fatalf("a changed CLI left the digest at %s", first.Digest)
	}

	// The layout is an OCI image layout the image client opens by digest.
	img, err := images.OpenBaseImage(context.Background(), first.Ref())
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	content := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: uid %d gid %d (%q %q), mtime %v", h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		if h.Typeflag != tar.TypeSymlink && (h.Mode&0o6000 != 0 || h.Mode&0o022 != 0) {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
		if strings.HasPrefix(h.Name, "bin/") {
			b, _ := io.ReadAll(tr)
			content[h.Name] = string(b)
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("the entries are not sorted: %v", names)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, want := range []string{"libexec/node", "lib/ld-linux-x86-64.so.2", "lib/libc.so.6", "package-lock.json",
		"node_modules/@anthropic-ai/claude-code-linux-x64/claude", "node_modules/opencode-linux-x64/codex-link",
		"bin/node", "bin/codex", "bin/opencode", "bin/claude"} {
		if !have[want] {
			t.Errorf("the image lacks %s: %v", want, names)
		}
	}
	const run = "exec /opt/inspect/tools/lib/ld-linux-x86-64.so.2 --library-path /opt/inspect/tools/lib "
	for bin, want := range map[string]string{
		"bin/node":     run + `/opt/inspect/tools/libexec/node "$@"`,
		"bin/codex":    run + `/opt/inspect/tools/libexec/node /opt/inspect/tools/node_modules/@openai/codex/bin/codex.js "$@"`,
		"bin/opencode": run + `/opt/inspect/tools/node_modules/opencode-linux-x64-baseline/bin/opencode "$@"`,
		"bin/claude":   run + `/opt/inspect/tools/node_modules/@anthropic-ai/claude-code-linux-x64/claude "$@"`,
	} {
		if !strings.HasPrefix(content[bin], "#!/bin/sh\n") || !strings.Contains(content[bin], "\n"+want+"\n") {
			t.Errorf("%s:\n%s\nwant the line %s", bin, content[bin], want)
		}
	}
}

// A symlink leading out of node_modules fails the build: the image's root
// is bound into sandboxes.
func TestASymlinkOutOfTheModulesFailsTheBuild(t *testing.T) {
	prefix := fakePrefix(t, time.Now())
	if err := os.Symlink("../../../../etc/passwd", filepath.Join(prefix, "node_modules", "@openai", "codex", "bin", "passwd")); err != nil {
		t.Fatal(err)
	}
	_, err := toolsimage.Build(context.Background(), toolsimage.Inputs{Node: hostNode(t), Prefix: prefix, Arch: "amd64"}, filepath.Join(t.TempDir(), "layout"))
	if err == nil || !strings.Contains(err.Error(), "symlink out of node_modules") {
		t.Fatalf("err = %v", err)
	}
}

// Without a CLI's platform package (installed without optional
// dependencies), the build says which is missing.
func TestAMissingPlatformPackageFailsTheBuild(t *testing.T) {
	prefix := fakePrefix(t, time.Now())
	if err := os.RemoveAll(filepath.Join(prefix, "node_modules", "@anthropic-ai", "claude-code-linux-x64")); err != nil {
		t.Fatal(err)
	}
	_, err := toolsimage.Build(context.Background(), toolsimage.Inputs{Node: hostNode(t), Prefix: prefix, Arch: "amd64"}, filepath.Join(t.TempDir(), "layout"))
	if err == nil || !strings.Contains(err.Error(), "Claude Code is not installed") {
		t.Fatalf("err = %v", err)
	}
}
