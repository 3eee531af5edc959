package supervisor

import (
	"maps"

	"github.com/inspecthq/inspect/runner/sandbox"
)

// SharedGoCacheTarget is where a shared Go build cache is bound inside the
// sandbox (UseSharedGoCache).
const SharedGoCacheTarget = "/inspect-test-gocache"

// A shared Go build cache is a host directory that every sandboxed command
// of every session gets as its GOCACHE, unless the repo's (or the image's)
// env names its own. It exists only in test builds (the inspecttest build
// tag, sharedgocache_on.go): a production build has no way to share a
// cache between sessions, since one session could otherwise plant compiled
// code that another then runs (decision 0050).
//
// Tests share one so that each sandboxed `go test` of a sample repository
// does not compile the standard library again (about fifteen CPU-seconds
// each, most of the suite's time once added up); a test about caches sets
// GOCACHE in its repo env, which wins.

// withSharedGoCache is env with GOCACHE pointed at the shared cache, when
// there is one and env does not name its own.
func withSharedGoCache(env map[string]string) map[string]string {
	if sharedGoCacheDir() == "" {
		return env
	}
	if _, ok := env["GOCACHE"]; ok {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	out["GOCACHE"] = SharedGoCacheTarget
	return out
}

// sharedGoCacheMounts binds the shared cache, when there is one and env
// (the repo's and the image's) does not name its own GOCACHE.
func sharedGoCacheMounts(env map[string]string) []sandbox.Mount {
	dir := sharedGoCacheDir()
	if _, ok := env["GOCACHE"]; dir == "" || ok {
		return nil
	}
	return []sandbox.Mount{{Source: dir, Target: SharedGoCacheTarget}}
}
