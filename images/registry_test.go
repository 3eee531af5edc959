package images

import (
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestRegistryPushUploadsOnlyWhatChanged follows one repository through four
// snapshots and checks, from the registry's side, which blobs each push
// uploads.
func TestRegistryPushUploadsOnlyWhatChanged(t *testing.T) {
	ctx := t.Context()
	reg := newTestRegistry(t)
	s := reg.store(t)
	base := newBaseImage(t)
	fx := newRepoFixture(t)

	// 1. First snapshot: everything is new.
	first := assemble(t, fx.input(t, base, 0, nil))
	if !slices.Equal(first.Rebuilt, []string{testCachePath}) {
		t.Fatalf("first build rebuilt %q", first.Rebuilt)
	}
	if _, err := s.Push(ctx, first.Image); err != nil {
		t.Fatal(err)
	}
	d1 := layerDigests(t, first.Image)
	uploaded, _ := reg.takeUploads()
	if want := sortedStrings(d1[0], d1[1], d1[2], configDigest(t, first.Image)); !slices.Equal(uploaded, want) {
		t.Fatalf("first push uploaded %q, want base, cache, workspace and config %q", uploaded, want)
	}

	// 2. Same lockfiles, new commit. The cache's files on the host have
	// changed meanwhile (a cache keeps growing), but the key has not: the
	// layer must be Previous's, not a new tar of the host dir.
	writeFile(t, fx.cache, "example.com/other@v2.0.0/other.go", "package other\n", 0o444)
	previous := latestImage(t, s)
	second := assemble(t, fx.input(t, base, 1, previous))
	if !slices.Equal(second.Reused, []string{testCachePath}) || len(second.Rebuilt) != 0 {
		t.Fatalf("second build reused %q rebuilt %q", second.Reused, second.Rebuilt)
	}
	d2 := layerDigests(t, second.Image)
	if d2[1] != d1[1] {
		t.Fatalf("cache layer %s became %s with unchanged lockfiles", d1[1], d2[1])
	}
	if _, err := s.Push(ctx, second.Image); err != nil {
		t.Fatal(err)
	}
	uploaded, requests := reg.takeUploads()
	// The checkout did not change either, and its layer is deterministic,
	// so only the config (new SHA and build time) is new.
	if d2[2] != d1[2] {
		t.Fatalf("workspace layer changed without a source change: %s then %s", d1[2], d2[2])
	}
	if want := sortedStrings(configDigest(t, second.Image)); !slices.Equal(uploaded, want) {
		t.Fatalf("unchanged push uploaded %q (%d upload requests), want only the config %q", uploaded, requests, want)
	}

	// 3. One source file changes: the workspace layer and the config.
	writeFile(t, fx.workspace, "main.go", "package main\n\nfunc main() { println() }\n", 0o644)
	third := assemble(t, fx.input(t, base, 2, latestImage(t, s)))
	if !slices.Equal(third.Reused, []string{testCachePath}) {
		t.Fatalf("third build reused %q", third.Reused)
	}
	if _, err := s.Push(ctx, third.Image); err != nil {
		t.Fatal(err)
	}
	d3 := layerDigests(t, third.Image)
	uploaded, requests = reg.takeUploads()
	if want := sortedStrings(d3[2], configDigest(t, third.Image)); !slices.Equal(uploaded, want) {
		t.Fatalf("source change uploaded %q (%d upload requests), want workspace and config %q", uploaded, requests, want)
	}
	// A blob upload here is POST, PATCH, PUT; two blobs, no more.
	if requests > 6 {
		t.Errorf("%d upload requests for two blobs", requests)
	}

	// 4. The lockfile changes: the cache is rebuilt from the host dir (now
	// holding the new module), and its new layer is uploaded.
	writeFile(t, fx.workspace, "go.sum", "example.com/dep v1.0.0 h1:abc=\nexample.com/other v2.0.0 h1:xyz=\n", 0o644)
	fourthInput := fx.input(t, base, 3, latestImage(t, s))
	fourth := assemble(t, fourthInput)
	if !slices.Equal(fourth.Rebuilt, []string{testCachePath}) || len(fourth.Reused) != 0 {
		t.Fatalf("lockfile change: reused %q rebuilt %q", fourth.Reused, fourth.Rebuilt)
	}
	d4 := layerDigests(t, fourth.Image)
	if d4[1] == d1[1] {
		t.Fatal("rebuilt cache layer kept the old digest")
	}
	if d4[0] != d1[0] {
		t.Fatal("base layer changed")
	}
	if _, err := s.Push(ctx, fourth.Image); err != nil {
		t.Fatal(err)
	}
	uploaded, _ = reg.takeUploads()
	if want := sortedStrings(d4[1], d4[2], configDigest(t, fourth.Image)); !slices.Equal(uploaded, want) {
		t.Fatalf("lockfile change uploaded %q, want cache, workspace and config %q", uploaded, want)
	}
	latest, err := s.Latest(ctx, testRepo)
	if err != nil || latest.SHA != testSHA(3) || len(latest.Caches) != 1 || latest.Caches[0].Key != fourthInput.Caches[0].Key {
		t.Fatalf("Latest after four pushes = %+v, %v", latest, err)
	}
}

// latestImage fetches the newest snapshot the way a builder would to pass
// it as Previous.
func latestImage(t *testing.T, s Store) v1.Image {
	t.Helper()
	snap, err := s.Latest(t.Context(), testRepo)
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.Image(t.Context(), testRepo, snap.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestNewRegistryStoreOptions(t *testing.T) {
	reg := newTestRegistry(t)
	// The caller's own Authenticator must replace the default keychain
	// rather than clash with it.
	if _, err := NewRegistryStore(reg.host(), remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatalf("WithAuth refused: %v", err)
	}
	if _, err := NewRegistryStore(reg.host(), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		t.Fatalf("WithAuthFromKeychain refused: %v", err)
	}
	if _, err := NewRegistryStore(reg.host(), remote.WithAuth(authn.Anonymous), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err == nil {
		t.Fatal("contradictory auth options accepted")
	}
	for _, bad := range []string{"", "inspect", "Registry.example.com/UPPER"} {
		if _, err := NewRegistryStore(bad); err == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
}
