package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// RegistryStore keeps snapshots in an OCI registry, one registry repository
// per source repository: "Owner/Name" lives at "<prefix>/owner/name".
type RegistryStore struct {
	prefix string
	opts   []remote.Option
	// configCache, when set, is where Image keeps config blobs (see
	// WithConfigCache).
	configCache string
}

// CacheConfigsIn makes Image keep each image's config blob in dir, so the
// host fetches it once: a restore reads the snapshot's labels and Env from
// it every session.
func (s *RegistryStore) CacheConfigsIn(dir string) { s.configCache = dir }

// NewRegistryStore stores under prefix (e.g. "registry.example.com/inspect"
// or "127.0.0.1:5000"). opts are passed to every remote call, followed by
// remote.WithContext with the call's context. Unless opts bring their own
// authentication (remote.WithAuth or remote.WithAuthFromKeychain), the
// store authenticates from authn.DefaultKeychain (the Docker config and
// credential helpers).
func NewRegistryStore(prefix string, opts ...remote.Option) (*RegistryStore, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return nil, errors.New("images: registry store: empty prefix")
	}
	if _, err := name.NewRepository(prefix+"/owner/name", name.StrictValidation); err != nil {
		return nil, fmt.Errorf("images: registry store prefix %q: %w", prefix, err)
	}
	withKeychain := append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	// go-containerregistry refuses options that set both an Authenticator
	// and a Keychain, and gives no way to ask which ones were set; building
	// a Puller is how to find out. If the default keychain clashes, the
	// caller brought an Authenticator, which wins.
	if _, err := remote.NewPuller(withKeychain...); err == nil {
		opts = withKeychain
	} else if _, err := remote.NewPuller(opts...); err != nil {
		return nil, fmt.Errorf("images: registry store options: %w", err)
	}
	return &RegistryStore{prefix: prefix, opts: opts}, nil
}

// options returns the store's options with ctx last, so every call is
// cancellable.
func (s *RegistryStore) options(ctx context.Context) []remote.Option {
	return append(append([]remote.Option(nil), s.opts...), remote.WithContext(ctx))
}

// repository is the registry repository holding repo's snapshots.
func (s *RegistryStore) repository(repo string) (name.Repository, error) {
	lower, err := storeRepoName(repo)
	if err != nil {
		return name.Repository{}, err
	}
	r, err := name.NewRepository(s.prefix+"/"+lower, name.StrictValidation)
	if err != nil {
		return name.Repository{}, fmt.Errorf("images: repository for %s: %w", repo, err)
	}
	return r, nil
}

// Push uploads img's blobs (skipping those the registry already has, so a
// reused cache layer costs a HEAD request) and its manifest, tagged <sha>,
// then tags the same manifest latest.
func (s *RegistryStore) Push(ctx context.Context, img v1.Image) (Snapshot, error) {
	snap, err := Describe(img)
	if err != nil {
		return Snapshot{}, err
	}
	repo, err := s.repository(snap.Repo)
	if err != nil {
		return Snapshot{}, err
	}
	opts := s.options(ctx)
	if err := remote.Write(repo.Tag(snap.SHA), img, opts...); err != nil {
		return Snapshot{}, fmt.Errorf("images: push %s: %w", repo.Tag(snap.SHA), err)
	}
	if err := remote.Tag(repo.Tag(LatestTag), img, opts...); err != nil {
		return Snapshot{}, fmt.Errorf("images: tag %s: %w", repo.Tag(LatestTag), err)
	}
	return snap, nil
}

// Latest describes the snapshot the latest tag points at.
func (s *RegistryStore) Latest(ctx context.Context, repo string) (Snapshot, error) {
	r, err := s.repository(repo)
	if err != nil {
		return Snapshot{}, err
	}
	img, err := remote.Image(r.Tag(LatestTag), s.options(ctx)...)
	if isNotFound(err) {
		return Snapshot{}, fmt.Errorf("%w for %s", ErrNoSnapshot, repo)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: latest of %s: %w", repo, err)
	}
	return Describe(img)
}

// Image fetches the snapshot by digest and checks it is the repository's.
// The image reads its config and layers lazily, with ctx: keep ctx alive for
// as long as the image is used.
func (s *RegistryStore) Image(ctx context.Context, repo string, digest v1.Hash) (v1.Image, error) {
	r, err := s.repository(repo)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r.Digest(digest.String()), s.options(ctx)...)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w %s for %s", ErrNoSnapshot, digest, repo)
	}
	if err != nil {
		return nil, fmt.Errorf("images: fetch %s@%s: %w", repo, digest, err)
	}
	if s.configCache != "" {
		img = WithConfigCache(img, s.configCache)
	}
	if err := checkSnapshotOf(img, repo); err != nil {
		return nil, err
	}
	return img, nil
}

// List resolves every snapshot tag and describes each distinct manifest.
func (s *RegistryStore) List(ctx context.Context, repo string) ([]Snapshot, error) {
	stored, err := s.list(ctx, repo)
	if err != nil {
		return nil, err
	}
	return snapshotsOf(stored), nil
}

