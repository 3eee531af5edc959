package images

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// LatestTag is the tag every Push moves to the pushed snapshot.
const LatestTag = "latest"

// Store is where snapshots live. Each snapshot is tagged with its commit SHA
// and, when pushed, "latest".
type Store interface {
	// Push stores img under the repository and SHA from its labels and tags
	// it <sha> and latest.
	Push(ctx context.Context, img v1.Image) (Snapshot, error)
	// Latest describes the snapshot the repository's latest tag points at;
	// ErrNoSnapshot when there is none.
	Latest(ctx context.Context, repo string) (Snapshot, error)
	// Image returns the repository's snapshot with that manifest digest;
	// ErrNoSnapshot when the store has no such snapshot for the repository.
	Image(ctx context.Context, repo string, digest v1.Hash) (v1.Image, error)
	// List describes the repository's snapshots, newest (by Built) first.
	List(ctx context.Context, repo string) ([]Snapshot, error)
	// GC removes the repository's snapshots except the newest keep (at
	// least 1) and the one latest points at, and returns the removed
	// snapshots' digests.
	GC(ctx context.Context, repo string, keep int) (removed []v1.Hash, err error)
}

// storedSnapshot is a snapshot with the tags that point at it in a store.
type storedSnapshot struct {
	Snapshot
	tags []string
}

// sortNewestFirst orders by Built, newest first; equal times order by
// digest so List is stable.
func sortNewestFirst(snaps []storedSnapshot) {
	sort.Slice(snaps, func(i, j int) bool {
		if !snaps[i].Built.Equal(snaps[j].Built) {
			return snaps[i].Built.After(snaps[j].Built)
		}
		return snaps[i].Digest.String() < snaps[j].Digest.String()
	})
}

// snapshotsOf drops the tags, for List's answer.
func snapshotsOf(stored []storedSnapshot) []Snapshot {
	out := make([]Snapshot, len(stored))
	for i, s := range stored {
		out[i] = s.Snapshot
	}
	return out
}

// chooseRemovals picks what GC removes from a newest-first list: everything
// past the first keep, except the snapshot latest points at.
func chooseRemovals(newestFirst []storedSnapshot, keep int, latest v1.Hash) []storedSnapshot {
	var remove []storedSnapshot
	for i, s := range newestFirst {
		if i < keep || s.Digest == latest {
			continue
		}
		remove = append(remove, s)
	}
	return remove
}

func validateKeep(keep int) error {
	if keep < 1 {
		return fmt.Errorf("images: gc keep %d: must keep at least 1", keep)
	}
	return nil
}

// isSnapshotTag reports whether a tag is one Push writes: latest or a SHA.
func isSnapshotTag(tag string) bool {
	return tag == LatestTag || validateSHA(tag) == nil
}

// storeRepoName is the repository's name in a store: lowercase, because
// registries and OCI reference names allow no capitals and GitHub treats
// owner and name case-insensitively.
func storeRepoName(repo string) (string, error) {
	if err := validateRepo(repo); err != nil {
		return "", fmt.Errorf("images: %w", err)
	}
	return strings.ToLower(repo), nil
}
