package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// extractedModeBits are the mode bits an extracted entry keeps. Setuid and
// setgid are dropped: the files belong to whoever extracts them, often
// root, and a layer must not be able to hand out that identity.
//
// Group and other write bits are dropped too: an extracted layer is shared
// by every later session on the host, so nothing in it may be writable by
// anyone but its owner (a 0777 directory setup left in a cache would
// otherwise let any local user change what later sessions restore).
const extractedModeBits = (fs.ModePerm &^ 0o022) | fs.ModeSticky

// whiteoutPrefix marks OCI whiteout entries, which delete files of lower
// layers; ExtractLayer unpacks one layer on its own and cannot honour them.
const whiteoutPrefix = ".wh."

// ExtractLayer unpacks the layer once into cacheDir/<algorithm>-<hex>/ (from
// its digest) and returns that directory; when it already exists it is
// returned as it is, without reading the layer.
//
// The layer is unpacked into a temp directory beside the final one, the
// filesystem is synced, and the directory is renamed into place, so a crash
// never leaves a half-extracted directory under the final name, and
// concurrent callers are safe: the first rename wins and the others discard
// their copy. The uncompressed stream is checked against the layer's diff
// ID, so a corrupt download is never cached under the digest.
//
// Unpacking is confined to the directory (through os.Root): an absolute
// name, a name with "..", or a name reaching through an extracted symlink to
// outside is an error. Whiteout entries (.wh.*) are an error too: layers are
// unpacked one by one, with nothing below them to delete from. Device and
// fifo entries are skipped. Permission bits and the sticky bit are kept;
// owners, setuid/setgid and mtimes are not.
func ExtractLayer(ctx context.Context, l v1.Layer, cacheDir string) (string, error) {
	digest, err := l.Digest()
	if err != nil {
		return "", fmt.Errorf("images: layer digest: %w", err)
	}
	if !isLowerAlnum(digest.Algorithm) || !isLowerHex(digest.Hex) || digest.Hex == "" {
		return "", fmt.Errorf("images: layer digest %q is not <algorithm>:<hex>", digest)
	}
	final := filepath.Join(cacheDir, digest.Algorithm+"-"+digest.Hex)
	if info, err := os.Stat(final); err == nil && info.IsDir() {
		return final, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("images: layer cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".extract-"+digest.Algorithm+"-"+digest.Hex[:min(12, len(digest.Hex))]+"-*")
	if err != nil {
		return "", fmt.Errorf("images: layer cache dir: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			// Best effort: whatever failed is the error to report, and a
			// leftover ".extract-*" is never mistaken for a finished layer.
			_ = removeTree(tmp)
		}
	}()
	if err := extractInto(ctx, l, tmp); err != nil {
		return "", fmt.Errorf("images: extract layer %s: %w", digest, err)
	}
	// MkdirTemp made it 0700; the layer's root is an image's "/", which is
	// conventionally world-readable, like the directories in it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("images: extracted layer %s: %w", digest, err)
	}
	if err := syncFilesystem(tmp); err != nil {
		return "", fmt.Errorf("images: sync extracted layer %s: %w", digest, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if info, statErr := os.Stat(final); statErr == nil && info.IsDir() {
			return final, nil // another caller finished first
		}
		return "", fmt.Errorf("images: move extracted layer %s into place: %w", digest, err)
	}
	renamed = true
	// The rename is what makes the layer visible; without this a crash
	// could forget it. A failure here leaves a valid directory, so it is
	// not an error.
	_ = syncDir(cacheDir)
	return final, nil
}

// extractInto unpacks the layer's tar into dir, an empty directory.
func extractInto(ctx context.Context, l v1.Layer, dir string) error {
	tr, err := openLayerTar(l)
	if err != nil {
		return err
	}
	defer tr.Close()

	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	// Only used to create entries; every write was already checked.
	defer closeQuietly(root)

	var dirs []dirEntryMode
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		d, err := extractEntry(root, tr, hdr)
		if err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		if d != nil {
			dirs = append(dirs, *d)
		}
	}
	if err := tr.verify(); err != nil {
		return err
	}
	// Directory modes last, deepest first: a read-only directory (the Go
	// module cache is full of them) must still be writable while its
	// contents are created.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := root.Chmod(dirs[i].name, dirs[i].mode); err != nil {
			return err
		}
	}
	return nil
}

type dirEntryMode struct {
	name string
	mode fs.FileMode
}

