package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// Turns are stored once by their source, numbered in order, capped, refused
// once the session ended, and closed with it (decision 0071).
func TestTurnsAreStoredOnceNumberedCappedAndClosedWithTheSession(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.Accept(ctx, acceptance("d-turns", 300, "s-turns")); err != nil {
			t.Fatal(err)
		}
		turn := func(i int) session.Turn {
			return session.Turn{SessionID: "s-turns", AuthorLogin: "mara", AuthorID: 7, Source: session.TurnFromComment,
				CommentID: int64(400 + i), Message: fmt.Sprintf("message %d", i)}
		}
		first, added, err := s.AddTurn(ctx, turn(1), "comment:401", 3, t0)
		if err != nil || !added || first.Seq != 1 || first.State != session.TurnPending {
			t.Fatalf("first: %+v %v %v", first, added, err)
		}
		again, added, err := s.AddTurn(ctx, turn(1), "comment:401", 3, t0.Add(time.Second))
		if err != nil || added || again.Seq != 1 {
			t.Fatalf("a replay: %+v %v %v", again, added, err)
		}
		for i := 2; i <= 3; i++ {
			if tn, _, err := s.AddTurn(ctx, turn(i), fmt.Sprintf("comment:%d", 400+i), 3, t0); err != nil || tn.Seq != i {
				t.Fatalf("turn %d: %+v %v", i, tn, err)
			}
		}
		if _, _, err := s.AddTurn(ctx, turn(4), "comment:404", 3, t0); !errors.Is(err, store.ErrTooManyTurns) {
			t.Fatalf("past the cap: %v", err)
		}
		if err := s.DeliverTurns(ctx, "s-turns", "a1", 2, t0); err != nil {
			t.Fatal(err)
		}
		after, err := s.TurnsAfter(ctx, "s-turns", 1)
		if err != nil || len(after) != 2 || after[0].State != session.TurnDelivered || after[0].AttemptID != "a1" || after[1].State != session.TurnPending {
			t.Fatalf("after 1: %+v %v", after, err)
		}
		if _, err := s.MutateSession(ctx, "s-turns", t0, func(x *store.Session) error { return x.End(session.Changed, "", "") }); err != nil {
			t.Fatal(err)
		}
		all, err := s.SessionTurns(ctx, "s-turns")
		if err != nil || len(all) != 3 {
			t.Fatalf("turns: %+v %v", all, err)
		}
		for _, tn := range all {
			want := string(session.Changed)
			if tn.Seq == 3 {
				want = store.TurnUndelivered
			}
			if tn.State != session.TurnDone || tn.Outcome != want {
				t.Errorf("turn %d after the end: %s %q, want done %q", tn.Seq, tn.State, tn.Outcome, want)
			}
		}
		if und, err := s.UndeliveredTurns(ctx, "s-turns"); err != nil || len(und) != 1 || und[0].Message != "message 3" {
			t.Errorf("undelivered: %+v %v", und, err)
		}
		if _, _, err := s.AddTurn(ctx, turn(5), "comment:405", 10, t0); !errors.Is(err, store.ErrSessionEnded) {
			t.Errorf("a turn for an ended session: %v", err)
		}
		// A continuation's conversation: the earlier session's request and
		// turns, then its own.
		next := newSession("s-next", 500)
		next.TriggerInfo = store.TriggerInfo{Continues: "s-turns"}.Encode()
		if _, err := s.Accept(ctx, store.Acceptance{DeliveryID: "d-next", Event: "issue_comment", At: t0, CommentID: 500, Session: next}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetSession(ctx, "s-next")
		if err != nil {
			t.Fatal(err)
		}
		conv, err := s.ConversationTurns(ctx, got)
		if err != nil || len(conv) != 5 || conv[0].SessionID != "s-turns" || conv[0].Seq != 0 || conv[4].SessionID != "s-next" {
			t.Errorf("the conversation: %+v %v", conv, err)
		}
	})
}
