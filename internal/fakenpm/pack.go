package fakenpm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// packTime is the modification time of every entry: npm pack writes
// 1985-10-26T08:15:00Z so that a tarball depends only on its files, and so
// does Pack.
var packTime = time.Date(1985, time.October, 26, 8, 15, 0, 0, time.UTC)

// Tarball is a packed npm package and the digests a packument's dist
// object gives for it.
type Tarball struct {
	// Data is the gzipped tar, every entry under package/.
	Data []byte
	// Integrity is the Subresource Integrity string of Data,
	// "sha512-<base64>", as in dist.integrity and package-lock.json.
	Integrity string
	// Shasum is the hex SHA-1 of Data, as in dist.shasum.
	Shasum string
}

// Pack makes an npm package tarball as npm pack does: a gzipped tar with
// each file at package/<path>, regular files only, package.json first and
// the rest in path order, fixed times and modes. files maps a path inside
// the package ("index.js", "lib/util.js") to its contents and must hold a
// package.json. Paths must be relative and stay inside the package.
func Pack(files map[string]string) (Tarball, error) {
	if _, ok := files["package.json"]; !ok {
		return Tarball{}, fmt.Errorf("pack: no package.json among %d files", len(files))
	}
	names := make([]string, 0, len(files))
	for name := range files {
		clean := path.Clean(name)
		if clean != name || path.IsAbs(name) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return Tarball{}, fmt.Errorf("pack: %q is not a clean relative path inside the package", name)
		}
		if name != "package.json" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	names = append([]string{"package.json"}, names...)

	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		body := files[name]
		mode := int64(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755 // npm keeps bin scripts executable
		}
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     "package/" + name,
			Mode:     mode,
			Size:     int64(len(body)),
			ModTime:  packTime,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return Tarball{}, fmt.Errorf("pack %s: %w", name, err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return Tarball{}, fmt.Errorf("pack %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return Tarball{}, fmt.Errorf("pack: %w", err)
	}
	if err := gz.Close(); err != nil {
		return Tarball{}, fmt.Errorf("pack: %w", err)
	}
	return newTarball(buf.Bytes()), nil
}

func newTarball(data []byte) Tarball {
	return Tarball{Data: data, Integrity: Integrity(data), Shasum: Shasum(data)}
}

// Integrity is the sha512 Subresource Integrity string of data, the form
// npm writes to dist.integrity and package-lock.json.
func Integrity(data []byte) string {
	sum := sha512.Sum512(data)
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Shasum is the hex SHA-1 of data, the legacy dist.shasum.
func Shasum(data []byte) string {
	sum := sha1.Sum(data)
	return hex.EncodeToString(sum[:])
}
