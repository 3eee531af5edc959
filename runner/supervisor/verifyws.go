package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
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
// it, never as the agent did (setupoutputs.go). On a restored session,
// what the snapshot holds at its caches under /workspace fills in what is
// still missing there (decision 0063): the agent's phase may have removed
// or rewritten setup's copy (an `npm ci`, a `go clean -modcache`), and
// the layer is that copy as the snapshot built it. So verify's workspace
// is, by precedence, the pinned commit, the change, what setup left, and
// the snapshot's workspace caches; none of it but the change is the
// change, which is fixed before (decision 0023). Where setup left such a
// cache exactly as restored, that is the layer alone: a root supervisor
// mounts it there as an overlay instead of copying it (decision 0066).

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
	if s.restored != nil && s.setupOut != nil {
		for i, c := range s.restored.workspaceCaches {
			if !s.setupOut.asRestored[c.rel] {
				continue
			}
			ok, err := s.verifyLayerView(c, dir, i, uid, gid)
			if err != nil {
				return fmt.Errorf("giving verify the snapshot's %s: %w", c.rel, err)
			}
			if ok {
				if s.setupOut.viewed == nil {
					s.setupOut.viewed = map[string]bool{}
				}
				s.setupOut.viewed[c.rel] = true
			}
		}
	}
	if err := s.setupOut.carry(s.ws.work, dir, uid, gid); err != nil {
		return err
	}
	if s.restored != nil {
		for _, c := range s.restored.workspaceCaches {
			if s.setupOut != nil && s.setupOut.viewed[c.rel] {
				continue // the layer itself, already
			}
			if err := fillFromLayer(c, dir, uid, gid); err != nil {
				return fmt.Errorf("filling %s from the snapshot: %w", c.rel, err)
			}
		}
	}
	s.verifyDir = dir
	return nil
}

// verifyLayerView mounts, at the verify workspace dir's c.rel, an overlay
// whose lower layer is the extracted cache layer c, and says whether it
// did. It is only asked for a cache that setup left exactly as restored
// (setupOutputs.asRestored), so the layer is what setup left there, and
// the agent's writes, made in its own workspace's copy, are not in it. A
// copy of thousands of files costs seconds where a mount costs nothing;
// where one cannot be mounted (not root, a path overlayfs options cannot
// carry, a refused mount), false leaves it to the copy. It mounts nothing
// where the pinned commit or the change put anything at c.rel or above
// it but directories: those win, and are merged by the copy.
func (s *session) verifyLayerView(c workspaceCacheLayer, dir string, i, uid, gid int) (bool, error) {
	target := filepath.Join(dir, filepath.FromSlash(c.rel))
	scratch := filepath.Join(s.ws.dir, "overlay", fmt.Sprintf("verify-ws-%d", i))
	if os.Geteuid() != 0 || c.layerDir == "" || strings.ContainsAny(c.src+scratch+target, ",:\\") {
		return false, nil
	}
	if realDirsWithin(dir, path.Dir(c.rel), "/workspace") != nil {
		return false, nil
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		return false, err // nil: the change's (or the pinned commit's) files there
	}
	if err := mkdirOwned(dir, path.Dir(c.rel), uid, gid); err != nil {
		return false, err
	}
	ov, err := mountOverlay(c.src, target, scratch, c.layerDir, uid, gid)
	if err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("overlay mount for verify failed; copying the cache instead")
		// mountOverlay may have made the (empty, root's) mount point.
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		return false, nil
	}
	s.overlays = append(s.overlays, ov)
	// The view's root is the upper directory, the supervisor's: the
	// sandbox uid gets it with the layer's mode, as the copy would.
	fi, err := os.Stat(c.src)
	if err != nil {
		return false, err
	}
	if err := os.Lchown(target, uid, gid); err != nil {
		return false, err
	}
	if err := os.Chmod(target, fi.Mode().Perm()|0o700); err != nil {
		return false, err
	}
	return true, nil
}

// fillFromLayer adds to the verify workspace dir every entry of the
// extracted cache layer c that dir lacks, owned by uid:gid: what is
// there already (the change's, setup's) wins, a directory is merged, and
// where dir holds anything but a directory at or above an entry's path
// (the change put a file or a symlink there) nothing of the layer goes
// below it. Everything is made through an os.Root at dir, so nothing the
// workspace holds leads a write out of it.
func fillFromLayer(c workspaceCacheLayer, dir string, uid, gid int) error {
	if realDirsWithin(dir, c.rel, "/workspace") != nil {
		return nil // the change holds a file or a symlink there: it wins
	}
	if err := mkdirOwned(dir, c.rel, uid, gid); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // every write was checked already
	chown := uid != os.Geteuid() || gid != os.Getegid()
	return filepath.WalkDir(c.src, func(p string, d fs.DirEntry, err error) error {
		if p == c.src && errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipDir // an empty cache's layer
		}
		if err != nil {
			return err
		}
		r, err := filepath.Rel(c.src, p)
		if err != nil {
			return err
		}
		rel := filepath.Join(filepath.FromSlash(c.rel), r)
		existing, err := root.Lstat(rel)
		switch {
		case err == nil:
			if d.IsDir() && !existing.IsDir() {
				return filepath.SkipDir // a file of setup's (or the change's) there wins
			}
			return nil // a directory merges; a file there wins
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := root.Mkdir(rel, 0o700); err != nil {
				return err
			}
			if err := root.Chmod(rel, info.Mode().Perm()|0o700); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := root.Symlink(link, rel); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if err := copyFileIn(root, p, rel, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil // sockets, devices, fifos: nothing to keep
		}
		if chown {
			return root.Lchown(rel, uid, gid)
		}
		return nil
	})
}

// writeIndexTree writes every file of the private index into dir, as the
// blobs hold them.
func writeIndexTree(ctx context.Context, g *git, w *workspace, dir string) error {
	_, err := w.private(ctx, g, nil, nil, "checkout-index", "--all", "--force", "--prefix="+dir+string(filepath.Separator))
	return err
}
