package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// What setup leaves in the workspace outside the change (node_modules,
// a .deps of pip, a workspace cache) is what verify needs besides the
// pinned commit and the change. It follows into the verify workspace only
// as setup left it: after setup, every entry under those paths is stamped
// with its inode and ctime, which the sandbox uid cannot set back; before
// verify, only entries whose stamp is unchanged are carried over. What the
// agent added or rewrote there is left behind.

// fileStamp is what says an entry is the one setup left.
type fileStamp struct {
	ino   uint64
	ctime syscall.Timespec
}

// setupOutputs is the record of setup's outputs.
type setupOutputs struct {
	roots  []string             // workspace-relative, slash separated, none inside another
	stamps map[string]fileStamp // every entry under roots (roots included), by relative path
	// asRestored are the roots that are a restored snapshot's workspace
	// cache which setup left exactly as restored: what setup left there is
	// the extracted layer, so verify may see the layer itself (verifyws.go).
	asRestored map[string]bool
	// viewed are the roots verify sees through a view of the layer: not
	// carried.
	viewed map[string]bool
}

// stampBeforeSetup stamps, in the agent's workspace work, every entry
// under the restored workspace caches, before setup's commands run: a
// cache whose stamps setup leaves unchanged is the layer as restored.
func (r *restored) stampBeforeSetup(work string) error {
	if r == nil {
		return nil
	}
	r.setupRan = true
	r.beforeSetup = map[string]fileStamp{}
	for _, c := range r.workspaceCaches {
		if err := stampTree(work, c.rel, r.beforeSetup); err != nil {
			return err
		}
	}
	return nil
}

// untouchedBySetup says whether every entry under rel is as it was
// before setup (or setup ran nothing): nothing added, removed or changed.
func (r *restored) untouchedBySetup(rel string, after map[string]fileStamp) bool {
	if !r.setupRan {
		return true
	}
	under := func(m map[string]fileStamp) map[string]fileStamp {
		out := map[string]fileStamp{}
		for p, st := range m {
			if p == rel || strings.HasPrefix(p, rel+"/") {
				out[p] = st
			}
		}
		return out
	}
	return maps.Equal(under(r.beforeSetup), under(after))
}

// recordSetupOutputs stamps what setup left outside the change: the paths
// the pinned commit's .gitignore files ignore and the workspace caches.
func (s *session) recordSetupOutputs(ctx context.Context) error {
	excludeFile, _, err := writeBaseExcludes(ctx, s.git, s.ws, s.spec.PinnedSHA)
	if err != nil {
		return err
	}
	caches := s.workspaceCaches()
	args := []string{"ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-from=" + excludeFile, "--", ".", ":(exclude)" + inspectDir}
	for _, c := range caches {
		args = append(args, ":(exclude,literal)"+c)
	}
	out, err := s.ws.private(ctx, s.git, nil, nil, args...)
	if err != nil {
		return fmt.Errorf("listing what setup left: %w", err)
	}
	var roots []string
	for p := range strings.SplitSeq(string(out), "\x00") {
		if p = strings.TrimSuffix(p, "/"); p != "" {
			roots = append(roots, p)
		}
	}
	roots = outermost(append(roots, caches...))
	o := &setupOutputs{roots: roots, stamps: map[string]fileStamp{}}
	for _, r := range roots {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := stampTree(s.ws.work, r, o.stamps); err != nil {
			return err
		}
	}
	if s.restored != nil {
		for _, c := range s.restored.workspaceCaches {
			if slices.Contains(roots, c.rel) && o.stamps[c.rel] != (fileStamp{}) && s.restored.untouchedBySetup(c.rel, o.stamps) {
				if o.asRestored == nil {
					o.asRestored = map[string]bool{}
				}
				o.asRestored[c.rel] = true
			}
		}
	}
	s.setupOut = o
	return nil
}

