// Package layertest makes OCI image layers and images by hand for tests:
// tars with exactly the entries a test names (whiteouts, hostile names,
// setuid bits, devices), which a directory walk could never produce.
package layertest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one tar entry.
type Entry struct {
	Name     string
	Typeflag byte // tar.TypeReg when zero
	Link     string
	Content  string
	// Mode is the entry's mode bits (setuid included); 0644 for a file
	// and 0755 for a directory when zero.
	Mode int64
}

// File is a regular file entry.
func File(name, content string, mode int64) Entry {
	return Entry{Name: name, Typeflag: tar.TypeReg, Content: content, Mode: mode}
}

// Dir is a directory entry.
func Dir(name string) Entry { return Entry{Name: name, Typeflag: tar.TypeDir} }

// Symlink is a symlink entry.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Typeflag: tar.TypeSymlink, Link: target}
}

// Layer is a gzip OCI layer holding exactly entries, in order.
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		flag := e.Typeflag
		if flag == 0 {
			flag = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.Name, Typeflag: flag, Linkname: e.Link, Mode: e.Mode, Format: tar.FormatPAX}
		if flag == tar.TypeReg {
			hdr.Size = int64(len(e.Content))
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if flag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.Content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Image is an OCI image of layers, in order, with env in its config.
func Image(t testing.TB, env []string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = env
	cfg.Config.User = "1000:1000"
	cfg.Config.WorkingDir = "/srv"
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}
