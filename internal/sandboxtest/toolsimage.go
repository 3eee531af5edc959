package sandboxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ToolsImage is the agents' tools image .ci/ensure-tools-image built on
// this machine (make test runs it first), found at the path the script
// derives from a hash of itself, the pinned versions in
// runner/supervisor/presets.go and the builder's source (toolsimage/*.go),
// computed the same way. repoRoot is the repository's root, relative to
// the test's package. It returns the image's directory (layout/ and
// digest in it) and its reference, as agents.tools_image names it.
func ToolsImage(t testing.TB, repoRoot string) (dir, ref string) {
	t.Helper()
	h := sha256.New()
	script, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "ensure-tools-image"))
	if err != nil {
		t.Fatal(err)
	}
	h.Write(script)
	presets, err := os.ReadFile(filepath.Join(repoRoot, "runner", "supervisor", "presets.go"))
	if err != nil {
		t.Fatal(err)
	}
	// As the script's grep -E '^[[:space:]]*(CodexVersion|...)[[:space:]]*='.
	for _, line := range regexp.MustCompile(`(?m)^[ \t]*(CodexVersion|OpenCodeVersion|ClaudeCodeVersion)[ \t]*=.*$`).FindAll(presets, -1) {
		h.Write(append(line, '\n'))
	}
	srcs, err := filepath.Glob(filepath.Join(repoRoot, "toolsimage", "*.go")) // sorted, as the script's C-locale glob
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range srcs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache := os.Getenv("INSPECT_TOOLS_CACHE")
	if cache == "" {
		cache = "/var/cache/inspect-tools"
	}
	dir = filepath.Join(cache, hex.EncodeToString(h.Sum(nil))[:16])
	digest, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		t.Fatalf("no tools image: run .ci/ensure-tools-image first (make test does): %v", err)
	}
	return dir, "oci:" + filepath.Join(dir, "layout") + "@" + strings.TrimSpace(string(digest))
}

// ToolsLayerCache is a layer cache beside the tools image, outside the
// clone, for tests whose sessions mount it: the image (1.3 GB) is then
// flattened once per machine, as a host flattens it once, not once per
// test. Everything in it is keyed by digest; the snapshots' own layers it
// gains are a few KB a run.
func ToolsLayerCache(t testing.TB, repoRoot string) string {
	t.Helper()
	dir, _ := ToolsImage(t, repoRoot)
	return filepath.Join(dir, "test-layers")
}
