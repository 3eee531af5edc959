package images

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// storeCase builds a fresh store of one kind for each test.
type storeCase struct {
	name string
	open func(t *testing.T) Store
}

func storeCases() []storeCase {
	return []storeCase{
		{"registry", func(t *testing.T) Store { return newTestRegistry(t).store(t) }},
		{"layout", func(t *testing.T) Store {
			s, err := NewLayoutStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
}

func TestStoresImplementStore(t *testing.T) {
	var _ Store = (*RegistryStore)(nil)
	var _ Store = (*LayoutStore)(nil)
}

// pushSnapshot assembles and pushes snapshot i, whose workspace differs from
// every other i's.
func pushSnapshot(t *testing.T, s Store, base v1.Image, fx repoFixture, i int) Snapshot {
	t.Helper()
	writeFile(t, fx.workspace, "main.go", fmt.Sprintf("package main\n\n// build %d\nfunc main() {}\n", i), 0o644)
	out := assemble(t, fx.input(t, base, i, nil))
	snap, err := s.Push(t.Context(), out.Image)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Digest != imageDigest(t, out.Image) {
		t.Fatalf("Push says digest %s, image has %s", snap.Digest, imageDigest(t, out.Image))
	}
	return snap
}

func TestStoreRoundTrip(t *testing.T) {
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			ctx := t.Context()
			s := sc.open(t)
			base := newBaseImage(t)
			fx := newRepoFixture(t)

			if _, err := s.Latest(ctx, testRepo); !errors.Is(err, ErrNoSnapshot) {
				t.Fatalf("Latest on an empty store = %v, want ErrNoSnapshot", err)
			}
			if list, err := s.List(ctx, testRepo); err != nil || len(list) != 0 {
				t.Fatalf("List on an empty store = %v, %v", list, err)
			}

			out := assemble(t, fx.input(t, base, 0, nil))
			pushed, err := s.Push(ctx, out.Image)
			if err != nil {
				t.Fatal(err)
			}
			latest, err := s.Latest(ctx, testRepo)
			if err != nil {
				t.Fatal(err)
			}
			// GitHub names are case-insensitive; so is the store.
			latestLower, err := s.Latest(ctx, "acme/widget")
			if err != nil || latestLower.Digest != pushed.Digest {
				t.Fatalf("Latest(lowercase) = %v, %v", latestLower.Digest, err)
			}
			want := Snapshot{
				Digest:  imageDigest(t, out.Image),
				Repo:    testRepo,
				SHA:     testSHA(0),
				Built:   testBuilt(),
				Version: "v0.0.0-test",
				Caches:  []CacheInfo{{Path: testCachePath, Key: fx.input(t, base, 0, nil).Caches[0].Key}},
			}
			for what, got := range map[string]Snapshot{"Push": pushed, "Latest": latest} {
				if !sameSnapshot(got, want) {
					t.Errorf("%s = %+v\nwant %+v", what, got, want)
				}
			}

			img, err := s.Image(ctx, testRepo, latest.Digest)
			if err != nil {
				t.Fatal(err)
			}
			described, err := Describe(img)
			if err != nil || !sameSnapshot(described, want) {
				t.Errorf("Describe(Image) = %+v, %v", described, err)
			}
			if got, want := layerDigests(t, img), layerDigests(t, out.Image); !slices.Equal(got, want) {
				t.Errorf("stored layers %v, assembled %v", got, want)
			}
			cfg, err := img.ConfigFile()
			if err != nil || cfg.Config.Labels[baseLabel] != "toolchain" || cfg.Config.WorkingDir != WorkspacePath {
				t.Errorf("stored config %+v, %v", cfg.Config, err)
			}

			list, err := s.List(ctx, testRepo)
			if err != nil || len(list) != 1 || !sameSnapshot(list[0], want) {
				t.Fatalf("List = %+v, %v", list, err)
			}

			missing := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%064x", 42)}
			if _, err := s.Image(ctx, testRepo, missing); !errors.Is(err, ErrNoSnapshot) {
				t.Errorf("Image(missing digest) = %v, want ErrNoSnapshot", err)
			}
			if _, err := s.Image(ctx, "acme/other", latest.Digest); !errors.Is(err, ErrNoSnapshot) {
				t.Errorf("Image(other repo) = %v, want ErrNoSnapshot", err)
			}
			if _, err := s.Latest(ctx, "not a repo"); err == nil || errors.Is(err, ErrNoSnapshot) {
				t.Errorf("Latest(invalid repo) = %v, want a validation error", err)
			}
			if _, err := s.Push(ctx, base); !errors.Is(err, ErrNotSnapshot) {
				t.Errorf("Push(base image) = %v, want ErrNotSnapshot", err)
			}
		})
	}
}

