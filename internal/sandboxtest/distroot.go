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
	return cachedRoot(t, repoRoot, "ensure-distroot", "INSPECT_DISTROOT_CACHE", "/var/cache/inspect-distroot", "distribution root")
}

// BusyboxRoot is the busybox root .ci/ensure-busyboxroot built on this
// machine, as DistributionRoot names its root: no libc, no loader, no
// node.
func BusyboxRoot(t testing.TB, repoRoot string) string {
	t.Helper()
	return cachedRoot(t, repoRoot, "ensure-busyboxroot", "INSPECT_BUSYBOXROOT_CACHE", "/var/cache/inspect-busyboxroot", "busybox root")
}

// cachedRoot is the OCI layout a .ci script built once per machine, in the
// directory named by the first 16 hex digits of the script's sha256 under
// its cache ($env, else def).
func cachedRoot(t testing.TB, repoRoot, scriptName, env, def, what string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join(repoRoot, ".ci", scriptName))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	cache := os.Getenv(env)
	if cache == "" {
		cache = def
	}
	dir := filepath.Join(cache, hex.EncodeToString(sum[:])[:16])
	digest, err := os.ReadFile(filepath.Join(dir, "digest"))
	if err != nil {
		t.Fatalf("no %s: run .ci/%s first (make test does): %v", what, scriptName, err)
	}
	// As images.LayoutPrefix: this package imports nothing of Inspect's.
	return "oci:" + filepath.Join(dir, "layout") + "@" + strings.TrimSpace(string(digest))
}
