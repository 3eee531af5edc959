package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Cache is one dependency cache to put in its own layer.
type Cache struct {
	// Path is the cache's absolute path in the image, e.g. "/cache/go/mod".
	Path string
	// HostDir is where the cache's files are now. It is read only when the
	// layer has to be built anew; when Previous holds a layer with the same
	// Path and Key it may be empty.
	HostDir string
	// Key is the cache's LockfileKey ("sha256:<64 hex>").
	Key string
}

// Input is everything Assemble needs for one snapshot.
type Input struct {
	// Base is the toolchain image; its layers come first, unchanged.
	Base v1.Image
	// BaseName is the reference Base was opened by (snapshots.base_image),
	// recorded with Base's digest in LabelBaseName and LabelBaseDigest;
	// "" for none (an empty base).
	BaseName string
	// Repo is "owner/name".
	Repo string
	// SHA is the commit checked out in WorkspaceDir (40 lowercase hex).
	SHA string
	// Version is Inspect's version, recorded in LabelVersion.
	Version string
	// Built is when the snapshot is built; it orders a repository's
	// snapshots and must not be zero.
	Built time.Time
	// WorkspaceDir is the host directory holding the checkout, placed at
	// WorkspacePath.
	WorkspaceDir string
	// Caches are the dependency caches, one layer each, in this order.
	Caches []Cache
	// Previous is the repository's newest snapshot, or nil. A cache whose
	// Path and Key match one of its cache layers reuses that layer as it is.
	Previous v1.Image
	// Workspace, when set, are the workspace's layers as they are: a base
	// (LayerKindWorkspace) and then drift layers (LayerKindWorkspaceDrift),
	// for example Previous's and a new DriftLayer. When empty, one
	// workspace layer is made from WorkspaceDir.
	Workspace []WorkspaceLayer
}

// WorkspaceLayer is one of a snapshot's workspace layers.
type WorkspaceLayer struct {
	Layer v1.Layer
	// Kind is LayerKindWorkspace or LayerKindWorkspaceDrift.
	Kind string
}

// Assembled is Assemble's result.
type Assembled struct {
	// Image is the snapshot, ready to push. Its new layers read from
	// unlinked temp files; reused ones read from wherever Previous did.
	Image v1.Image
	// Reused are the cache paths whose layer came from Previous.
	Reused []string
	// Rebuilt are the cache paths tarred anew from their HostDir.
	Rebuilt []string
}

