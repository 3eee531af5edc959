package images

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerCompressionLevel trades size for speed: the workspace layer is built
// on every snapshot, so building fast matters more than the last few percent
// of size. Changing it changes every layer digest DirLayer produces (cache
// reuse still works across the change, since it matches keys, not digests).
const layerCompressionLevel = gzip.BestSpeed

// mountPointMode is the mode of imagePath's directory and its parents in a
// DirLayer. It is fixed rather than read from hostDir because a host
// directory's own mode says nothing about the image (a temp dir is 0700) and
// would make the digest depend on where the tree was gathered.
const mountPointMode = 0o755

// DirLayer makes a deterministic gzip OCI layer of hostDir's contents placed
// at imagePath, an absolute path in the image: for "/cache/go/mod" the tar
// holds "cache/", "cache/go/", "cache/go/mod/" and then "cache/go/mod/...";
// for "/" it holds hostDir's entries at the image root.
//
// The same tree gives the same digest whenever and wherever it is built:
// entries come in WalkDir order (names sorted within each directory, a
// directory before its contents), mtimes are Unix 0, owners are 0 with no
// names, only permission bits are kept, and no access, change or PAX times
// or extended attributes are written. Regular files, directories and
// symlinks are kept (symlink targets verbatim, never followed); sockets,
// devices and fifos are skipped; hard links become separate regular files.
// exclude(rel), with rel slash-separated and relative to hostDir, drops a
// path and, for a directory, everything under it; nil keeps everything. A
// symlink at hostDir itself is followed.
//
// The layer is a snapshot taken now: the gzipped tar is written once to an
// unlinked temporary file, which the layer reads whenever it is asked, so
// later changes to hostDir cannot make its bytes disagree with its digest,
// and nothing is tarred or compressed twice. The file's space is freed when
// the layer is garbage-collected (os.File closes itself then) or the process
// exits.
func DirLayer(hostDir, imagePath string, exclude func(rel string) bool) (v1.Layer, error) {
	if !path.IsAbs(imagePath) || path.Clean(imagePath) != imagePath {
		return nil, fmt.Errorf("images: layer path %q must be absolute and clean", imagePath)
	}
	resolved, err := filepath.EvalSymlinks(hostDir)
	if err != nil {
		return nil, fmt.Errorf("images: layer source: %w", err)
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return nil, fmt.Errorf("images: layer source: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("images: layer source %s is not a directory", hostDir)
	}

	file, err := unlinkedTemp()
	if err != nil {
		return nil, err
	}
	layer, err := writeDirLayer(file, resolved, imagePath, exclude)
	if err != nil {
		closeQuietly(file)
		return nil, err
	}
	return layer, nil
}

// unlinkedTemp is a new temporary file already unlinked: the open
// descriptor keeps the data, and nothing is left behind however the
// process ends.
func unlinkedTemp() (*os.File, error) {
	file, err := os.CreateTemp("", "inspect-layer-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("images: layer temp file: %w", err)
	}
	if err := os.Remove(file.Name()); err != nil {
		closeQuietly(file)
		return nil, fmt.Errorf("images: unlink layer temp file: %w", err)
	}
	return file, nil
}

// layerWriter writes a gzipped tar into a file in one pass, hashing the
// tar (the diff ID) and the gzip (the digest) on the way.
type layerWriter struct {
	file                             *os.File
	gz                               *gzip.Writer
	tw                               *tar.Writer
	compressedHash, uncompressedHash hash.Hash
	compressed                       *countingWriter
}

// newLayerWriter starts a layer in file with imagePath's mount point
// (mountPoint) and returns the tar name prefix of what goes below it.
func newLayerWriter(file *os.File, imagePath string) (*layerWriter, string, error) {
	w := &layerWriter{file: file, compressedHash: sha256.New(), uncompressedHash: sha256.New(), compressed: &countingWriter{}}
	gz, err := gzip.NewWriterLevel(io.MultiWriter(file, w.compressedHash, w.compressed), layerCompressionLevel)
	if err != nil {
		return nil, "", fmt.Errorf("images: gzip writer: %w", err)
	}
	w.gz = gz
	w.tw = tar.NewWriter(io.MultiWriter(gz, w.uncompressedHash))
	prefix, err := w.mountPoint(imagePath)
	return w, prefix, err
}

// mountPoint writes imagePath's directory and its parents, so an extractor
// creates them with a known mode instead of guessing, and returns the tar
// name prefix of what goes below it ("" for "/").
func (w *layerWriter) mountPoint(imagePath string) (string, error) {
	prefix := strings.TrimPrefix(imagePath, "/")
	if prefix == "" {
		return "", nil
	}
	parts := strings.Split(prefix, "/")
	for i := range parts {
		name := strings.Join(parts[:i+1], "/") + "/"
		if err := w.tw.WriteHeader(dirHeader(name, mountPointMode)); err != nil {
			return "", fmt.Errorf("images: tar header %s: %w", name, err)
		}
	}
	return prefix + "/", nil
}

// finish closes the tar and the gzip and returns the layer they made.
func (w *layerWriter) finish() (*fileLayer, error) {
	if err := w.tw.Close(); err != nil {
		return nil, fmt.Errorf("images: close tar: %w", err)
	}
	if err := w.gz.Close(); err != nil {
		return nil, fmt.Errorf("images: close gzip: %w", err)
	}
	return &fileLayer{
		file:   w.file,
		size:   w.compressed.n,
		digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", w.compressedHash.Sum(nil))},
		diffID: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", w.uncompressedHash.Sum(nil))},
	}, nil
}

// walkRel walks dir like filepath.WalkDir, calling fn with each entry's
// slash-separated path relative to dir (dir itself is skipped), and skips
// what exclude drops: a file, or a directory with everything under it.
func walkRel(dir string, exclude func(string) bool, fn func(hostPath, rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(hostPath string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		if hostPath == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, hostPath)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if exclude != nil && exclude(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(hostPath, rel, d)
	})
}

// writeDirLayer tars and gzips the tree into file in one pass.
func writeDirLayer(file *os.File, hostDir, imagePath string, exclude func(string) bool) (*fileLayer, error) {
	w, prefix, err := newLayerWriter(file, imagePath)
	if err != nil {
		return nil, err
	}
	err = walkRel(hostDir, exclude, func(hostPath, rel string, d fs.DirEntry) error {
		return writeEntry(w.tw, hostPath, prefix+rel, d)
	})
	if err != nil {
		return nil, fmt.Errorf("images: tar %s: %w", hostDir, err)
	}
	return w.finish()
}

// writeEntry writes one walked path; types a layer cannot carry are skipped.
func writeEntry(tw *tar.Writer, hostPath, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	perm := int64(info.Mode().Perm())
	switch {
	case info.Mode().IsDir():
		return tw.WriteHeader(dirHeader(name+"/", perm))
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(hostPath)
		if err != nil {
			return err
		}
		hdr := baseHeader(name, perm)
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		return tw.WriteHeader(hdr)
	case info.Mode().IsRegular():
		hdr := baseHeader(name, perm)
		hdr.Typeflag = tar.TypeReg
		hdr.Size = info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		return copyFileExactly(tw, hostPath, info.Size())
	default:
		// Sockets, devices and fifos mean nothing in an image built from a
		// cache or a checkout; skipping them keeps the layer buildable.
		return nil
	}
}

// copyFileExactly copies size bytes of the file and fails if the file no
// longer has exactly that many: the header already promised size bytes, and
// a file changing under the walk must not produce a silently mixed layer.
func copyFileExactly(w io.Writer, hostPath string, size int64) error {
	f, err := os.Open(hostPath)
	if err != nil {
		return err
	}
	// Read-only; a close error cannot lose data.
	defer closeQuietly(f)
	if _, err := io.CopyN(w, f, size); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s shrank while being read", hostPath)
		}
		return err
	}
	var one [1]byte
	if n, err := f.Read(one[:]); n > 0 {
		return fmt.Errorf("%s grew while being read", hostPath)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func dirHeader(name string, perm int64) *tar.Header {
	hdr := baseHeader(name, perm)
	hdr.Typeflag = tar.TypeDir
	return hdr
}

// baseHeader holds everything that must not vary between builds: zero
// owners with no names, mtime at Unix 0, and no atime or ctime (which would
// force PAX records with the host's clock in them).
func baseHeader(name string, perm int64) *tar.Header {
	return &tar.Header{
		Name:    name,
		Mode:    perm,
		ModTime: time.Unix(0, 0),
	}
}

// WorkspaceExclude is the exclude function for the workspace layer. It drops
// git's volatile files, which change without the checkout changing and
// would make identical checkouts give different layers: .git/index,
// FETCH_HEAD, ORIG_HEAD, gc.pid, COMMIT_EDITMSG, the logs and hooks
// directories, and any *.lock under .git. It also drops .inspect at the
// workspace root, which is reserved for Inspect's own files at run time.
func WorkspaceExclude(rel string) bool {
	if rel == ".inspect" || strings.HasPrefix(rel, ".inspect/") {
		return true
	}
	gitRel, ok := strings.CutPrefix(rel, ".git/")
	if !ok {
		return false
	}
	if strings.HasSuffix(gitRel, ".lock") {
		return true
	}
	switch gitRel {
	case "index", "FETCH_HEAD", "ORIG_HEAD", "gc.pid", "COMMIT_EDITMSG", "logs", "hooks":
		return true
	}
	return strings.HasPrefix(gitRel, "logs/") || strings.HasPrefix(gitRel, "hooks/")
}

// fileLayer is a v1.Layer whose gzipped tar sits in an unlinked temp file.
type fileLayer struct {
	file   *os.File
	size   int64
	digest v1.Hash
	diffID v1.Hash
}

// Digest is the sha256 of the gzipped tar.
func (l *fileLayer) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID is the sha256 of the uncompressed tar.
func (l *fileLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

// Size is the gzipped tar's length.
func (l *fileLayer) Size() (int64, error) { return l.size, nil }

// MediaType is the OCI gzip layer type.
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

// Compressed returns a fresh reader over the gzipped tar; readers are
// independent (ReadAt) so concurrent uploads are safe.
func (l *fileLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(l.file, 0, l.size)), nil
}

// Uncompressed returns a fresh reader over the tar.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	gz, err := gzip.NewReader(io.NewSectionReader(l.file, 0, l.size))
	if err != nil {
		return nil, err
	}
	return gz, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// closeQuietly closes something only read from, or already failed, where a
// close error adds nothing the caller could act on.
func closeQuietly(c io.Closer) {
	_ = c.Close()
}
