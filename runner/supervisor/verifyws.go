package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Verify runs on exactly the pinned commit plus the collected change,
// never on the workspace the agent left: a file the change does not carry
// (ignored by the pinned commit's rules, or under .inspect/) cannot make
// verify pass, and nothing verify writes (a JUnit report, a build output)
// can join the change, which is fixed before verify starts.
//
// The verify workspace is written by the supervisor's git from the
// private index, which after collection is the pinned commit's tree with
// the change staged (attributes neutralised, so the files are the blobs'
// bytes), with a .git of its own like the agent's. What setup left outside
// the change (node_modules, the workspace caches) follows as setup left
// it, never as the agent did (setupoutputs.go).

// verifyDirName is the verify workspace's directory in the attempt's.
const verifyDirName = "verify"

// buildVerifyWorkspace writes the verify workspace and hands it to the
// sandbox uid. It runs after collectChange staged the change.
func (s *session) buildVerifyWorkspace(ctx context.Context) error {
	dir := filepath.Join(s.ws.dir, verifyDirName)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if err := writeIndexTree(ctx, s.git, s.ws, dir); err != nil {
		return fmt.Errorf("writing the pinned commit and the change: %w", err)
	}
	if err := s.ws.ownGit(ctx, s.git, dir, s.spec.PinnedSHA); err != nil {
		return fmt.Errorf("giving the verify workspace its .git: %w", err)
	}
	// Handed over before setup's outputs join it: those are the sandbox
	// uid's already, and may be many.
	uid, gid := int(s.cfg.SandboxUID), int(s.cfg.SandboxGID)
	if uid != os.Geteuid() || gid != os.Getegid() {
		if err := chownTree(dir, uid, gid); err != nil {
			return err
		}
	}
	if err := s.setupOut.carry(s.ws.work, dir, uid, gid); err != nil {
		return err
	}
	s.verifyDir = dir
	return nil
}

// writeIndexTree writes every file of the private index into dir, as the
// blobs hold them.
func writeIndexTree(ctx context.Context, g *git, w *workspace, dir string) error {
	_, err := w.private(ctx, g, nil, nil, "checkout-index", "--all", "--force", "--prefix="+dir+string(filepath.Separator))
	return err
}
