package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
)

// Labels on a snapshot's image config. Describe reads a snapshot back from
// them alone, so listing snapshots never needs a layer.
const (
	// LabelRepo is the repository the snapshot was built for, "owner/name".
	LabelRepo = "dev.inspect.snapshot.repo"
	// LabelSHA is the commit checked out at /workspace (40 hex digits).
	LabelSHA = "dev.inspect.snapshot.sha"
	// LabelBuilt is when the snapshot was built, RFC 3339 in UTC (with
	// fractional seconds when there are any, so snapshots built within one
	// second still order).
	LabelBuilt = "dev.inspect.snapshot.built"
	// LabelVersion is the version of Inspect that built the snapshot.
	LabelVersion = "dev.inspect.snapshot.version"
	// LabelCaches is a JSON array of {"path": ..., "key": ...}, one element
	// per cache layer, in layer order.
	LabelCaches = "dev.inspect.snapshot.caches"
	// LabelBaseName and LabelBaseDigest name the base image the snapshot
	// was built on: the reference it was pulled by, without its digest,
	// and its manifest digest. They are the OCI image spec's pre-defined
	// annotation keys for a base image, here as labels so that Describe
	// reads them from the config like the rest (decision 0077). Absent
	// when the snapshot was built on no base.
	LabelBaseName   = "org.opencontainers.image.base.name"
	LabelBaseDigest = "org.opencontainers.image.base.digest"
)

// Annotations on layer descriptors in a snapshot's manifest, identifying the
// layers Inspect added on top of the base image.
const (
	// AnnotationLayer is "cache" or "workspace".
	AnnotationLayer = "dev.inspect.snapshot.layer"
	// AnnotationCachePath is a cache layer's absolute path in the image.
	AnnotationCachePath = "dev.inspect.snapshot.cache.path"
	// AnnotationCacheKey is a cache layer's LockfileKey.
	AnnotationCacheKey = "dev.inspect.snapshot.cache.key"

	// LayerKindCache is AnnotationLayer's value on a cache layer.
	LayerKindCache = "cache"
	// LayerKindWorkspace is AnnotationLayer's value on the workspace layer.
	LayerKindWorkspace = "workspace"

	// WorkspacePath is where the repository checkout sits in the image; it
	// is also the image's working directory.
	WorkspacePath = "/workspace"
)

// ErrNoSnapshot says the store holds no snapshot for the repository (or none
// with the asked-for digest).
var ErrNoSnapshot = errors.New("images: no snapshot")

// ErrDeletionUnsupported says the registry refuses to delete manifests
// (deletion disabled: a 400 or 405, as the OCI distribution spec lets
// it), so GC cannot remove old snapshots; the registry's own retention
// policy has to.
var ErrDeletionUnsupported = errors.New("images: the registry does not allow deleting manifests; collect old snapshots with its own retention policy")

// ErrNotSnapshot says an image lacks the labels of a snapshot (or carries
// malformed ones): it was not built by Assemble.
var ErrNotSnapshot = errors.New("images: not a snapshot image")

// Snapshot describes one stored snapshot image, as read from its labels.
type Snapshot struct {
	// Digest is the image's manifest digest: the pinned way to fetch it.
	Digest v1.Hash
	// Repo is "owner/name" as the label has it (case kept).
	Repo string
	// SHA is the commit at /workspace.
	SHA string
	// Built is when Assemble ran, in UTC.
	Built time.Time
	// Version is the Inspect version that built it.
	Version string
	// Caches are the image's cache layers, in layer order.
	Caches []CacheInfo
	// BaseName and BaseDigest are the base image it was built on
	// (LabelBaseName, LabelBaseDigest); both "" when it names none.
	BaseName, BaseDigest string
}

// CacheInfo names one cache layer of a snapshot.
type CacheInfo struct {
	// Path is the cache's absolute path in the image.
	Path string `json:"path"`
	// Key is the LockfileKey the layer was built for.
	Key string `json:"key"`
}

// Describe reads a snapshot's description from the image's config labels.
// It fails with an error wrapping ErrNotSnapshot when a label is missing or
// malformed.
func Describe(img v1.Image) (Snapshot, error) {
	digest, err := img.Digest()
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: digest of image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: config of image %s: %w", digest, err)
	}
	labels := cfg.Config.Labels
	snap := Snapshot{
		Digest:  digest,
		Repo:    labels[LabelRepo],
		SHA:     labels[LabelSHA],
		Version: labels[LabelVersion],
	}
	if err := validateRepo(snap.Repo); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: label %s: %v", ErrNotSnapshot, digest, LabelRepo, err)
	}
	if err := validateSHA(snap.SHA); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: label %s: %v", ErrNotSnapshot, digest, LabelSHA, err)
	}
	built, err := time.Parse(time.RFC3339Nano, labels[LabelBuilt])
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: label %s: %v", ErrNotSnapshot, digest, LabelBuilt, err)
	}
	snap.Built = built.UTC()
	// The base is named only when both labels are there and the digest is
	// one: they are a description, and a snapshot without them is still one.
	if name, digest := labels[LabelBaseName], labels[LabelBaseDigest]; name != "" && contract.IsImageDigest(digest) {
		snap.BaseName, snap.BaseDigest = name, digest
	}
	rawCaches, ok := labels[LabelCaches]
	if !ok {
		return Snapshot{}, fmt.Errorf("%w: %s: label %s missing", ErrNotSnapshot, digest, LabelCaches)
	}
	if err := json.Unmarshal([]byte(rawCaches), &snap.Caches); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: label %s: %v", ErrNotSnapshot, digest, LabelCaches, err)
	}
	return snap, nil
}

// formatBuilt is the one place LabelBuilt is written, so Describe's parse
// and Assemble's format cannot drift apart.
func formatBuilt(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// validateRepo accepts GitHub's "owner/name": an owner of letters, digits
// and inner hyphens, a name of letters, digits, '.', '_' and '-' (but not
// "." or ".."). Everything that names a store path or tag goes through here.
func validateRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" {
		return fmt.Errorf("repo %q is not owner/name", repo)
	}
	if owner[0] == '-' || owner[len(owner)-1] == '-' {
		return fmt.Errorf("repo %q: owner starts or ends with '-'", repo)
	}
	for _, r := range owner {
		if !isASCIIAlnum(r) && r != '-' {
			return fmt.Errorf("repo %q: owner has %q", repo, r)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("repo %q: name %q", repo, name)
	}
	for _, r := range name {
		if !isASCIIAlnum(r) && r != '-' && r != '_' && r != '.' {
			return fmt.Errorf("repo %q: name has %q", repo, r)
		}
	}
	return nil
}

// validateSHA accepts a full commit SHA-1 in lowercase hex, the form git
// prints; it is also used as a tag, so no other spelling may slip in.
func validateSHA(sha string) error {
	if len(sha) != 40 {
		return fmt.Errorf("sha %q is not 40 hex digits", sha)
	}
	if !isLowerHex(sha) {
		return fmt.Errorf("sha %q is not lowercase hex", sha)
	}
	return nil
}

func isASCIIAlnum(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

func isLowerHex(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
