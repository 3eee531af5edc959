// Package servetest runs real `inspect serve` processes for tests that need
// whole replicas: several against one database, killed like a host that
// dies, or stopped with SIGTERM like a deploy. It builds the binary once per
// test binary, writes each replica's YAML config, captures its JSON log
// lines, and stops whatever is still running at the test's cleanup.
package servetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// Package is what Build builds.
const Package = "github.com/inspecthq/inspect/cmd/inspect"

var build struct {
	once sync.Once
	dir  string // removed by Main
	bin  string
	err  error
	out  string
}

// Build builds cmd/inspect, once per test binary, and returns the path of
// the binary. A failed build fails every test that asks for it.
func Build(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		// Not t.TempDir: the binary outlives the test that built it.
		build.dir, build.err = os.MkdirTemp("", "servetest-bin-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "inspect")
		cmd := exec.Command(goTool(), "build", "-o", build.bin, Package)
		out, err := cmd.CombinedOutput()
		build.out, build.err = string(out), err
	})
	if build.err != nil {
		t.Fatalf("servetest: go build %s: %v\n%s", Package, build.err, build.out)
	}
	return build.bin
}

// Main runs the tests and then removes the binary Build built. Call it from
// TestMain (func TestMain(m *testing.M) { servetest.Main(m) }); without it
// the binary is left in the system temp directory.
func Main(m *testing.M) {
	// Since Go 1.15 the test binary exits with m.Run's code when TestMain
	// returns, so there is no os.Exit here and the deferred removal runs.
	defer func() {
		if build.dir != "" {
			_ = os.RemoveAll(build.dir) // best effort: a temp dir
		}
	}()
	m.Run()
}

// goTool is the go command: the one on PATH, as `go test` itself was most
// likely run, else the toolchain this test binary was built with.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
