// Package sandboxtest is test support for anything that runs the bubblewrap
// sandbox: the sandbox drops to an unprivileged uid, which must be able to
// reach the directories a test hands it.
package sandboxtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// BuildInspect builds cmd/inspect into dir as production does and returns
// its path: the local executor runs that binary as `inspect runner`.
func BuildInspect(dir string) (string, error) { return buildInspect(dir, "") }

// BuildInspectSharingGoCache is BuildInspect but for one thing: the
// sessions its supervisors run share SharedGoCache's Go build cache (built
// with the inspecttest tag, the directory set at link time; decision 0050),
// so a sandboxed `go test` does not compile the standard library again. A test of what a sandbox
// can see or reach uses BuildInspect: the shared cache is a way between
// sessions that production never opens.
func BuildInspectSharingGoCache(dir string) (string, error) {
	cache, err := SharedGoCache()
	if err != nil {
		return "", err
	}
	return buildInspect(dir, cache)
}

func buildInspect(dir, sharedGoCache string) (string, error) {
	bin := filepath.Join(dir, "inspect")
	args := []string{"build", "-o", bin}
	if sharedGoCache != "" {
		args = append(args, "-tags", "inspecttest",
			"-ldflags", "-X github.com/inspecthq/inspect/runner/supervisor.sharedGoCache="+sharedGoCache)
	}
	cmd := exec.Command("go", append(args, "github.com/inspecthq/inspect/cmd/inspect")...)
	// Static, as production builds it: the forwarder runs inside the
	// sandbox's root, which may have no libc (a busybox root).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building cmd/inspect: %v\n%s", err, out)
	}
	return bin, nil
}

// MainWithForwarder is a TestMain's body for packages that run the
// supervisor inside their test binary: the sandbox's egress forwarder is
// `inspect runner forward`, and the test binary is not inspect, so it
// builds inspect once, hands set its path and the shared Go build cache
// (SharedGoCache, for supervisor.UseSharedGoCache: this package cannot
// import the supervisor, whose own tests use it), runs the tests and exits.
func MainWithForwarder(m *testing.M, set func(forwarder, sharedGoCache string)) {
	dir, err := os.MkdirTemp("", "inspect-forwarder-")
	var bin, cache string
	if err == nil {
		bin, err = BuildInspect(dir)
	}
	if err == nil {
		cache, err = SharedGoCache()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "building inspect for the forwarder: %v\n", err)
		os.Exit(1)
	}
	set(bin, cache)
	code := m.Run()
	_ = os.RemoveAll(dir) // a leftover temp dir is harmless
	os.Exit(code)
}

// SharedGoCache is the Go build cache the sandboxed sessions of tests
// share (supervisor.UseSharedGoCache), made on first use: one directory
// per machine and user, kept between runs like the go command's own, and
// writable by the sandbox's uid (sticky, like /tmp). One that another user
// made first is refused: whoever owns it could plant compiled code in
// the tests' sessions. A test about caches names its own GOCACHE in the
// repo's env, which wins.
func SharedGoCache() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("inspect-test-gocache-%d", os.Geteuid()))
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("the shared Go build cache: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("the shared Go build cache: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the shared Go build cache: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("the shared Go build cache: %s is not this user's; remove it", dir)
	}
	// The sandbox runs as another uid (65600 under root) and writes here.
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		return "", fmt.Errorf("the shared Go build cache: %w", err)
	}
	return dir, nil
}
