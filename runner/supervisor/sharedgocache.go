package supervisor

import (
	"maps"
	"strings"

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
// there is one and env does not name its own, and the go command's module
// index off (withoutModuleIndex).
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
	out["GODEBUG"] = withoutModuleIndex(out["GODEBUG"])
	return out
}

// withoutModuleIndex is a GODEBUG value with goindex=0 added to godebug's
// own settings. The go command keeps an index of each module in the
// module cache in GOCACHE, keyed by the module's directory alone, since a
// module there is checksummed and never changes (cmd/go/internal/modindex,
// moduleHash). Every sandbox's module cache is at the same path
// (/tmp/go/pkg/mod), and two tests' stand-ins may serve one module
// path@version with different files: with the build cache shared, the
// second would build from the first's index (its imports, its files).
// Compiled packages stay shared; they are keyed by their contents.
func withoutModuleIndex(godebug string) string {
	var kept []string
	for _, s := range strings.Split(godebug, ",") {
		if s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(s, "goindex=") {
			kept = append(kept, s)
		}
	}
	return strings.Join(append(kept, "goindex=0"), ",")
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