// extractEntry creates one entry; for a directory it returns the mode to
// apply at the end.
func extractEntry(root *os.Root, tr io.Reader, hdr *tar.Header) (*dirEntryMode, error) {
	name, err := entryName(hdr.Name)
	if err != nil {
		return nil, err
	}
	if name == "." {
		return nil, nil // the layer's root: it is the extraction directory
	}
	if strings.HasPrefix(path.Base(name), whiteoutPrefix) {
		return nil, errors.New("whiteout entries are not supported")
	}
	mode := hdr.FileInfo().Mode() & extractedModeBits
	switch hdr.Typeflag {
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return nil, nil // device and fifo nodes mean nothing outside a container
	case tar.TypeXGlobalHeader:
		return nil, nil // PAX defaults for later entries; the reader applies them
	}
	if parent := path.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return nil, err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := replaceWithDir(root, name); err != nil {
			return nil, err
		}
		return &dirEntryMode{name: name, mode: mode}, nil
	case tar.TypeReg:
		if err := removeNonDir(root, name); err != nil {
			return nil, err
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, err
		}
		if _, err := io.Copy(f, tr); err != nil {
			closeQuietly(f)
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		return nil, root.Chmod(name, mode)
	case tar.TypeSymlink:
		if err := removeNonDir(root, name); err != nil {
			return nil, err
		}
		// The target is stored verbatim; os.Root refuses to follow it out
		// of the directory when a later entry tries.
		return nil, root.Symlink(hdr.Linkname, name)
	case tar.TypeLink:
		target, err := entryName(hdr.Linkname)
		if err != nil {
			return nil, fmt.Errorf("hard link target: %w", err)
		}
		if err := removeNonDir(root, name); err != nil {
			return nil, err
		}
		return nil, root.Link(target, name)
	default:
		return nil, fmt.Errorf("unsupported tar entry type %q", hdr.Typeflag)
	}
}

// entryName cleans a tar name, refusing the ones that would leave the
// extraction directory by themselves.
func entryName(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("empty name")
	}
	if strings.HasPrefix(raw, "/") {
		return "", fmt.Errorf("absolute name %q", raw)
	}
	for _, part := range strings.Split(raw, "/") {
		if part == ".." {
			return "", fmt.Errorf("name %q contains ..", raw)
		}
	}
	return path.Clean(raw), nil
}

// replaceWithDir makes name a directory, writable for now, keeping one that
// is there (tars may list a directory twice) and replacing anything else, as
// a later tar entry overrides an earlier one.
func replaceWithDir(root *os.Root, name string) error {
	info, err := root.Lstat(name)
	switch {
	case err == nil && info.IsDir():
		return root.Chmod(name, 0o700)
	case err == nil:
		if err := root.Remove(name); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return root.Mkdir(name, 0o700)
}

// removeNonDir clears name for a new file, symlink or hard link. A
// directory there is an error rather than a silent recursive delete.
func removeNonDir(root *os.Root, name string) error {
	info, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		return errors.New("replaces a directory")
	}
	return root.Remove(name)
}

// removeTree deletes a partly extracted tree, first making its directories
// writable: read-only directories would otherwise stop os.RemoveAll for a
// caller without CAP_DAC_OVERRIDE.
func removeTree(dir string) error {
	// Errors are ignored here because RemoveAll below reports what matters.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func isLowerAlnum(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// layerTar reads a layer's uncompressed tar while hashing it, so that
// verify can check the whole stream against the layer's diff ID.
type layerTar struct {
	*tar.Reader
	rc   io.ReadCloser
	hash hash.Hash
	want v1.Hash
}

func openLayerTar(l v1.Layer) (*layerTar, error) {
	want, err := l.DiffID()
	if err != nil {
		return nil, fmt.Errorf("diff id: %w", err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	t := &layerTar{rc: rc, hash: sha256.New(), want: want}
	t.Reader = tar.NewReader(io.TeeReader(rc, t.hash))
	return t, nil
}

// Close closes the stream. Read-only; a close error after a full,
// verified read changes nothing.
func (t *layerTar) Close() { closeQuietly(t.rc) }

// verify hashes the rest of the stream (the tar's end-of-archive marker
// may not be its end) and checks the whole against the diff ID.
func (t *layerTar) verify() error {
	if _, err := io.Copy(io.Discard, io.TeeReader(t.rc, t.hash)); err != nil {
		return err
	}
	if t.want.Algorithm == "sha256" {
		if got := hex.EncodeToString(t.hash.Sum(nil)); got != t.want.Hex {
			return fmt.Errorf("content has diff id sha256:%s, the layer says %s", got, t.want)
		}
	}
	return nil
}
