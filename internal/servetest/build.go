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

type builtBinary struct {
	once sync.Once
	dir  string // removed by Main
	bin  string
	err  error
}

// build is Build's binary, production is BuildProduction's.
var build, production builtBinary

// Build builds cmd/inspect, once per test binary, and returns the path of
// the binary. Its sessions share one warm Go build cache
// (sandboxtest.BuildInspectSharingGoCache). A failed build fails every
// test that asks for it.
func Build(t testing.TB) string {
	t.Helper()
	return build.get(t, sandboxtest.BuildInspectSharingGoCache)
}

// BuildProduction is Build without the shared cache: cmd/inspect exactly
// as production builds it, for a test of what a sandbox can see or reach.
func BuildProduction(t testing.TB) string {
	t.Helper()
	return production.get(t, sandboxtest.BuildInspect)
}

func (b *builtBinary) get(t testing.TB, buildInto func(dir string) (string, error)) string {
	t.Helper()
	b.once.Do(func() {
		// Not t.TempDir: the binary outlives the test that built it.
		b.dir, b.err = os.MkdirTemp("", "servetest-bin-")
		if b.err == nil {
			b.bin, b.err = buildInto(b.dir)
		}
	})
	if b.err != nil {
		t.Fatalf("servetest: %v", b.err)
	}
	return b.bin
}

// Main runs the tests and then removes the binary Build built. Call it from
// TestMain (func TestMain(m *testing.M) { servetest.Main(m) }); without it
// the binary is left in the system temp directory.
func Main(m *testing.M) {
	// Since Go 1.15 the test binary exits with m.Run's code when TestMain
	// returns, so there is no os.Exit here and the deferred removal runs.
	defer func() {
		for _, b := range []*builtBinary{&build, &production} {
			if b.dir != "" {
				_ = os.RemoveAll(b.dir) // best effort: a temp dir
			}
		}
	}()
	m.Run()
}