// Assemble builds a snapshot image: Base's layers, then one layer per cache
// in order, then the workspace layer, with OCI media types, Inspect's layer
// annotations and the snapshot labels. The base config's other settings are
// kept; the working directory becomes WorkspacePath. When a cache lies under
// WorkspacePath (e.g. /workspace/node_modules), the workspace layer leaves
// that directory out, so its files live in the cache layer only.
func Assemble(in Input) (Assembled, error) {
	if err := validateInput(in); err != nil {
		return Assembled{}, err
	}
	previous, err := previousCacheLayers(in.Previous)
	if err != nil {
		return Assembled{}, err
	}

	var out Assembled
	addenda := make([]mutate.Addendum, 0, len(in.Caches)+1)
	cacheInfos := make([]CacheInfo, 0, len(in.Caches))
	for _, c := range in.Caches {
		layer, reused := previous[CacheInfo{Path: c.Path, Key: c.Key}]
		if reused {
			out.Reused = append(out.Reused, c.Path)
		} else {
			if c.HostDir == "" {
				return Assembled{}, fmt.Errorf("images: cache %s: no previous layer with key %s and no HostDir to build one", c.Path, c.Key)
			}
			layer, err = DirLayer(c.HostDir, c.Path, nil)
			if err != nil {
				return Assembled{}, fmt.Errorf("images: cache %s: %w", c.Path, err)
			}
			out.Rebuilt = append(out.Rebuilt, c.Path)
		}
		addenda = append(addenda, mutate.Addendum{
			Layer:     layer,
			MediaType: layerMediaType(layer),
			Annotations: map[string]string{
				AnnotationLayer:     LayerKindCache,
				AnnotationCachePath: c.Path,
				AnnotationCacheKey:  c.Key,
			},
			History: v1.History{
				Created:   v1.Time{Time: in.Built},
				CreatedBy: "inspect snapshot: cache " + c.Path,
				Comment:   c.Key,
			},
		})
		cacheInfos = append(cacheInfos, CacheInfo{Path: c.Path, Key: c.Key})
	}

	wsLayers := in.Workspace
	if len(wsLayers) == 0 {
		workspace, err := DirLayer(in.WorkspaceDir, WorkspacePath, WorkspaceExcludeFor(in.Caches))
		if err != nil {
			return Assembled{}, fmt.Errorf("images: workspace: %w", err)
		}
		wsLayers = []WorkspaceLayer{{Layer: workspace, Kind: LayerKindWorkspace}}
	}
	for i, l := range wsLayers {
		createdBy := "inspect snapshot: workspace " + in.Repo + "@" + in.SHA
		if l.Kind == LayerKindWorkspaceDrift {
			createdBy = fmt.Sprintf("inspect snapshot: workspace drift %d", i)
		}
		addenda = append(addenda, mutate.Addendum{
			Layer:       l.Layer,
			MediaType:   layerMediaType(l.Layer),
			Annotations: map[string]string{AnnotationLayer: l.Kind},
			History: v1.History{
				Created:   v1.Time{Time: in.Built},
				CreatedBy: createdBy,
			},
		})
	}

	img := mutate.MediaType(in.Base, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, addenda...)
	if err != nil {
		return Assembled{}, fmt.Errorf("images: append layers: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Assembled{}, fmt.Errorf("images: config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cachesJSON, err := json.Marshal(cacheInfos)
	if err != nil {
		return Assembled{}, fmt.Errorf("images: caches label: %w", err)
	}
	labels := maps.Clone(cfg.Config.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRepo] = in.Repo
	labels[LabelSHA] = in.SHA
	labels[LabelBuilt] = formatBuilt(in.Built)
	labels[LabelVersion] = in.Version
	labels[LabelCaches] = string(cachesJSON)
	// The base's own labels may name its base: never the snapshot's.
	delete(labels, LabelBaseName)
	delete(labels, LabelBaseDigest)
	if in.BaseName != "" {
		digest, err := in.Base.Digest()
		if err != nil {
			return Assembled{}, fmt.Errorf("images: the base image's digest: %w", err)
		}
		name, _, _ := strings.Cut(in.BaseName, "@")
		labels[LabelBaseName], labels[LabelBaseDigest] = name, digest.String()
	}
	cfg.Config.Labels = labels
	cfg.Config.WorkingDir = WorkspacePath
	cfg.Created = v1.Time{Time: in.Built.UTC()}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return Assembled{}, fmt.Errorf("images: set config: %w", err)
	}
	out.Image = img
	return out, nil
}

// layerMediaType keeps a reused layer's own media type in the manifest (it
// may be a Docker gzip layer if Previous came from elsewhere); an error or
// an empty answer falls back to the OCI type, which is what DirLayer makes.
func layerMediaType(l v1.Layer) types.MediaType {
	mt, err := l.MediaType()
	if err != nil || mt == "" {
		return types.OCILayer
	}
	return mt
}

// previousCacheLayers indexes Previous's cache layers by path and key, from
// the manifest's annotations. Only the manifest and config are read.
func previousCacheLayers(prev v1.Image) (map[CacheInfo]v1.Layer, error) {
	found := map[CacheInfo]v1.Layer{}
	if prev == nil {
		return found, nil
	}
	manifest, err := prev.Manifest()
	if err != nil {
		return nil, fmt.Errorf("images: previous snapshot manifest: %w", err)
	}
	for _, desc := range manifest.Layers {
		if desc.Annotations[AnnotationLayer] != LayerKindCache {
			continue
		}
		info := CacheInfo{Path: desc.Annotations[AnnotationCachePath], Key: desc.Annotations[AnnotationCacheKey]}
		layer, err := prev.LayerByDigest(desc.Digest)
		if err != nil {
			return nil, fmt.Errorf("images: previous snapshot layer %s: %w", desc.Digest, err)
		}
		found[info] = layer
	}
	return found, nil
}

// WorkspaceExcludeFor adds to WorkspaceExclude the caches that lie inside
// the workspace, which have layers of their own.
func WorkspaceExcludeFor(caches []Cache) func(string) bool {
	var inside []string
	for _, c := range caches {
		if rel, ok := strings.CutPrefix(c.Path, WorkspacePath+"/"); ok {
			inside = append(inside, rel)
		}
	}
	return func(rel string) bool {
		if WorkspaceExclude(rel) {
			return true
		}
		for _, cacheRel := range inside {
			if rel == cacheRel || strings.HasPrefix(rel, cacheRel+"/") {
				return true
			}
		}
		return false
	}
}

func validateInput(in Input) error {
	var problems []error
	if in.Base == nil {
		problems = append(problems, errors.New("no base image"))
	}
	if err := validateRepo(in.Repo); err != nil {
		problems = append(problems, err)
	}
	if err := validateSHA(in.SHA); err != nil {
		problems = append(problems, err)
	}
	if in.Built.IsZero() {
		problems = append(problems, errors.New("built time is zero"))
	}
	if in.WorkspaceDir == "" && len(in.Workspace) == 0 {
		problems = append(problems, errors.New("no workspace dir"))
	}
	for i, l := range in.Workspace {
		want := LayerKindWorkspaceDrift
		if i == 0 {
			want = LayerKindWorkspace
		}
		if l.Layer == nil || l.Kind != want {
			problems = append(problems, fmt.Errorf("workspace layer %d must be a %s layer", i, want))
		}
	}
	if len(in.Workspace) > 1+MaxWorkspaceDrifts {
		problems = append(problems, fmt.Errorf("%d workspace drift layers; at most %d", len(in.Workspace)-1, MaxWorkspaceDrifts))
	}
	for i, c := range in.Caches {
		if err := contract.ValidateCachePath(c.Path); err != nil {
			problems = append(problems, fmt.Errorf("cache path %q: %w", c.Path, err))
			continue
		}
		if _, err := v1.NewHash(c.Key); err != nil || !strings.HasPrefix(c.Key, "sha256:") {
			problems = append(problems, fmt.Errorf("cache %s: key %q is not sha256:<hex> (use LockfileKey)", c.Path, c.Key))
		}
		for _, other := range in.Caches[:i] {
			switch {
			case other.Path == c.Path:
				problems = append(problems, fmt.Errorf("cache %s listed twice", c.Path))
			case contract.CachePathsConflict(c.Path, other.Path):
				problems = append(problems, fmt.Errorf("caches %s and %s nest", other.Path, c.Path))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("images: invalid input: %w", errors.Join(problems...))
	}
	return nil
}
