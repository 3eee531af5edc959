package images

import (
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Footprint is what an image costs to move and keep: its manifest's
// layers, the base image's among them.
type Footprint struct {
	// Size is the layers' compressed sizes, summed, as the manifest gives
	// them: what a cold pull downloads (the small config blob aside).
	Size int64
	// Layers is how many layers the manifest lists.
	Layers int
}

// FootprintOf reads img's footprint from its manifest, without touching a
// layer's content.
func FootprintOf(img v1.Image) (Footprint, error) {
	m, err := img.Manifest()
	if err != nil {
		return Footprint{}, fmt.Errorf("images: manifest: %w", err)
	}
	fp := Footprint{Layers: len(m.Layers)}
	for _, l := range m.Layers {
		fp.Size += l.Size
	}
	return fp, nil
}