// outermost sorts paths and drops any inside another.
func outermost(paths []string) []string {
	sort.Strings(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 {
			last := out[len(out)-1]
			if p == last || strings.HasPrefix(p, last+"/") {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// stampTree stamps root/rel and everything below it, never following a
// symlink; a rel under a parent that is not a real directory is skipped.
func stampTree(root, rel string, stamps map[string]fileStamp) error {
	if realDirsWithin(root, path.Dir(rel), "/workspace") != nil {
		return nil
	}
	return walkRel(root, rel, func(p string, st *syscall.Stat_t) {
		stamps[p] = fileStamp{ino: st.Ino, ctime: st.Ctim}
	})
}

// walkRel walks root/rel without following symlinks, calling f with each
// entry's relative path and stat. A missing rel is an empty walk.
func walkRel(root, rel string, f func(string, *syscall.Stat_t)) error {
	start := filepath.Join(root, filepath.FromSlash(rel))
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if p == start && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return errors.New("no stat data")
		}
		r, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f(filepath.ToSlash(r), st)
		return nil
	})
}

// carry moves what setup left, unchanged, from the agent's workspace to
// the verify workspace: a root whose every entry is as setup left it
// moves whole (a rename; a copy across filesystems), otherwise only its
// unchanged files and symlinks are copied. uid and gid own what is made.
func (o *setupOutputs) carry(from, to string, uid, gid int) error {
	if o == nil {
		return nil
	}
	for _, r := range o.roots {
		if o.viewed[r] {
			continue // verify sees the snapshot's layer there
		}
		if realDirsWithin(from, path.Dir(r), "/workspace") != nil {
			continue // the agent put a symlink above it: nothing there is setup's
		}
		if err := realDirsWithin(to, path.Dir(r), "/workspace"); err != nil {
			return &changeError{"the change puts " + err.Error() + ", above " + r + " that setup made"}
		}
		var kept, changed int
		var keep []string
		err := walkRel(from, r, func(p string, st *syscall.Stat_t) {
			if was, ok := o.stamps[p]; ok && was == (fileStamp{ino: st.Ino, ctime: st.Ctim}) {
				kept++
				if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
					keep = append(keep, p)
				}
				return
			}
			changed++
		})
		if err != nil {
			return err
		}
		if kept == 0 {
			continue
		}
		whole := changed == 0 && kept == o.countUnder(r)
		if err := o.place(from, to, r, keep, whole, uid, gid); err != nil {
			return fmt.Errorf("carrying %s into the verify workspace: %w", r, err)
		}
	}
	return nil
}

// countUnder counts the stamped entries at or under r.
func (o *setupOutputs) countUnder(r string) int {
	n := 0
	for p := range o.stamps {
		if p == r || strings.HasPrefix(p, r+"/") {
			n++
		}
	}
	return n
}

// place puts root r (whole) or its files keep into to.
func (o *setupOutputs) place(from, to, r string, keep []string, whole bool, uid, gid int) error {
	dst := filepath.Join(to, filepath.FromSlash(r))
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := mkdirOwned(to, path.Dir(r), uid, gid); err != nil {
		return err
	}
	if whole {
		src := filepath.Join(from, filepath.FromSlash(r))
		err := os.Rename(src, dst)
		var le *os.LinkError
		if errors.As(err, &le) && errors.Is(le.Err, syscall.EXDEV) {
			if err := copyTree(src, dst); err != nil {
				return err
			}
			return chownTree(dst, uid, gid)
		}
		return err
	}
	for _, p := range keep {
		if err := mkdirOwned(to, path.Dir(p), uid, gid); err != nil {
			return err
		}
		if err := moveEntry(filepath.Join(from, filepath.FromSlash(p)), filepath.Join(to, filepath.FromSlash(p)), uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// moveEntry moves the file or symlink src to dst: a rename, or across
// filesystems a copy owned by uid:gid.
func moveEntry(src, dst string, uid, gid int) error {
	err := os.Rename(src, dst)
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(le.Err, syscall.EXDEV) {
		return err
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(link, dst); err != nil {
			return err
		}
	case fi.Mode().IsRegular():
		root, err := os.OpenRoot(filepath.Dir(dst))
		if err != nil {
			return err
		}
		defer func() { _ = root.Close() }() // the copy was checked already
		if err := copyFileIn(root, src, filepath.Base(dst), fi.Mode().Perm()); err != nil {
			return err
		}
	default:
		return nil // sockets, devices, fifos: nothing to keep
	}
	return os.Lchown(dst, uid, gid)
}

// mkdirOwned makes the directories of rel under root that are missing,
// owned by uid:gid.
func mkdirOwned(root, rel string, uid, gid int) error {
	if rel == "." || rel == "" {
		return nil
	}
	p := root
	for _, part := range strings.Split(rel, "/") {
		p = filepath.Join(p, part)
		err := os.Mkdir(p, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
	}
	return nil
}
