package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"golang.org/x/sys/unix"
)

// RefNameAnnotation is the OCI annotation naming an image in a layout's
// index; LayoutStore sets it to "<owner/name>:<tag>".
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// layoutLockFile is the file LayoutStore flocks. The "oci-layout" marker is
// written once and never replaced (unlike index.json, which is renamed over
// on every change), so a lock on it means the same thing to every process.
const layoutLockFile = "oci-layout"

// LayoutStore keeps every repository's snapshots in one OCI image layout on
// disk: the store for installations without a registry. Each tag is one
// descriptor in index.json, annotated with RefNameAnnotation
// "<owner/name>:<tag>" (repository lowercased).
//
// Writers (Push, GC) hold an exclusive flock, so processes sharing the
// directory cannot lose each other's index updates, and GC cannot delete
// blobs a Push has written but not yet indexed. index.json is replaced by an
// atomic rename, so readers need no lock. The lock is taken without regard
// to ctx: flock(2) cannot be interrupted.
type LayoutStore struct {
	dir  string
	path layout.Path
}

// NewLayoutStore opens the layout at dir, creating an empty one (and dir)
// when there is none.
func NewLayoutStore(dir string) (*LayoutStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("images: layout store: %w", err)
	}
	s := &LayoutStore{dir: dir, path: layout.Path(dir)}
	err := s.locked(func() error {
		_, err := os.Stat(filepath.Join(dir, "index.json"))
		if errors.Is(err, fs.ErrNotExist) {
			_, err = layout.Write(dir, empty.Index)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("images: layout store %s: %w", dir, err)
	}
	return s, nil
}

// locked runs fn holding the exclusive lock on the layout.
func (s *LayoutStore) locked(fn func() error) (err error) {
	// Created if missing so a brand-new layout can be locked before
	// layout.Write fills it in; layout.Write rewrites it in place, keeping
	// the inode the lock is on.
	f, err := os.OpenFile(filepath.Join(s.dir, layoutLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	// Closing the descriptor also drops the lock; nothing was written
	// through it.
	defer closeQuietly(f)
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		if uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN); uerr != nil && err == nil {
			err = fmt.Errorf("unlock: %w", uerr)
		}
	}()
	return fn()
}

// Push writes img's blobs (those already present are skipped) and points the
// "<repo>:<sha>" and "<repo>:latest" descriptors at it, replacing whatever
// those tags pointed at before.
func (s *LayoutStore) Push(ctx context.Context, img v1.Image) (Snapshot, error) {
	snap, err := Describe(img)
	if err != nil {
		return Snapshot{}, err
	}
	repo, err := storeRepoName(snap.Repo)
	if err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: descriptor of %s: %w", snap.Digest, err)
	}
	refs := []string{repo + ":" + snap.SHA, repo + ":" + LatestTag}
	err = s.locked(func() error {
		if err := s.writeSmallBlobs(img); err != nil {
			return err
		}
		if err := s.path.WriteImage(img); err != nil {
			return fmt.Errorf("write image: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		index, err := s.readIndex()
		if err != nil {
			return err
		}
		index.Manifests = slices.DeleteFunc(index.Manifests, func(d v1.Descriptor) bool {
			return slices.Contains(refs, d.Annotations[RefNameAnnotation])
		})
		for _, ref := range refs {
			d := *desc
			d.Annotations = map[string]string{RefNameAnnotation: ref}
			index.Manifests = append(index.Manifests, d)
		}
		return s.writeIndex(index)
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: push %s to layout %s: %w", refs[0], s.dir, err)
	}
	return snap, nil
}

// writeSmallBlobs writes the config and manifest atomically before
// layout.Path.WriteImage sees them. WriteImage writes these two straight
// into their final names and skips any name that exists, so a crash in the
// middle would leave a truncated blob that no later push repairs. An
// existing blob with the wrong content is rewritten.
func (s *LayoutStore) writeSmallBlobs(img v1.Image) error {
	cfgName, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("config name: %w", err)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := s.writeBlobAtomically(cfgName, cfg); err != nil {
		return err
	}
	return s.writeBlobAtomically(digest, manifest)
}

func (s *LayoutStore) writeBlobAtomically(h v1.Hash, content []byte) error {
	if h.Algorithm != "sha256" {
		return fmt.Errorf("blob %s: only sha256 blobs are written", h)
	}
	sum := sha256.Sum256(content)
	if hex.EncodeToString(sum[:]) != h.Hex {
		return fmt.Errorf("blob %s: content does not match its digest", h)
	}
	name := filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
	if existing, err := os.ReadFile(name); err == nil && bytes.Equal(existing, content) {
		return nil
	}
	return writeFileAtomically(name, content, 0o644)
}

// Latest describes the snapshot "<repo>:latest" names.
func (s *LayoutStore) Latest(ctx context.Context, repo string) (Snapshot, error) {
	lower, err := storeRepoName(repo)
	if err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	index, err := s.readIndex()
	if err != nil {
		return Snapshot{}, fmt.Errorf("images: layout %s: %w", s.dir, err)
	}
	for _, d := range index.Manifests {
		if d.Annotations[RefNameAnnotation] == lower+":"+LatestTag {
			img, err := s.path.Image(d.Digest)
			if err != nil {
				return Snapshot{}, fmt.Errorf("images: layout image %s: %w", d.Digest, err)
			}
			return Describe(img)
		}
	}
	return Snapshot{}, fmt.Errorf("%w for %s", ErrNoSnapshot, repo)
}

// Image returns the snapshot with that digest if one of the repository's
// tags points at it. The image reads its blobs from disk lazily.
func (s *LayoutStore) Image(ctx context.Context, repo string, digest v1.Hash) (v1.Image, error) {
	lower, err := storeRepoName(repo)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	index, err := s.readIndex()
	if err != nil {
		return nil, fmt.Errorf("images: layout %s: %w", s.dir, err)
	}
	for _, d := range index.Manifests {
		if d.Digest == digest && isRefOf(d, lower) {
			img, err := s.path.Image(digest)
			if err != nil {
				return nil, fmt.Errorf("images: layout image %s: %w", digest, err)
			}
			if err := checkSnapshotOf(img, repo); err != nil {
				return nil, err
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("%w %s for %s", ErrNoSnapshot, digest, repo)
}

// List describes the repository's snapshots, newest first.
func (s *LayoutStore) List(ctx context.Context, repo string) ([]Snapshot, error) {
	stored, err := s.list(ctx, repo)
	if err != nil {
		return nil, err
	}
	return snapshotsOf(stored), nil
}

func (s *LayoutStore) list(ctx context.Context, repo string) ([]storedSnapshot, error) {
	lower, err := storeRepoName(repo)
	if err != nil {
		return nil, err
	}
	index, err := s.readIndex()
	if err != nil {
		return nil, fmt.Errorf("images: layout %s: %w", s.dir, err)
	}
	byDigest := map[v1.Hash]*storedSnapshot{}
	var order []v1.Hash
	for _, d := range index.Manifests {
		if !isRefOf(d, lower) {
			continue
		}
		tag := strings.TrimPrefix(d.Annotations[RefNameAnnotation], lower+":")
		if seen, ok := byDigest[d.Digest]; ok {
			seen.tags = append(seen.tags, tag)
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		img, err := s.path.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("images: layout image %s: %w", d.Digest, err)
		}
		snap, err := Describe(img)
		if err != nil {
			return nil, err
		}
		byDigest[d.Digest] = &storedSnapshot{Snapshot: snap, tags: []string{tag}}
		order = append(order, d.Digest)
	}
	out := make([]storedSnapshot, 0, len(order))
	for _, h := range order {
		out = append(out, *byDigest[h])
	}
	sortNewestFirst(out)
	return out, nil
}

// GC drops the removed snapshots' descriptors, then deletes every blob no
// remaining descriptor reaches (across all repositories, since they share
// blobs: a base layer is stored once).
//
// It sweeps blobs itself rather than through layout.Path.GarbageCollect,
// which in go-containerregistry v0.22.1 only lists unreferenced blobs
// (despite its doc), is deprecated, and fails outright on the temp file a
// crashed layer write leaves in blobs/, where this sweep removes it.
func (s *LayoutStore) GC(ctx context.Context, repo string, keep int) ([]v1.Hash, error) {
	if err := validateKeep(keep); err != nil {
		return nil, err
	}
	lower, err := storeRepoName(repo)
	if err != nil {
		return nil, err
	}
	var removed []v1.Hash
	err = s.locked(func() error {
		stored, err := s.list(ctx, repo)
		if err != nil {
			return err
		}
		var latest v1.Hash
		for _, snap := range stored {
			if slices.Contains(snap.tags, LatestTag) {
				latest = snap.Digest
			}
		}
		remove := map[v1.Hash]bool{}
		for _, snap := range chooseRemovals(stored, keep, latest) {
			remove[snap.Digest] = true
			removed = append(removed, snap.Digest)
		}
		if len(remove) > 0 {
			index, err := s.readIndex()
			if err != nil {
				return err
			}
			index.Manifests = slices.DeleteFunc(index.Manifests, func(d v1.Descriptor) bool {
				return remove[d.Digest] && isRefOf(d, lower)
			})
			if err := s.writeIndex(index); err != nil {
				return err
			}
		}
		return s.sweepBlobs(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("images: gc %s in layout %s: %w", repo, s.dir, err)
	}
	return removed, nil
}

// sweepBlobs deletes every file under blobs/ that index.json does not reach.
// It refuses to sweep when the index holds something it cannot read.
func (s *LayoutStore) sweepBlobs(ctx context.Context) error {
	ii, err := s.path.ImageIndex()
	if err != nil {
		return err
	}
	reachable := map[string]bool{}
	if err := markIndex(ii, reachable); err != nil {
		return fmt.Errorf("mark blobs: %w", err)
	}
	blobs := filepath.Join(s.dir, "blobs")
	return filepath.WalkDir(blobs, func(p string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			if errors.Is(walkErr, fs.ErrNotExist) && p == blobs {
				return nil // no blobs at all yet
			}
			return walkErr
		}
		if d.IsDir() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(blobs, p)
		if err != nil {
			return err
		}
		if reachable[strings.Replace(filepath.ToSlash(rel), "/", ":", 1)] {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// markIndex marks every blob an index reaches: nested indexes, image
// manifests, configs and layers. Anything else it cannot vouch for, so it
// fails rather than let the sweep delete blobs it would need.
func markIndex(ii v1.ImageIndex, reachable map[string]bool) error {
	manifest, err := ii.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range manifest.Manifests {
		reachable[d.Digest.String()] = true
		switch {
		case d.MediaType.IsImage():
			img, err := ii.Image(d.Digest)
			if err != nil {
				return err
			}
			m, err := img.Manifest()
			if err != nil {
				return err
			}
			reachable[m.Config.Digest.String()] = true
			for _, l := range m.Layers {
				reachable[l.Digest.String()] = true
			}
		case d.MediaType.IsIndex():
			child, err := ii.ImageIndex(d.Digest)
			if err != nil {
				return err
			}
			if err := markIndex(child, reachable); err != nil {
				return err
			}
		default:
			return fmt.Errorf("descriptor %s has media type %q, which gc does not understand", d.Digest, d.MediaType)
		}
	}
	return nil
}

// readIndex reads index.json as it is on disk now.
func (s *LayoutStore) readIndex() (*v1.IndexManifest, error) {
	f, err := os.Open(filepath.Join(s.dir, "index.json"))
	if err != nil {
		return nil, err
	}
	// Read-only; a close error cannot lose data.
	defer closeQuietly(f)
	index, err := v1.ParseIndexManifest(f)
	if err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	return index, nil
}

// writeIndex replaces index.json atomically. layout.Path's own index
// writers truncate and rewrite it in place, which a crash would leave
// empty, losing every repository's tags at once.
func (s *LayoutStore) writeIndex(index *v1.IndexManifest) error {
	raw, err := json.MarshalIndent(index, "", "   ")
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	return writeFileAtomically(filepath.Join(s.dir, "index.json"), raw, 0o644)
}

// isRefOf reports whether a descriptor is one of repo's tags.
func isRefOf(d v1.Descriptor, lowerRepo string) bool {
	return strings.HasPrefix(d.Annotations[RefNameAnnotation], lowerRepo+":")
}

// writeFileAtomically writes content to a temp file beside name, syncs it
// and renames it over name, so readers see the old file or the new one.
func writeFileAtomically(name string, content []byte, perm os.FileMode) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			closeQuietly(tmp)
			// Best effort: the write already failed and that error is the
			// one to report; a leftover temp file in blobs/ is swept by GC.
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(content); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	renamed = true
	return nil
}
