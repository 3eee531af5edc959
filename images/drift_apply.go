package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ApplyDrift writes a drift layer (DriftLayer's) onto dir, which holds the
// tree the layers below it make at imagePath: its files are written whole,
// replacing what is there, its directories made or given their mode, and
// each whiteout deletes the path it names. Everything is done through an
// os.Root at dir, so no entry, symlink or whiteout can reach outside it;
// entries outside imagePath, hard links, opaque whiteouts and special files
// are refused (DriftLayer makes none). ctx is checked between entries.
func ApplyDrift(ctx context.Context, layer v1.Layer, dir, imagePath string) (DriftStats, error) {
	var stats DriftStats
	digest, err := layer.Digest()
	if err != nil {
		return stats, fmt.Errorf("images: drift layer digest: %w", err)
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return stats, fmt.Errorf("images: drift layer %s: %w", digest, err)
	}
	defer closeQuietly(rc) // read-only
	root, err := os.OpenRoot(dir)
	if err != nil {
		return stats, fmt.Errorf("images: drift layer %s: %w", digest, err)
	}
	defer closeQuietly(root)
	prefix := strings.TrimPrefix(imagePath, "/") + "/"
	tr := tar.NewReader(rc)
	for {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return stats, nil
		}
		if err != nil {
			return stats, fmt.Errorf("images: drift layer %s: %w", digest, err)
		}
		if err := applyDriftEntry(root, tr, hdr, prefix, &stats); err != nil {
			return stats, fmt.Errorf("images: drift layer %s: entry %q: %w", digest, hdr.Name, err)
		}
	}
}

func applyDriftEntry(root *os.Root, tr io.Reader, hdr *tar.Header, prefix string, stats *DriftStats) error {
	name := strings.TrimSuffix(hdr.Name, "/")
	if name+"/" == prefix || strings.HasPrefix(prefix, name+"/") {
		if hdr.Typeflag != tar.TypeDir {
			return errors.New("the mount point or a parent is not a directory")
		}
		return nil // the mount point and its parents: dir itself
	}
	rel, ok := strings.CutPrefix(name, prefix)
	if !ok || rel == "" {
		return fmt.Errorf("outside %s", prefix)
	}
	if path.Clean(rel) != rel || strings.HasPrefix(rel, "../") || rel == ".." || path.IsAbs(rel) {
		return errors.New("not a clean relative path")
	}
	dir, base := path.Split(rel)
	if target, ok := strings.CutPrefix(base, whiteoutPrefix); ok {
		if target == "" || strings.HasPrefix(target, whiteoutPrefix) {
			return errors.New("opaque or malformed whiteouts are not made by drift layers")
		}
		stats.Deleted++
		return root.RemoveAll(dir + target)
	}
	perm := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if fi, err := root.Lstat(rel); err == nil && !fi.IsDir() {
			if err := root.Remove(rel); err != nil {
				return err
			}
		}
		if err := root.MkdirAll(rel, perm); err != nil {
			return err
		}
		return root.Chmod(rel, perm)
	case tar.TypeReg:
		if err := removeForReplace(root, rel); err != nil {
			return err
		}
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if n != hdr.Size {
			return fmt.Errorf("%d bytes, not the %d promised", n, hdr.Size)
		}
		if err := root.Chmod(rel, perm); err != nil { // past the umask
			return err
		}
		stats.Files++
		stats.Bytes += n
		return nil
	case tar.TypeSymlink:
		if err := removeForReplace(root, rel); err != nil {
			return err
		}
		stats.Files++
		// The target is stored verbatim; the os.Root refuses to follow it
		// out of dir, here and for the entries after it.
		return root.Symlink(hdr.Linkname, rel)
	default:
		return fmt.Errorf("entry type %q is not made by drift layers", hdr.Typeflag)
	}
}

// removeForReplace clears the way for a new file at rel: a file or symlink
// there is removed; a directory there is an error, since a drift layer
// whites a replaced directory out before it writes the file.
func removeForReplace(root *os.Root, rel string) error {
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("a directory is in the way")
	}
	return root.Remove(rel)
}