func (s *RegistryStore) list(ctx context.Context, repo string) ([]storedSnapshot, error) {
	r, err := s.repository(repo)
	if err != nil {
		return nil, err
	}
	opts := s.options(ctx)
	tags, err := remote.List(r, opts...)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("images: list tags of %s: %w", repo, err)
	}
	byDigest := map[v1.Hash]*storedSnapshot{}
	for _, tag := range tags {
		if !isSnapshotTag(tag) {
			continue // somebody else's tag in our repository; not ours to list
		}
		desc, err := remote.Head(r.Tag(tag), opts...)
		if isNotFound(err) {
			continue // deleted between listing and now
		}
		if err != nil {
			return nil, fmt.Errorf("images: resolve %s:%s: %w", repo, tag, err)
		}
		if seen, ok := byDigest[desc.Digest]; ok {
			seen.tags = append(seen.tags, tag)
			continue
		}
		img, err := remote.Image(r.Digest(desc.Digest.String()), opts...)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("images: fetch %s@%s: %w", repo, desc.Digest, err)
		}
		snap, err := Describe(img)
		if errors.Is(err, ErrNotSnapshot) {
			continue // a SHA-like tag on something Assemble did not build
		}
		if err != nil {
			return nil, err
		}
		byDigest[desc.Digest] = &storedSnapshot{Snapshot: snap, tags: []string{tag}}
	}
	out := make([]storedSnapshot, 0, len(byDigest))
	for _, s := range byDigest {
		out = append(out, *s)
	}
	sortNewestFirst(out)
	return out, nil
}

// GC deletes, for each snapshot it removes, its manifest and the tags
// pointing at it (deleteSnapshot). Blobs are left to the registry's own
// garbage collection, the only kind a registry API offers.
func (s *RegistryStore) GC(ctx context.Context, repo string, keep int) ([]v1.Hash, error) {
	if err := validateKeep(keep); err != nil {
		return nil, err
	}
	r, err := s.repository(repo)
	if err != nil {
		return nil, err
	}
	stored, err := s.list(ctx, repo)
	if err != nil {
		return nil, err
	}
	var latest v1.Hash
	for _, snap := range stored {
		for _, tag := range snap.tags {
			if tag == LatestTag {
				latest = snap.Digest
			}
		}
	}
	opts := s.options(ctx)
	var removed []v1.Hash
	for _, snap := range chooseRemovals(stored, keep, latest) {
		gone, err := deleteSnapshot(r, repo, snap, opts)
		if gone {
			removed = append(removed, snap.Digest)
		}
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deleteSnapshot deletes a snapshot's manifest by digest, then its tags,
// and says whether the manifest is gone. The manifest goes first: the OCI
// distribution spec ("Content Management", "Deleting Manifests") has a
// manifest's tags go with it, and a registry that refuses to delete
// manifests (400 or 405) must keep the tags, or the snapshot would stay
// behind, untagged, out of every later List and GC. The tags are deleted
// after it for registries that keep a deleted manifest's tags; to those
// that dropped them, 404 or "unsupported" is their being gone already.
// Google's registry deletes a manifest only once no tag points at it and
// answers 400 GOOGLE_MANIFEST_DANGLING_TAG before (isStillTagged): there
// the tags go first and the manifest is deleted again.
func deleteSnapshot(r name.Repository, repo string, snap storedSnapshot, opts []remote.Option) (gone bool, err error) {
	manifest := r.Digest(snap.Digest.String())
	err = remote.Delete(manifest, opts...)
	untagFirst := isStillTagged(err)
	if untagFirst {
		if err := deleteTags(r, repo, snap.tags, opts); err != nil {
			return false, err
		}
		err = remote.Delete(manifest, opts...)
	}
	switch {
	case err == nil, isNotFound(err):
	case isStillTagged(err):
		return false, fmt.Errorf("images: delete %s@%s: the registry says a tag GC does not own still points at it: %w", repo, snap.Digest, err)
	case isUnsupported(err):
		return false, fmt.Errorf("%w (delete %s@%s: %v)", ErrDeletionUnsupported, repo, snap.Digest, err)
	default:
		return false, fmt.Errorf("images: delete %s@%s: %w", repo, snap.Digest, err)
	}
	if untagFirst {
		return true, nil
	}
	return true, deleteTags(r, repo, snap.tags, opts)
}

// deleteTags deletes tags, passing over those already gone (404) and
// those the registry will not delete (400 or 405, isUnsupported).
func deleteTags(r name.Repository, repo string, tags []string, opts []remote.Option) error {
	for _, tag := range tags {
		err := remote.Delete(r.Tag(tag), opts...)
		if err != nil && !isNotFound(err) && !isUnsupported(err) {
			return fmt.Errorf("images: delete tag %s:%s: %w", repo, tag, err)
		}
	}
	return nil
}

// checkSnapshotOf makes sure an image fetched for repo is a snapshot of it,
// so a digest from another repository's store path cannot be passed off.
func checkSnapshotOf(img v1.Image, repo string) error {
	snap, err := Describe(img)
	if err != nil {
		return err
	}
	if !strings.EqualFold(snap.Repo, repo) {
		return fmt.Errorf("%w: image %s is a snapshot of %s, not %s", ErrNoSnapshot, snap.Digest, snap.Repo, repo)
	}
	return nil
}

// isStillTagged recognises Google's registry refusing to delete a manifest
// that a tag still points at: 400 with the code
// GOOGLE_MANIFEST_DANGLING_TAG ("Manifest is still referenced by tag",
// https://github.com/genuinetools/reg/issues/136).
func isStillTagged(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusBadRequest {
		return false
	}
	for _, e := range terr.Errors {
		if e.Code == "GOOGLE_MANIFEST_DANGLING_TAG" {
			return true
		}
	}
	return false
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// isUnsupported recognises a registry refusing a deletion it does not
// offer. The OCI distribution spec ("Content Management") has a registry
// with tag, manifest or blob deletion disabled answer 400 or 405, the 400
// with any body: UNSUPPORTED, or DIGEST_INVALID as docker/distribution's
// registry:2 says to a tag delete. GC deletes only references the
// registry itself listed, so a 400 cannot be a malformed one.
func isUnsupported(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusMethodNotAllowed || terr.StatusCode == http.StatusBadRequest {
		return true
	}
	for _, e := range terr.Errors {
		if e.Code == transport.UnsupportedErrorCode {
			return true
		}
	}
	return false
}
