package supervisor

import (
	"maps"
	"strings"
)

// withImageEnv is the env a base image's config sets (imageEnv, KEY=VALUE
// each) under the repo's (repoEnv wins): the image's PATH, GOPATH or
// JAVA_HOME apply unless the repo says otherwise. HOME and Inspect's own
// names are left out, since the sandbox sets them (sandboxEnv), as are
// malformed entries. repoEnv itself is not changed.
func withImageEnv(imageEnv []string, repoEnv map[string]string) map[string]string {
	if len(imageEnv) == 0 {
		return repoEnv
	}
	out := map[string]string{}
	for _, kv := range imageEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || k == "HOME" || strings.HasPrefix(k, "INSPECT_") || strings.ContainsRune(kv, 0) {
			continue
		}
		out[k] = v
	}
	maps.Copy(out, repoEnv)
	return out
}
