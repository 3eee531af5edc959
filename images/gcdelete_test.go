package images

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A registry may disable deletion, and then answers a DELETE of a tag or
// a manifest with 400 or 405 (the OCI distribution spec, "Content
// Management": "If tag deletion is disabled, the registry MUST respond
// with either a 400 Bad Request or a 405 Method Not Allowed", the same
// for manifests and blobs), the 400 with the error code UNSUPPORTED, with
// another code (docker/distribution's registry:2 says DIGEST_INVALID to a
// tag delete), or with any body at all. A tag GC cannot delete is left to
// the manifest delete; a manifest it cannot delete ends GC with
// ErrDeletionUnsupported, which says what to do instead.
func TestRegistryGCWhenTheRegistryRefusesDeletion(t *testing.T) {
	answers := map[string]func(w http.ResponseWriter){
		"405": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusMethodNotAllowed)
		},
		"400 UNSUPPORTED": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`) // the client reads what it gets
		},
		"400 DIGEST_INVALID": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":[{"code":"DIGEST_INVALID","message":"provided digest did not match uploaded content"}]}`) // as above
		},
		"400 with a plain body": func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "deletion is disabled\n") // as above
		},
	}
	isTag := func(r *http.Request) bool {
		ref := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		return strings.Contains(r.URL.Path, "/manifests/") && !strings.HasPrefix(ref, "sha256:")
	}
	for name, answer := range answers {
		for _, what := range []string{"tags", "manifests"} {
			t.Run(what+" refused with "+name, func(t *testing.T) {
				reg := newTestRegistry(t)
				s := reg.store(t)
				base, fx := newBaseImage(t), newRepoFixture(t)
				var snaps []Snapshot
				for i := range 2 {
					snaps = append(snaps, pushSnapshot(t, s, base, fx, i))
				}
				reg.mu.Lock()
				reg.refuseDelete = func(w http.ResponseWriter, r *http.Request) bool {
					if (what == "tags") != isTag(r) {
						return false
					}
					answer(w)
					return true
				}
				reg.mu.Unlock()
				removed, err := s.GC(t.Context(), testRepo, 1)
				if what == "tags" {
					// The oldest goes by its manifest.
					if err != nil || len(removed) != 1 || removed[0] != snaps[0].Digest {
						t.Fatalf("GC = %v, %v; want the oldest removed", removed, err)
					}
					return
				}
				if !errors.Is(err, ErrDeletionUnsupported) || len(removed) != 0 {
					t.Fatalf("GC = %v, %v; want nothing removed and ErrDeletionUnsupported", removed, err)
				}
				// The registry deletes tags but not manifests: had GC
				// untagged the oldest first, its manifest would stay,
				// unlisted and never collected again. Its tag survives.
				left, err := s.List(t.Context(), testRepo)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(left, func(l Snapshot) bool { return l.Digest == snaps[0].Digest }) || len(left) != 2 {
					t.Fatalf("after the refused GC, List = %v; want both snapshots, the oldest still tagged", left)
				}
			})
		}
	}
	// Any other refusal is not "unsupported" (a 403 DENIED: a token
	// without delete rights, which the operator should hear about).
	reg := newTestRegistry(t)
	s := reg.store(t)
	base, fx := newBaseImage(t), newRepoFixture(t)
	for i := range 2 {
		pushSnapshot(t, s, base, fx, i)
	}
	reg.mu.Lock()
	reg.refuseDelete = func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`) // as above
		return true
	}
	reg.mu.Unlock()
	if removed, err := s.GC(t.Context(), testRepo, 1); err == nil || errors.Is(err, ErrDeletionUnsupported) || !slices.Equal(removed, nil) {
		t.Fatalf("GC on a failing registry = %v, %v; want a plain error", removed, err)
	}
}

// Google's Container Registry deletes a manifest by digest only once no
// tag points at it, and otherwise answers 400 GOOGLE_MANIFEST_DANGLING_TAG
// (https://github.com/genuinetools/reg/issues/136 shows the exchange),
// though the OCI distribution spec ("Deleting Manifests") has the
// manifest's tags go with it. That 400 is not deletion disabled: GC
// untags the snapshot and deletes the manifest again.
func TestRegistryGCWhenTheRegistryDeletesOnlyUntaggedManifests(t *testing.T) {
	reg := newTestRegistry(t)
	s := reg.store(t)
	base, fx := newBaseImage(t), newRepoFixture(t)
	var snaps []Snapshot
	for i := range 2 {
		snaps = append(snaps, pushSnapshot(t, s, base, fx, i))
	}
	oldestTag := "/manifests/" + snaps[0].SHA
	oldestManifest := "/manifests/" + snaps[0].Digest.String()
	var (
		mu      sync.Mutex // the handler's goroutine writes, the test reads
		tagged  = true
		deletes []string
	)
	reg.mu.Lock()
	reg.refuseDelete = func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		deletes = append(deletes, r.URL.Path[strings.LastIndex(r.URL.Path, "/manifests/"):])
		switch {
		case strings.HasSuffix(r.URL.Path, oldestTag):
			tagged = false
		case strings.HasSuffix(r.URL.Path, oldestManifest) && tagged:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":[{"code":"GOOGLE_MANIFEST_DANGLING_TAG","message":"Manifest is still referenced by tag: `+snaps[0].SHA+`"}]}`) // the client reads what it gets
			return true
		}
		return false
	}
	reg.mu.Unlock()
	removed, err := s.GC(t.Context(), testRepo, 1)
	if err != nil || !slices.Equal(removed, []v1.Hash{snaps[0].Digest}) {
		t.Fatalf("GC = %v, %v; want the oldest removed", removed, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{oldestManifest, oldestTag, oldestManifest}; !slices.Equal(deletes, want) {
		t.Fatalf("DELETEs %v, want %v: the manifest, refused while tagged, its tag, the manifest again", deletes, want)
	}
}
