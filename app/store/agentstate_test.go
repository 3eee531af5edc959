package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// An agent state is kept beside the attempt's artifacts: replaced by a
// repeated upload, outside the session's artifacts cap and their list,
// and pruned with them.
func TestAgentStateIsKeptAsAnArtifactOutsideItsCapAndList(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if kept, err := s.HasAgentState(ctx, "a1"); err != nil || kept {
			t.Fatalf("before any upload: kept %v, %v", kept, err)
		}
		if _, err := s.AgentState(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a state never kept: %v", err)
		}
		big := bytes.Repeat([]byte{0x1f, 0x8b, 7}, 300) // 900 bytes: over the 500-byte artifacts cap below
		if err := s.PutAgentState(ctx, "a1", "s1", []byte("old"), t0); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAgentState(ctx, "a1", "s1", big, t0); err != nil {
			t.Fatalf("replacing: %v", err)
		}
		if got, err := s.AgentState(ctx, "a1"); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("the kept state: %d bytes, %v", len(got), err)
		}
		if kept, err := s.HasAgentState(ctx, "a1"); err != nil || !kept {
			t.Fatalf("kept %v, %v", kept, err)
		}
		// The session's artifacts still have their whole cap.
		if err := s.PutArtifact(ctx, store.Artifact{AttemptID: "a1", SessionID: "s1", Name: "report.txt", ContentType: "text/plain",
			Size: 400, SHA256: "ab", Content: make([]byte, 400), CreatedAt: t0}, 500); err != nil {
			t.Fatalf("an artifact beside the state: %v", err)
		}
		if list, err := s.Artifacts(ctx, "a1"); err != nil || len(list) != 1 || list[0].Name != "report.txt" {
			t.Fatalf("the artifacts list %+v, %v", list, err)
		}
		if n, err := s.PruneArtifacts(ctx, t0.Add(time.Hour)); err != nil || n != 2 {
			t.Fatalf("pruned %d, %v", n, err)
		}
		if _, err := s.AgentState(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a pruned state: %v", err)
		}
	})
}
