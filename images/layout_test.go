package images

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// blobFiles lists the layout's blob files as "sha256:<hex>" (or the bare
// file name for anything else lying there).
func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	blobs := filepath.Join(dir, "blobs")
	err := filepath.WalkDir(blobs, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(blobs, p)
		if err != nil {
			return err
		}
		out = append(out, strings.Replace(filepath.ToSlash(rel), "/", ":", 1))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func refNames(t *testing.T, dir string) map[string]v1.Hash {
	t.Helper()
	ii, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Hash{}
	for _, d := range m.Manifests {
		ref := d.Annotations[RefNameAnnotation]
		if _, dup := out[ref]; dup {
			t.Fatalf("ref %s appears twice in index.json", ref)
		}
		out[ref] = d.Digest
	}
	return out
}

func TestLayoutStoreIndexAndGCBlobs(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	var snaps []Snapshot
	for i := range 3 {
		snaps = append(snaps, pushSnapshot(t, s, base, fx, i))
	}

	// Another repository shares the layout (and the base layer).
	other := newRepoFixture(t)
	otherIn := other.input(t, base, 7, nil)
	otherIn.Repo = "Acme/Gadget"
	otherImg := assemble(t, otherIn).Image
	otherSnap, err := s.Push(ctx, otherImg)
	if err != nil {
		t.Fatal(err)
	}

	refs := refNames(t, dir)
	want := map[string]v1.Hash{
		"acme/widget:" + testSHA(0): snaps[0].Digest,
		"acme/widget:" + testSHA(1): snaps[1].Digest,
		"acme/widget:" + testSHA(2): snaps[2].Digest,
		"acme/widget:latest":        snaps[2].Digest,
		"acme/gadget:" + testSHA(7): otherSnap.Digest,
		"acme/gadget:latest":        otherSnap.Digest,
	}
	if !maps.Equal(refs, want) {
		t.Fatalf("index refs %v\nwant %v", refs, want)
	}

	// Pushing the same snapshot again replaces its descriptors, never
	// duplicates them.
	img, err := s.Image(ctx, testRepo, snaps[2].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, img); err != nil {
		t.Fatal(err)
	}
	if refs := refNames(t, dir); !maps.Equal(refs, want) {
		t.Fatalf("after re-push, index refs %v", refs)
	}

	// A stray temp file, as a crashed blob write would leave.
	stray := filepath.Join(dir, "blobs", "sha256", "0123abc.tmp")
	if err := os.WriteFile(stray, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := layerDigests(t, img)[2] // snapshot 2's workspace layer is its own
	firstWorkspace := layerDigests(t, mustImage(t, s, snaps[0].Digest))[2]
	removed, err := s.GC(ctx, testRepo, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedStrings(removed...), sortedStrings(snaps[0].Digest, snaps[1].Digest); !slices.Equal(got, want) {
		t.Fatalf("GC removed %q, want %q", got, want)
	}
	blobs := blobFiles(t, dir)
	for _, h := range []v1.Hash{snaps[0].Digest, snaps[1].Digest, firstWorkspace} {
		if slices.Contains(blobs, h.String()) {
			t.Errorf("blob %s of a removed snapshot is still on disk", h)
		}
	}
	if slices.Contains(blobs, "sha256:0123abc.tmp") {
		t.Error("stray temp file survived GC")
	}
	for _, h := range append(layerDigests(t, otherImg), otherSnap.Digest, gone, snaps[2].Digest) {
		if !slices.Contains(blobs, h.String()) {
			t.Errorf("blob %s of a kept snapshot was removed", h)
		}
	}
	if _, err := s.Latest(ctx, "acme/gadget"); err != nil {
		t.Errorf("other repository lost its latest: %v", err)
	}

	// Reopening finds everything where it was.
	reopened, err := NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	list, err := reopened.List(ctx, testRepo)
	if err != nil || len(list) != 1 || list[0].Digest != snaps[2].Digest {
		t.Fatalf("reopened List = %+v, %v", list, err)
	}
}

func TestLayoutStorePreviousFromLayoutReusesLayer(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s, err := NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := newBaseImage(t)
	fx := newRepoFixture(t)
	first := pushSnapshot(t, s, base, fx, 0)
	blobsBefore := len(blobFiles(t, dir))

	in := fx.input(t, base, 1, mustImage(t, s, first.Digest))
	in.Caches[0].HostDir = "" // only Previous can supply the layer
	second := assemble(t, in)
	if _, err := s.Push(ctx, second.Image); err != nil {
		t.Fatal(err)
	}
	// Same cache and workspace layers: one new config, one new manifest.
	if after := len(blobFiles(t, dir)); after != blobsBefore+2 {
		t.Fatalf("%d blobs before, %d after; want 2 more", blobsBefore, after)
	}
}

func mustImage(t *testing.T, s Store, digest v1.Hash) v1.Image {
	t.Helper()
	img, err := s.Image(t.Context(), testRepo, digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
