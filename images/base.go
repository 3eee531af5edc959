package images

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// OpenBaseImage opens snapshots.base_image: a registry reference pinned by
// digest ("registry.example.com/go@sha256:<hex>"), or an OCI image layout
// on disk and the digest of a manifest in it ("oci:/abs/dir@sha256:<hex>").
// Either may be any OCI or Docker v2 image, of any number of layers; a tag
// is refused, so every build of a snapshot starts from the same bytes.
// opts apply to a registry reference only (tests pass a transport).
func OpenBaseImage(ctx context.Context, ref string, opts ...remote.Option) (v1.Image, error) {
	if rest, ok := strings.CutPrefix(ref, LayoutPrefix); ok {
		dir, digest, ok := strings.Cut(rest, "@")
		if !ok || !strings.HasPrefix(dir, "/") {
			return nil, fmt.Errorf("base image %q: an OCI layout is oci:/abs/dir@sha256:<hex>", ref)
		}
		h, err := v1.NewHash(digest)
		if err != nil {
			return nil, fmt.Errorf("base image %q: %w", ref, err)
		}
		p, err := layout.FromPath(dir)
		if err != nil {
			return nil, fmt.Errorf("base image %q: %w", ref, err)
		}
		img, err := p.Image(h)
		if err != nil {
			return nil, fmt.Errorf("base image %q: %w", ref, err)
		}
		return img, nil
	}
	d, err := name.NewDigest(ref)
	if err != nil {
		return nil, fmt.Errorf("base image %q must be pinned by digest (name@sha256:<hex>): %w", ref, err)
	}
	all := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	img, err := remote.Image(d, all...)
	if err != nil {
		return nil, fmt.Errorf("pulling the base image %s: %w", ref, err)
	}
	return img, nil
}
