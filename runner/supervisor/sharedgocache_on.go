//go:build inspecttest

package supervisor

// sharedGoCache is the shared Go build cache's host directory, in test
// builds only: set by UseSharedGoCache, or at link time
// (-X …/supervisor.sharedGoCache=DIR) by internal/sandboxtest for the
// inspect binary tests run.
var sharedGoCache string

func sharedGoCacheDir() string { return sharedGoCache }

// UseSharedGoCache makes every later session of this test process bind dir
// as its commands' GOCACHE (sharedgocache.go). internal/layers fails on a
// call outside test support.
func UseSharedGoCache(dir string) { sharedGoCache = dir }
