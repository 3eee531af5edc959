package images

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// configCachedImage is an image whose config blob is read from a per-host
// cache directory (by the manifest's config digest) when it is there, and
// fetched once and kept there when not: a second session on the host then
// fetches no config blob, only the manifest.
type configCachedImage struct {
	v1.Image
	dir string
}

// WithConfigCache wraps img so its config blob is cached in dir (made if
// missing). What is read back is checked against the manifest's digest, so
// a damaged cache entry is fetched again, never used.
func WithConfigCache(img v1.Image, dir string) v1.Image {
	return &configCachedImage{Image: img, dir: dir}
}

// RawConfigFile is the config blob: from the cache, or fetched and kept.
func (c *configCachedImage) RawConfigFile() ([]byte, error) {
	m, err := c.Manifest()
	if err != nil {
		return nil, err
	}
	d := m.Config.Digest
	if d.Algorithm != "sha256" || len(d.Hex) != 64 || !isLowerHex(d.Hex) {
		return c.Image.RawConfigFile() // not a digest a file can be named by
	}
	file := filepath.Join(c.dir, "sha256-"+d.Hex+".json")
	if b, err := os.ReadFile(file); err == nil && sha256Hex(b) == d.Hex {
		return b, nil
	}
	b, err := c.Image.RawConfigFile()
	if err != nil {
		return nil, err
	}
	if sha256Hex(b) != d.Hex {
		return nil, fmt.Errorf("images: config blob does not match its digest %s", d)
	}
	// The blob is what was asked for whether or not it could be kept:
	// a failure to cache it costs a fetch next time, nothing else.
	_ = writeFileAtomic(c.dir, file, b)
	return b, nil
}

// ConfigFile parses RawConfigFile.
func (c *configCachedImage) ConfigFile() (*v1.ConfigFile, error) {
	b, err := c.RawConfigFile()
	if err != nil {
		return nil, err
	}
	return v1.ParseConfigFile(bytes.NewReader(b))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeFileAtomic writes b to file (in dir) through a temp file and a
// rename, so a reader never sees a partial file.
func writeFileAtomic(dir, file string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		closeQuietly(tmp)
		_ = os.Remove(tmp.Name()) // best effort: the write already failed
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name()) // best effort: the close already failed
		return err
	}
	return os.Rename(tmp.Name(), file)
}
