package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// What the app adds to a result when it reports replaces the stored
// result of an ended attempt, keeping when it ended; an attempt with no
// result yet is left alone.
func TestSetAttemptResultReplacesOnlyAnEndedAttemptsResult(t *testing.T) {
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
		if _, err := s.RecordResult(ctx, "a1", `{"x":1}`, nil, t0); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a1", "a2"} {
			if err := s.SetAttemptResult(ctx, id, `{"x":1,"baseline":{}}`); err != nil {
				t.Fatal(err)
			}
		}
		a1, err := s.GetAttempt(ctx, "a1")
		if err != nil {
			t.Fatal(err)
		}
		if a1.Result != `{"x":1,"baseline":{}}` || !a1.UpdatedAt.Equal(t0) {
			t.Errorf("a1: result %q, updated %v", a1.Result, a1.UpdatedAt)
		}
		a2, err := s.GetAttempt(ctx, "a2")
		if err != nil {
			t.Fatal(err)
		}
		if a2.Result != "" || a2.State != store.AttemptRunning {
			t.Errorf("a running attempt got %q (%s)", a2.Result, a2.State)
		}
	})
}
