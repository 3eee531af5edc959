package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// envCacheMounts makes, under parent, an empty directory for each directory
// the repo's env names outside /workspace, /tmp and the caches
// (contract.EnvCacheDirs), each to be bound writable at its path: so
// GOCACHE=/cache/go/build works with or without a snapshot section, on a
// cold clone and a restored snapshot alike, and nothing of it is packaged
// into an image. parent may only be traversed by others (0711); each
// directory is the sandbox uid's alone (0700; the caller hands it over).
// A directory may hold a cache, so these mounts go before the caches'.
func envCacheMounts(parent string, env map[string]string, caches []contract.Cache) ([]sandbox.Mount, error) {
	dirs := contract.EnvCacheDirs(env, caches)
	if len(dirs) == 0 {
		return nil, nil
	}
	if err := traversableDir(parent); err != nil {
		return nil, err
	}
	mounts := make([]sandbox.Mount, 0, len(dirs))
	for i, p := range dirs {
		host := filepath.Join(parent, fmt.Sprintf("env-%d", i))
		if err := os.Mkdir(host, 0o700); err != nil {
			return nil, fmt.Errorf("the env's directory %s: %w", p, err)
		}
		mounts = append(mounts, sandbox.Mount{Source: host, Target: p})
	}
	return mounts, nil
}

// traversableDir makes dir, or keeps it, with mode 0711 whatever the
// umask: others may pass through it to what the sandbox uid owns inside,
// never list it.
func traversableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	return os.Chmod(dir, 0o711)
}

// envDirs gives the session the env's directories (envCacheMounts) for
// every phase: they join s.mounts, so the agent's phase and verify each
// see what setup left there, and verify never what the agent wrote
// (splitPhaseViews).
func (s *session) envDirs() error {
	var caches []contract.Cache
	if s.spec.Snapshot != nil {
		caches = s.spec.Snapshot.Caches
	}
	mounts, err := envCacheMounts(filepath.Join(s.ws.dir, "caches"), s.spec.Env, caches)
	if err != nil {
		return err
	}
	s.mounts = append(mounts, s.mounts...)
	return nil
}
