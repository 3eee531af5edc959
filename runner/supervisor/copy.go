package supervisor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// copyTree copies the directory src into dst (created if missing),
// keeping permission bits and symlinks, over whatever dst holds. Nothing is
// followed: src is walked without following symlinks, and dst is written
// through an os.Root, each directory made a real one before anything goes
// in it, so a symlink already in dst (a checkout's, say) is replaced, never
// written through. Directories are made owner-writable, so setup can change
// the copy. A missing src is an empty tree.
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // every write was checked already
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if p == src && errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		existing, err := root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			existing = nil
		case err != nil:
			return err
		}
		if d.IsDir() {
			if existing != nil && !existing.IsDir() {
				if err := root.Remove(rel); err != nil {
					return err
				}
				existing = nil
			}
			if existing == nil {
				if err := root.Mkdir(rel, 0o700); err != nil {
					return err
				}
			}
			return root.Chmod(rel, info.Mode().Perm()|0o700)
		}
		if existing != nil {
			if existing.IsDir() {
				return fmt.Errorf("%s would replace a directory", rel)
			}
			if err := root.Remove(rel); err != nil {
				return err
			}
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return root.Symlink(link, rel)
		case d.Type().IsRegular():
			return copyFileIn(root, p, rel, info.Mode().Perm())
		}
		return nil // sockets, devices, fifos: nothing to keep
	})
}

// copyFileIn copies the file src to rel, which does not exist, in
// root.
func copyFileIn(root *os.Root, src, rel string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read-only
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return root.Chmod(rel, mode)
}
