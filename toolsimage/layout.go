package toolsimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Image is a built tools image.
type Image struct {
	// Layout is the OCI image layout directory it was written to.
	Layout string
	// Digest is its manifest's digest (sha256:<hex>).
	Digest string
}

// Ref is the image as agents.tools_image names it: oci:/abs/dir@sha256:...
func (i Image) Ref() string { return "oci:" + i.Layout + "@" + i.Digest }

// RefName is the image's name in its layout's index.json
// (org.opencontainers.image.ref.name).
const RefName = "inspect-tools"

// Build writes the tools image made of in as a one-layer OCI image layout
// at out (a new or empty directory). The same inputs give the same digest:
// the layer's entries are sorted by name, with mtime 0, uid and gid 0 and
// no user or group names, and the gzip stream carries no name or time.
func Build(ctx context.Context, in Inputs, out string) (Image, error) {
	entries, labels, err := gather(in)
	if err != nil {
		return Image{}, err
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return Image{}, err
	}
	blobs := filepath.Join(out, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return Image{}, err
	}
	if ents, err := os.ReadDir(out); err != nil || len(ents) != 1 {
		return Image{}, fmt.Errorf("tools image: %s must be a new or empty directory", out)
	}
	layer, err := writeLayer(ctx, entries, blobs)
	if err != nil {
		return Image{}, err
	}
	goarch := in.Arch
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	config := map[string]any{
		"architecture": goarch,
		"os":           "linux",
		"config":       map[string]any{"Labels": labels},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layer.diffID}},
	}
	cfg, err := writeJSONBlob(blobs, config)
	if err != nil {
		return Image{}, err
	}
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg.digest, "size": cfg.size},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer.digest, "size": layer.size}},
		"annotations":   map[string]string{"org.opencontainers.image.title": "Inspect agent tools"},
	}
	man, err := writeJSONBlob(blobs, manifest)
	if err != nil {
		return Image{}, err
	}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": man.digest, "size": man.size,
			"annotations": map[string]string{"org.opencontainers.image.ref.name": RefName}}},
	}
	data, err := json.Marshal(index)
	if err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(out, "index.json"), data, 0o644); err != nil {
		return Image{}, err
	}
	if err := os.WriteFile(filepath.Join(out, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return Image{}, err
	}
	return Image{Layout: out, Digest: man.digest}, nil
}

type blob struct {
	digest string
	size   int64
	diffID string // a layer's uncompressed digest
}

func writeJSONBlob(blobs string, v any) (blob, error) {
	data, err := json.Marshal(v) // map keys are sorted: the same bytes every time
	if err != nil {
		return blob{}, err
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(blobs, h), data, 0o644); err != nil {
		return blob{}, err
	}
	return blob{digest: "sha256:" + h, size: int64(len(data))}, nil
}

// countingHash counts and hashes what is written through it.
type countingHash struct {
	h hash.Hash
	n int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

// writeLayer writes entries (sorted) as a gzipped tar into blobs.
func writeLayer(ctx context.Context, entries []entry, blobs string) (blob, error) {
	tmp, err := os.CreateTemp(blobs, ".layer-*")
	if err != nil {
		return blob{}, err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op that fails: ignored
	defer tmp.Close()
	compressed := &countingHash{h: sha256.New()}
	uncompressed := &countingHash{h: sha256.New()}
	// BestSpeed: most of the bytes are native binaries, which compress
	// little, and the image is built and flattened on the host that
	// uses it.
	gz, err := gzip.NewWriterLevel(io.MultiWriter(tmp, compressed), gzip.BestSpeed)
	if err != nil {
		return blob{}, err
	}
	tw := tar.NewWriter(io.MultiWriter(gz, uncompressed))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return blob{}, err
		}
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case e.isDir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		case e.link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return blob{}, err
		}
		switch {
		case e.data != nil:
			if _, err := tw.Write(e.data); err != nil {
				return blob{}, err
			}
		case e.src != "":
			if err := copyFile(tw, e.src, e.size); err != nil {
				return blob{}, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return blob{}, err
	}
	if err := gz.Close(); err != nil {
		return blob{}, err
	}
	if err := tmp.Sync(); err != nil {
		return blob{}, err
	}
	if err := tmp.Close(); err != nil {
		return blob{}, err
	}
	h := hex.EncodeToString(compressed.h.Sum(nil))
	if err := os.Rename(tmp.Name(), filepath.Join(blobs, h)); err != nil {
		return blob{}, err
	}
	if err := os.Chmod(filepath.Join(blobs, h), 0o644); err != nil {
		return blob{}, err
	}
	return blob{digest: "sha256:" + h, size: compressed.n, diffID: "sha256:" + hex.EncodeToString(uncompressed.h.Sum(nil))}, nil
}

// copyFile copies exactly size bytes of src: a file that changed size
// since it was listed fails the build rather than the tar.
func copyFile(w io.Writer, src string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if n != size {
		return fmt.Errorf("%s changed while the image was built", src)
	}
	return nil
}
