package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

func TestArtifactsAreKeptCappedPerSessionAndPruned(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 0xff}, 100)...)
		put := func(attempt, name string, content []byte, at time.Time) error {
			return s.PutArtifact(ctx, store.Artifact{AttemptID: attempt, SessionID: "s1", Name: name, ContentType: "image/png",
				Size: int64(len(content)), SHA256: "ab", Content: content, CreatedAt: at}, 500)
		}
		if err := put("a1", "screenshots/home.png", png, t0); err != nil {
			t.Fatal(err)
		}
		// Replacing a name does not count the old bytes against the cap.
		if err := put("a1", "screenshots/home.png", png, t0); err != nil {
			t.Fatalf("replacing: %v", err)
		}
		// The cap spans the session's attempts.
		if err := put("a2", "screenshots/more.png", make([]byte, 300), t0.Add(time.Hour)); !errors.Is(err, store.ErrArtifactsFull) {
			t.Fatalf("over the session's cap: %v", err)
		}
		if err := put("a2", "screenshots/small.png", make([]byte, 100), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		list, err := s.Artifacts(ctx, "a1")
		if err != nil || len(list) != 1 || list[0].Name != "screenshots/home.png" || list[0].Size != int64(len(png)) || list[0].Content != nil {
			t.Fatalf("a1's artifacts: %+v, %v", list, err)
		}
		got, err := s.ArtifactContent(ctx, "a1", "screenshots/home.png")
		if err != nil || !bytes.Equal(got.Content, png) || !got.CreatedAt.Equal(t0) {
			t.Fatalf("content: %d bytes at %v, %v", len(got.Content), got.CreatedAt, err)
		}
		n, err := s.PruneArtifacts(ctx, t0.Add(time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("pruned %d, %v", n, err)
		}
		if _, err := s.ArtifactContent(ctx, "a1", "screenshots/home.png"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a pruned artifact: %v", err)
		}
		if list, _ := s.Artifacts(ctx, "a2"); len(list) != 1 {
			t.Errorf("a newer artifact was pruned: %+v", list)
		}
	})
}

// An attempt of no session (a baseline's, decision 0083) is capped alone,
// not with every other such attempt; a published screenshot is served at
// its digest only while the artifact it names holds those bytes.
func TestBaselineArtifactsAreCappedPerAttemptAndPublishedByDigest(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		put := func(attempt, name string, content []byte, sum string) error {
			return s.PutArtifact(ctx, store.Artifact{AttemptID: attempt, Name: name, ContentType: "image/png",
				Size: int64(len(content)), SHA256: sum, Content: content, CreatedAt: t0}, 500)
		}
		if err := put("b1", "shots/a.png", make([]byte, 400), "d1"); err != nil {
			t.Fatal(err)
		}
		if err := put("b2", "shots/a.png", make([]byte, 400), "d2"); err != nil {
			t.Fatalf("another baseline attempt counted against the first's cap: %v", err)
		}
		if err := put("b1", "shots/b.png", make([]byte, 200), "d3"); !errors.Is(err, store.ErrArtifactsFull) {
			t.Fatalf("over one baseline attempt's cap: %v", err)
		}
		if _, err := s.PublicScreenshot(ctx, "d1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unpublished digest: %v", err)
		}
		if err := s.PublishScreenshot(ctx, "d1", "b1", "shots/a.png", t0); err != nil {
			t.Fatal(err)
		}
		if a, err := s.PublicScreenshot(ctx, "d1"); err != nil || a.AttemptID != "b1" || a.Size != 400 {
			t.Fatalf("a published digest: %+v, %v", a, err)
		}
		// The artifact replaced by other bytes: the digest serves nothing.
		if err := put("b1", "shots/a.png", make([]byte, 100), "d4"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PublicScreenshot(ctx, "d1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a digest whose artifact changed: %v", err)
		}
	})
}
