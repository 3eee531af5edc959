package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// An attempt's diff is stored with its result, once, in the same
// transaction: the first upload's diff is the one kept, text of any kind
// (markup, tabs, multi-byte characters, a mebibyte of it) comes back as
// it went in, and an attempt without one has none.
func TestAttemptDiffIsStoredWithTheFirstResult(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d", 1, "s")); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a1", "a2"} {
			if err := s.CreateAttempt(ctx, store.Attempt{ID: id, SessionID: "s", Deadline: t0.Add(time.Hour)}, "claim-code-"+id+"-0123456789", t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimAttempt(ctx, id, "claim-code-"+id+"-0123456789", "token-"+id+"-abcdefghijklmnop", t0); err != nil {
				t.Fatalf("claim %s: %v", id, err)
			}
		}
		body := "diff --git a/x.html b/x.html\n@@ -1 +1 @@\n-<b>old</b>\n+<script>alert(1)</script>\t«ünï»\n"
		patch := body + strings.Repeat("+"+strings.Repeat("é", 40)+"\n", (1<<20-len(body))/82)
		want := store.Diff{Patch: patch, Truncated: true}
		first, err := s.RecordResult(ctx, "a1", `{"x":1}`, &want, t0)
		if err != nil || !first {
			t.Fatalf("result: %v %v", first, err)
		}
		if again, err := s.RecordResult(ctx, "a1", `{"x":2}`, &store.Diff{Patch: "+other\n"}, t0); err != nil || again {
			t.Fatalf("a second upload: %v %v", again, err)
		}
		got, err := s.AttemptDiff(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Patch != want.Patch || !got.Truncated {
			t.Errorf("the diff came back as %d bytes (truncated %v), want %d bytes, truncated", len(got.Patch), got.Truncated, len(want.Patch))
		}
		if _, err := s.RecordResult(ctx, "a2", `{"x":3}`, nil, t0); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a2", "none"} {
			if _, err := s.AttemptDiff(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s's diff: %v, want ErrNotFound", id, err)
			}
		}
	})
}
