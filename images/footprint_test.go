package images

import (
	"io"
	"testing"
)

// A snapshot's footprint is its layers as a pull moves them: every layer,
// the base's too, at its compressed size, which is what reading each
// layer's compressed stream yields.
func TestFootprintOfCountsEveryCompressedLayer(t *testing.T) {
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	img := assemble(t, fx.input(t, base, 0, nil)).Image
	fp, err := FootprintOf(img)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, rc)
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		want += n
	}
	if baseLayers := len(layerDigests(t, base)); fp.Layers != baseLayers+2 || len(layers) != fp.Layers {
		t.Errorf("layers = %d, want the base's %d + cache + workspace", fp.Layers, baseLayers)
	}
	if fp.Size != want || want == 0 {
		t.Errorf("size = %d, want the compressed streams' %d bytes", fp.Size, want)
	}
}
