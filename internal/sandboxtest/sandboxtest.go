// Package sandboxtest is test support for anything that runs the bubblewrap
// sandbox: the sandbox drops to an unprivileged uid, which must be able to
// reach the directories a test hands it.
package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ReachableDir returns a fresh directory the sandbox's uid can reach,
// removed at the end of the test. t.TempDir cannot serve: its parents are
// 0700 and root's.
func ReachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "inspect-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// BuildInspect builds cmd/inspect into dir and returns its path: the local
// executor runs that binary as `inspect runner`, exactly as in production.
func BuildInspect(dir string) (string, error) {
	bin := filepath.Join(dir, "inspect")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/inspecthq/inspect/cmd/inspect").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building cmd/inspect: %v\n%s", err, out)
	}
	return bin, nil
}

// MainWithForwarder is a TestMain's body for packages that run the
// supervisor inside their test binary: the sandbox's egress forwarder is
// `inspect runner forward`, and the test binary is not inspect, so it
// builds inspect once, hands its path to set, runs the tests and exits.
func MainWithForwarder(m *testing.M, set func(path string)) {
	dir, err := os.MkdirTemp("", "inspect-forwarder-")
	var bin string
	if err == nil {
		bin, err = BuildInspect(dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "building inspect for the forwarder: %v\n", err)
		os.Exit(1)
	}
	set(bin)
	code := m.Run()
	_ = os.RemoveAll(dir) // a leftover temp dir is harmless
	os.Exit(code)
}
