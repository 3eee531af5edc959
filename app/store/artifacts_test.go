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
