package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// Verify must not run on anything the agent's phase left but the change
// (decision 0057). The workspace is handled by the verify workspace
// (verifyws.go) and setup's outputs in it (setupoutputs.go); this file
// handles the rest verify's commands and services read:
//
//   - the attempt's writable directories outside /workspace (the snapshot
//     caches, restored or empty, and the env's directories): a module
//     cache or a virtualenv verify's commands build from, where a service
//     keeps its data (a PostgreSQL cluster in /cache/pg). Once setup has
//     run, each is frozen as the lower layer of two overlays, the agent's
//     and verify's, so the agent's phase (the agent, its services,
//     whatever they started) writes only to its own upper directory, and
//     verify starts from exactly what setup left: on a restored session
//     the cache layers as restored (and refreshed by a stale setup), on a
//     cold one what setup wrote, without a for_agent service's data, whose
//     setup therefore runs again for verify;
//   - the session's environment (its loopback and System V IPC objects):
//     verify gets a new one, so a message queue or shared memory segment
//     that no process holds any more does not reach it either.
//
// The views are split in every session, with services or without: the go
// command does not check an extracted module against go.sum when it reads
// the module cache, nor pip a virtualenv's files, so an agent's edit there
// would otherwise pass verify while the committed change would fail.

// phaseWorkspace is the host directory the current phase's commands and
// services get as /workspace: the verify workspace in verify (never the
// agent's instead: without one, "" makes the sandbox refuse to start),
// the agent's otherwise.
func (s *session) phaseWorkspace() string {
	if s.phase == contract.PhaseVerify {
		if s.reproduce.running {
			return s.reproduce.dir
		}
		return s.verifyDir
	}
	return s.ws.work
}

// splitPhaseViews gives the agent's phase and verify each their own
// writable view of every writable directory of the attempt's that is bound
// into the sandbox (s.mounts), as setup left it: s.mounts becomes the
// agent's views, s.verifyMounts verify's.
func (s *session) splitPhaseViews() error {
	uid, gid := int(s.cfg.SandboxUID), int(s.cfg.SandboxGID)
	verify := append([]sandbox.Mount(nil), s.mounts...)
	// The reproduce run (reproduce.go) starts from what setup left too,
	// not from what verify left: a view of its own.
	var reproduce []sandbox.Mount
	if s.spec.Reproduce {
		reproduce = append([]sandbox.Mount(nil), s.mounts...)
	}
	for i, m := range s.mounts {
		if m.ReadOnly || m.File || !strings.HasPrefix(m.Source, s.ws.dir+string(filepath.Separator)) {
			continue // the identity files, the shared test build cache: never written by a session
		}
		agent, err := s.phaseView(m.Source, "agent", i)
		if err != nil {
			return err
		}
		if agent == "" {
			// No overlay here: the agent keeps the directory itself, and
			// verify (and the reproduce run) get a copy of it as it is now.
			if verify[i].Source, err = s.copyView(m, "verify", i, uid, gid); err != nil {
				return err
			}
			if reproduce != nil {
				if reproduce[i].Source, err = s.copyView(m, "reproduce", i, uid, gid); err != nil {
					return err
				}
			}
			continue
		}
		phases := []string{"verify"}
		if reproduce != nil {
			phases = append(phases, "reproduce")
		}
		for _, phase := range phases {
			v, err := s.phaseView(m.Source, phase, i)
			if err != nil {
				return err
			}
			if v == "" {
				return fmt.Errorf("the overlay for %s's view of %s could not be mounted", phase, m.Target)
			}
			if phase == "verify" {
				verify[i].Source = v
			} else {
				reproduce[i].Source = v
			}
		}
		s.mounts[i].Source = agent
	}
	s.verifyMounts, s.reproduce.mounts = verify, reproduce
	return nil
}

// copyView copies the writable directory m, for phase, where no overlay
// can be mounted.
func (s *session) copyView(m sandbox.Mount, phase string, i, uid, gid int) (string, error) {
	v := filepath.Join(s.ws.dir, "caches", fmt.Sprintf("%s-%d", phase, i))
	if err := copyTree(m.Source, v); err != nil {
		return "", fmt.Errorf("copying %s for %s: %w", m.Target, phase, err)
	}
	if err := chownTree(v, uid, gid); err != nil {
		return "", err
	}
	return v, nil
}

// phaseView mounts an overlay over lower for phase, at a new directory of
// the attempt's, and returns it; "" when this process cannot mount one
// (not root, or a path overlayfs options cannot carry).
func (s *session) phaseView(lower, phase string, i int) (string, error) {
	scratch := filepath.Join(s.ws.dir, "overlay", fmt.Sprintf("%s-%d", phase, i))
	target := filepath.Join(s.ws.dir, "caches", fmt.Sprintf("%s-%d", phase, i))
	if os.Geteuid() != 0 || strings.ContainsAny(lower+scratch+target, ",:\\") {
		return "", nil
	}
	fi, err := os.Lstat(lower)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return "", fmt.Errorf("%s is not a directory", lower)
	}
	upper, work := filepath.Join(scratch, "upper"), filepath.Join(scratch, "work")
	for _, d := range []string{upper, work, target} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", err
		}
	}
	// The view's root is the upper directory's: it keeps the frozen
	// directory's owner and mode, so the sandbox uid writes there as it
	// did before.
	if err := os.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return "", err
	}
	if err := os.Chmod(upper, fi.Mode().Perm()); err != nil {
		return "", err
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		if errors.Is(err, unix.EPERM) {
			return "", nil
		}
		return "", fmt.Errorf("mounting %s's view on %s: %w", phase, target, err)
	}
	s.overlays = append(s.overlays, overlay{target: target, upper: upper})
	return target, nil
}

// enterVerifyViews switches the session to verify's views (s.mounts) and
// replaces its environment with a fresh one. The agent's services are
// stopped already, and every command of the agent's phase has ended, so
// the old environment holds no process. false means the session ends
// (the outcome is set).
func (s *session) enterVerifyViews(ctx context.Context) bool {
	if s.verifyMounts != nil {
		s.mounts, s.verifyMounts = s.verifyMounts, nil
	}
	if s.env == nil {
		return true
	}
	s.closeEnvironment()
	return s.openEnvironment(ctx)
}
