package sandboxtest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DistributionRoot is the Debian root .ci/ensure-distroot built on this
// machine (make test runs it first), found at the path the script derives
// from its own hash, as snapshots.base_image names an OCI layout:
// oci:/abs/dir@sha256:<hex>. repoRoot is the repository's root, relative
// to the test's package. The image's config sets DISTROOT=debian; it has
// no git and no /etc/debian_version.
func DistributionRoot(t testing.TB, repoRoot string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "ensure-distroot"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	cache := os.Getenv("INSPECT_DISTROOT_CACHE")
	if cache == "" {
		cache = "/var/cache/inspect-distroot"
	}
	dir := filepath.Join(cache, hex.EncodeToString(sum[:])[:16])
	digest, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		t.Fatalf("no distribution root: run .ci/ensure-distroot first (make test does): %v", err)
	}
	// As images.LayoutPrefix: this package imports nothing of Inspect's.
	return "oci:" + filepath.Join(dir, "layout") + "@" + strings.TrimSpace(string(digest))
}
