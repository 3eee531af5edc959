package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// restored is what a snapshot restore gives the session's sandbox.
type restored struct {
	snap images.Snapshot
	// rootFS is the image's root, extracted ("" when the base image has no
	// toolchain: the sandbox then binds the host's, read-only).
	rootFS string
	// mounts are the writable copies of the cache layers outside
	// /workspace, bound at the paths the snapshot was built at.
	mounts []sandbox.Mount
}

// restore fills the workspace from the pinned snapshot (s.spec.Snapshot):
// the image is pulled by digest, each layer is extracted once into the
// host's layer cache (keyed by digest, shared by sessions), the workspace
// layer is copied into the session's own workspace, and each cache layer
// gets a writable copy at the path it was built at. The caller catches
// the workspace up to the pinned commit.
func (s *session) restore(ctx context.Context) (*restored, error) {
	sn := s.spec.Snapshot
	store, err := images.OpenStore(sn.Store)
	if err != nil {
		return nil, err
	}
	digest, err := v1.NewHash(sn.Digest)
	if err != nil {
		return nil, fmt.Errorf("snapshot digest: %w", err)
	}
	img, err := store.Image(ctx, s.spec.Repo.Owner+"/"+s.spec.Repo.Name, digest)
	if err != nil {
		return nil, fmt.Errorf("pulling the snapshot: %w", err)
	}
	snap, err := images.Describe(img)
	if err != nil {
		return nil, err
	}
	manifest, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the snapshot's manifest: %w", err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != len(manifest.Layers) {
		return nil, fmt.Errorf("reading the snapshot's layers: %v", err)
	}
	cacheDir := s.cfg.layerCache()
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	out := &restored{snap: snap}
	var base []string
	for i, desc := range manifest.Layers {
		dir, err := images.ExtractLayer(ctx, layers[i], cacheDir)
		if err != nil {
			return nil, fmt.Errorf("extracting layer %s: %w", desc.Digest, err)
		}
		switch desc.Annotations[images.AnnotationLayer] {
		case images.LayerKindWorkspace:
			if err := copyTree(filepath.Join(dir, "workspace"), s.ws.work); err != nil {
				return nil, fmt.Errorf("restoring the workspace: %w", err)
			}
		case images.LayerKindCache:
			p := desc.Annotations[images.AnnotationCachePath]
			if contract.ValidateCachePath(p) != nil {
				return nil, fmt.Errorf("layer %s: bad cache path %q", desc.Digest, p)
			}
			src := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "/")))
			if rel, ok := strings.CutPrefix(p, images.WorkspacePath+"/"); ok {
				// A cache inside the workspace (node_modules) is simply
				// part of the session's workspace copy.
				if err := copyTree(src, filepath.Join(s.ws.work, filepath.FromSlash(rel))); err != nil {
					return nil, fmt.Errorf("restoring cache %s: %w", p, err)
				}
				continue
			}
			// A copy, not an overlay: the sandbox writes to its caches and
			// the layer cache is shared. (Overlayfs would avoid the copy
			// for a root supervisor; a copy works everywhere.)
			host := filepath.Join(s.ws.dir, "caches", fmt.Sprintf("%d", len(out.mounts)))
			if err := copyTree(src, host); err != nil {
				return nil, fmt.Errorf("restoring cache %s: %w", p, err)
			}
			out.mounts = append(out.mounts, sandbox.Mount{Source: host, Target: p})
		default:
			base = append(base, dir)
		}
	}
	// The image's root is used only when it brings a toolchain and is one
	// layer (a multi-layer base would need merging or overlays); otherwise
	// the host's toolchain is bound, read-only, as for a cold clone.
	if len(base) == 1 {
		if fi, err := os.Stat(filepath.Join(base[0], "usr", "bin")); err == nil && fi.IsDir() {
			out.rootFS = base[0]
		}
	}
	return out, nil
}

// snapshotSetupNeeded reports whether a lockfile at the pinned commit
// differs from what the snapshot's caches were built from: then the caches
// are stale and the repo's snapshot setup runs again in the session.
func (s *session) snapshotSetupNeeded(r *restored) (bool, error) {
	built := map[string]string{}
	for _, c := range r.snap.Caches {
		built[c.Path] = c.Key
	}
	for _, c := range s.spec.Snapshot.Caches {
		key, err := images.LockfileKey(s.ws.work, c.Path, c.Lockfiles)
		if err != nil {
			return false, err
		}
		if built[c.Path] != key {
			return true, nil
		}
	}
	return false, nil
}

// layerCache is where extracted layers are kept, by digest.
func (c Config) layerCache() string {
	if c.LayerCache != "" {
		return c.LayerCache
	}
	root := c.WorkDir
	if root == "" {
		root = os.TempDir()
	}
	return filepath.Join(root, "inspect-layers")
}