func TestStoreListAndGC(t *testing.T) {
	for _, sc := range storeCases() {
		t.Run(sc.name, func(t *testing.T) {
			ctx := t.Context()
			s := sc.open(t)
			base := newBaseImage(t)
			fx := newRepoFixture(t)

			// Built 0..3 hours after testBuilt, pushed so that latest ends on
			// the oldest: GC must keep it anyway.
			snaps := map[int]Snapshot{}
			for _, i := range []int{1, 2, 3, 0} {
				snaps[i] = pushSnapshot(t, s, base, fx, i)
			}
			latest, err := s.Latest(ctx, testRepo)
			if err != nil || latest.Digest != snaps[0].Digest {
				t.Fatalf("Latest = %v, %v; want the last pushed %s", latest.Digest, err, snaps[0].Digest)
			}
			list, err := s.List(ctx, testRepo)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := shas(list), []string{testSHA(3), testSHA(2), testSHA(1), testSHA(0)}; !slices.Equal(got, want) {
				t.Fatalf("List order %q, want newest first %q", got, want)
			}

			if _, err := s.GC(ctx, testRepo, 0); err == nil {
				t.Fatal("GC with keep 0 accepted")
			}
			removed, err := s.GC(ctx, testRepo, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sortedStrings(removed...), sortedStrings(snaps[1].Digest, snaps[2].Digest); !slices.Equal(got, want) {
				t.Fatalf("GC removed %q, want %q", got, want)
			}
			list, err = s.List(ctx, testRepo)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := shas(list), []string{testSHA(3), testSHA(0)}; !slices.Equal(got, want) {
				t.Fatalf("after GC List %q, want the newest and latest %q", got, want)
			}
			for _, i := range []int{1, 2} {
				if _, err := s.Image(ctx, testRepo, snaps[i].Digest); !errors.Is(err, ErrNoSnapshot) {
					t.Errorf("Image(removed %d) = %v, want ErrNoSnapshot", i, err)
				}
			}
			for _, i := range []int{3, 0} {
				img, err := s.Image(ctx, testRepo, snaps[i].Digest)
				if err != nil {
					t.Fatalf("Image(kept %d): %v", i, err)
				}
				// Kept snapshots stay whole: every blob still reads.
				if _, err := img.ConfigFile(); err != nil {
					t.Errorf("kept %d config: %v", i, err)
				}
				layers, err := img.Layers()
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range layers {
					if len(layerEntries(t, l)) == 0 {
						t.Errorf("kept %d: empty layer", i)
					}
				}
			}
			if again, err := s.GC(ctx, testRepo, 1); err != nil || len(again) != 0 {
				t.Fatalf("second GC removed %v, %v", again, err)
			}
		})
	}
}

func shas(list []Snapshot) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.SHA
	}
	return out
}

func sameSnapshot(a, b Snapshot) bool {
	return a.Digest == b.Digest && a.Repo == b.Repo && a.SHA == b.SHA && a.Built.Equal(b.Built) &&
		a.Version == b.Version && slices.Equal(a.Caches, b.Caches) && a.Built.Location() == time.UTC
}
