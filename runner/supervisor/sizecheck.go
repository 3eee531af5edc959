package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// Sizes are checked with lstat before anything reads a file (git add would
// hash it, and a 64 GB sparse file takes longer than the finish timeout):
// a file the change would carry that is over the session's byte limit, or
// files that together are, refuse the change at once.

// lstatInTree lstats rel (slash separated) under root without following a
// symlink on the way: a parent that is not a real directory means rel is
// not there, as git sees it. dirs caches what is known of parents.
func lstatInTree(root, rel string, dirs map[string]bool) (fs.FileInfo, error) {
	parts := strings.Split(rel, "/")
	p := ""
	for _, part := range parts[:len(parts)-1] {
		p = pathJoin(p, part)
		real, seen := dirs[p]
		if !seen {
			fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
			real = err == nil && fi.IsDir()
			dirs[p] = real
		}
		if !real {
			return nil, fs.ErrNotExist
		}
	}
	return os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
}

func pathJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// checkChangeSizes refuses, before git reads anything, a change whose
// files are over maxBytes: any untracked file, or tracked one whose size
// differs from the pinned commit's (so it changed), over the limit by
// itself, or all of them together. excluded says which tracked paths
// are never staged. A tracked file of unchanged size is
// left to git, which reads no more than the pinned commit held.
func checkChangeSizes(ctx context.Context, work string, tree map[string]baseEntry, untracked []string, excluded func(string) bool, maxBytes int64) error {
	dirs := map[string]bool{}
	var total int64
	check := func(p string, size int64) error {
		if size > maxBytes {
			return &changeError{fmt.Sprintf("the change writes %s, %d bytes, more than the %d this session allows", contract.CleanProgressMessage(p), size, maxBytes)}
		}
		total += size
		if total > maxBytes {
			return &changeError{fmt.Sprintf("the change writes at least %d bytes, more than the %d this session allows", total, maxBytes)}
		}
		return nil
	}
	for _, p := range untracked {
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := lstatInTree(work, strings.TrimSuffix(p, "/"), dirs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since it was listed
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			if err := check(p, fi.Size()); err != nil {
				return err
			}
		}
	}
	for p, e := range tree {
		if err := ctx.Err(); err != nil {
			return err
		}
		if excluded(p) {
			continue // never staged
		}
		fi, err := lstatInTree(work, p, dirs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted: nothing to read
		}
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && fi.Size() != e.size {
			if err := check(p, fi.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}
