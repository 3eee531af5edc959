// Package servetest runs real `inspect serve` processes for tests that need
// whole replicas: several against one database, killed like a host that
// dies, or stopped with SIGTERM like a deploy. It builds the binary once per
// test binary, writes each replica's YAML config, captures its JSON log
// lines, and stops whatever is still running at the test's cleanup.
package servetest

import (
	"os"
	"sync"
	"testing"

	"github.com/inspecthq/inspect/internal/sandboxtest"
)

var build struct {
	once sync.Once
	dir  string // removed by Main
	bin  string
	err  error
}

// Build builds cmd/inspect, once per test binary, and returns the path of
// the binary. A failed build fails every test that asks for it.
func Build(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		// Not t.TempDir: the binary outlives the test that built it.
		build.dir, build.err = os.MkdirTemp("", "servetest-bin-")
		if build.err == nil {
			build.bin, build.err = sandboxtest.BuildInspect(build.dir)
		}
	})
	if build.err != nil {
		t.Fatalf("servetest: %v", build.err)
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
