package images

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
)

// lockfileKeyDomain starts every hashed stream, so a key can never equal a
// hash of the same bytes made for another purpose, and a change of scheme
// (a new suffix) changes every key instead of colliding with old ones.
const lockfileKeyDomain = "inspect.snapshot.lockfile-key.v1"

// LockfileKey hashes the named lockfiles (paths relative to dir, slash
// separated, in the order given) together with the cache's path in the image
// into "sha256:<hex>". A missing lockfile hashes as absent, which differs
// from an empty one; it is not an error, because a repository may lack some
// of the lockfiles an ecosystem knows. Every field is length-prefixed, so
// moving bytes between a name and a content cannot produce the same key.
//
// Lockfiles are read through an os.Root at dir: a name with "..", an
// absolute name, or a symlink pointing outside dir is an error, so a
// repository cannot make the key depend on files outside its checkout.
func LockfileKey(dir, cachePath string, lockfiles []string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("images: lockfile dir: %w", err)
	}
	// Only read from; a close error cannot lose anything.
	defer func() { _ = root.Close() }()

	h := sha256.New()
	writeField(h, []byte(lockfileKeyDomain))
	writeField(h, []byte(cachePath))
	writeUint64(h, uint64(len(lockfiles)))
	for _, name := range lockfiles {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || hasDotDotPrefix(name) {
			return "", fmt.Errorf("images: lockfile name %q must be a clean relative path inside %s", name, dir)
		}
		writeField(h, []byte(name))
		content, err := root.ReadFile(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			writeUint64(h, 0) // absent
		case err != nil:
			return "", fmt.Errorf("images: lockfile %s: %w", name, err)
		default:
			writeUint64(h, 1) // present
			writeField(h, content)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func hasDotDotPrefix(name string) bool {
	return len(name) >= 3 && name[:3] == "../"
}

// writeField writes b's length then b. hash.Hash's Write never fails.
func writeField(h hash.Hash, b []byte) {
	writeUint64(h, uint64(len(b)))
	_, _ = h.Write(b)
}

// writeUint64 writes v big-endian. hash.Hash's Write never fails.
func writeUint64(h hash.Hash, v uint64) {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], v)
	_, _ = h.Write(buf[:])
}
