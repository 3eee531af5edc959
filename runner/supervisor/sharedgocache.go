package supervisor

import (
	"maps"

	"github.com/inspecthq/inspect/runner/sandbox"
)

// SharedGoCacheTarget is where a shared Go build cache is bound inside the
// sandbox (UseSharedGoCache).
const SharedGoCacheTarget = "/inspect-test-gocache"

// sharedGoCache is a host directory that every sandboxed command of every
// session gets as its GOCACHE, unless the repo's env names its own. Only
// tests set it: UseSharedGoCache from a test process, or the link-time -X
// flag of the inspect binary that internal/sandboxtest builds for tests. A
// production build leaves it empty, so sessions never share a build cache:
// one session could otherwise plant compiled code that another then runs.
//
// Tests share one so that each sandboxed `go test` of a sample repository
// does not compile the standard library again (about fifteen CPU-seconds
// each, most of the suite's time once added up); a test about caches sets
// GOCACHE in its repo env, which wins.
var sharedGoCache string

// UseSharedGoCache makes every later session of this process bind dir as
// its commands' GOCACHE (see sharedGoCache). For tests only:
// internal/layers fails on a call outside test support.
func UseSharedGoCache(dir string) { sharedGoCache = dir }

// withSharedGoCache is env with GOCACHE pointed at the shared cache, when
// there is one and env does not name its own.
func withSharedGoCache(env map[string]string) map[string]string {
	if sharedGoCache == "" {
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
// (the repo's) does not name its own GOCACHE.
func sharedGoCacheMounts(env map[string]string) []sandbox.Mount {
	if _, ok := env["GOCACHE"]; sharedGoCache == "" || ok {
		return nil
	}
	return []sandbox.Mount{{Source: sharedGoCache, Target: SharedGoCacheTarget}}
}
