package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

func TestLiveOutputKeepsEachAttemptsTailInOrder(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		add := func(attempt string, seq int64, text string) bool {
			t.Helper()
			ok, err := s.AppendOutput(ctx, store.OutputChunk{SessionID: "s1", AttemptID: attempt, Seq: seq, Phase: "agent", Command: "agent", Text: text, CreatedAt: t0}, 10)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !add("a1", 1, "one\n") || !add("a1", 2, "two\n") {
			t.Fatal("new chunks not added")
		}
		if add("a1", 2, "two again\n") {
			t.Fatal("a repeated seq was added")
		}
		add("a1", 3, "three\n")               // 4+4+6 > 10: "one" goes
		add("a2", 1, strings.Repeat("x", 30)) // over keep alone: kept, the newest
		if _, err := s.AppendOutput(ctx, store.OutputChunk{SessionID: "s2", AttemptID: "b1", Seq: 1, Phase: "verify", Command: "go test", Text: "other\n", CreatedAt: t0}, 10); err != nil {
			t.Fatal(err)
		}
		all, err := s.OutputAfter(ctx, "s1", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for i, c := range all {
			texts = append(texts, c.Text)
			if i > 0 && c.ID <= all[i-1].ID {
				t.Fatalf("ids out of order: %+v", all)
			}
		}
		if got := strings.Join(texts, "|"); got != "two\n|three\n|"+strings.Repeat("x", 30) {
			t.Fatalf("s1's output: %q", got)
		}
		after, err := s.OutputAfter(ctx, "s1", all[0].ID, 1)
		if err != nil || len(after) != 1 || after[0].Text != "three\n" || after[0].Seq != 3 || after[0].AttemptID != "a1" || !after[0].CreatedAt.Equal(t0) {
			t.Fatalf("after the first: %+v, %v", after, err)
		}
		// Pruning goes by when a chunk was stored.
		if n, err := s.PruneOutput(ctx, t0); err != nil || n != 0 {
			t.Fatalf("pruned %d (%v) of chunks stored at the cutoff", n, err)
		}
		if n, err := s.PruneOutput(ctx, t0.Add(time.Millisecond)); err != nil || n != 4 {
			t.Fatalf("pruned %d, %v; want s1's 3 and s2's 1", n, err)
		}
		if left, _ := s.OutputAfter(ctx, "s1", 0, 100); len(left) != 0 {
			t.Fatalf("left after pruning: %+v", left)
		}
	})
}
