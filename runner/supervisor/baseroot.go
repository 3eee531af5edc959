package supervisor

import (
	"context"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
)

// imageRootOf flattens the base image img into the layer cache at
// layerCacheDir (once per host, by its layers' digests) and returns its
// root and its config's Env, by baseRoot's rule: the root is "" when the
// image brings no toolchain (/usr/bin), and the host's is bound instead,
// with no Env. A snapshot build's setup and a session not restored from a
// snapshot (decision 0079) both come here, so they see the same
// toolchain as a restore of the snapshot does.
func imageRootOf(ctx context.Context, layerCacheDir string, img v1.Image) (imageBase, []string, error) {
	cache, err := openLayerCache(layerCacheDir)
	if err != nil {
		return imageBase{}, nil, err
	}
	// The config (Env) is read every session: once per host.
	img = images.WithConfigCache(img, cache.configs)
	layers, err := img.Layers()
	if err != nil {
		return imageBase{}, nil, fmt.Errorf("reading the base image's layers: %w", err)
	}
	root, err := baseRoot(ctx, cache, layers)
	if err != nil || root.dir == "" {
		return imageBase{}, nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return imageBase{}, nil, fmt.Errorf("reading the base image's config: %w", err)
	}
	return root, cfg.Config.Env, nil
}

// coldBaseRoot makes the spec's base image (snapshots.base_image) the root
// of a session that was not restored from a snapshot: no snapshot section,
// none built yet, or a restore that failed (decision 0079). A restored
// session runs on its snapshot's base instead. It is pulled by digest and
// flattened as a snapshot build's base is (imageRootOf), and the evidence
// names it; an image without /usr/bin leaves the host's toolchain. A base
// image that cannot be pulled or flattened fails the session: running the
// repository's commands on another toolchain than the one configured
// would report failures that are not the change's.
func (s *session) coldBaseRoot(ctx context.Context) error {
	ref := s.spec.BaseImage
	if ref == "" {
		return nil
	}
	img, err := images.OpenBaseImage(ctx, ref)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("the base image's digest: %w", err)
	}
	root, env, err := imageRootOf(ctx, s.cfg.layerCache(), img)
	if err != nil {
		return err
	}
	// Named as a snapshot's labels name its base (images.Assemble): the
	// reference without its digest, and the manifest's digest.
	name, _, _ := strings.Cut(ref, "@")
	if base := (&contract.BaseImage{Name: name, Digest: digest.String()}); base.Validate() == nil {
		s.ev.Workspace.BaseImage = base
	}
	if root.dir == "" {
		return nil
	}
	s.rootFS, s.imageEnv = root.dir, env
	s.ev.Workspace.ImageRoot = &root.evidence
	s.log.Info().Int("layers", root.evidence.Layers).Str("base_image", digest.String()).Msg("the session runs on the base image's root")
	return nil
}
