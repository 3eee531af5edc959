package supervisor

import (
	"context"
	"fmt"

	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/toolsimage"
)

// toolsMount flattens the agents' tools image (spec.Agent.ToolsImage,
// decision 0069) into the layer cache, once per host as a base image is
// (by its layers' digests), and returns the read-only mount of its root at
// toolsimage.MountPath, for every sandbox of the attempt, and the image's
// digest for the evidence. No tools image: no mount.
func (s *session) toolsMount(ctx context.Context) (*sandbox.Mount, string, error) {
	ref := s.spec.Agent.ToolsImage
	if ref == "" {
		return nil, "", nil
	}
	cache, err := openLayerCache(s.cfg.layerCache())
	if err != nil {
		return nil, "", err
	}
	img, err := images.OpenBaseImage(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, "", fmt.Errorf("the tools image's digest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, "", fmt.Errorf("the tools image's layers: %w", err)
	}
	if len(layers) == 0 {
		return nil, "", fmt.Errorf("the tools image %s has no layers", digest)
	}
	flat, err := images.Flatten(ctx, layers, cache.base)
	if err != nil {
		return nil, "", fmt.Errorf("flattening the tools image: %w", err)
	}
	return &sandbox.Mount{Source: flat.Root, Target: toolsimage.MountPath, ReadOnly: true, MakeMountPoint: true}, digest.String(), nil
}
