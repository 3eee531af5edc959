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

// storedIn inserts a session in state st (done ones with an outcome) and
// returns its id.
func storedIn(t *testing.T, s *store.Store, id string, st session.State, attemptID string) {
	t.Helper()
	sess := store.Fixture(st, *newSession(id, 0))
	if st == session.Done {
		sess.Outcome = session.Cancelled
	}
	sess.AttemptID = attemptID
	if err := s.CreateSession(context.Background(), &sess, nil, t0); err != nil {
		t.Fatal(err)
	}
}

// stateOf reads a stored session's state.
func stateOf(t *testing.T, s *store.Store, id string) session.State {
	t.Helper()
	sess, err := s.GetSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.State()
}

// Every pair of states, written through the store: a change is kept
// exactly when session's table has a transition for it (or the state stays),
// and any other is refused with a TransitionError and leaves the row as it
// was.
func TestTheStoreRefusesEveryChangeOutsideTheTable(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, from := range session.States {
			for _, to := range session.States {
				id := fmt.Sprintf("%s-%s", from, to)
				storedIn(t, s, id, from, "")
				_, err := s.MutateSession(ctx, id, t0.Add(time.Second), func(x *store.Session) error {
					*x = store.Fixture(to, *x)
					if to == session.Done {
						x.Outcome = session.Cancelled // the one a done fixture has: kept
					}
					x.Detail = "written"
					return nil
				})
				_, inTable := session.Between(from, to)
				var refusal *session.TransitionError
				switch {
				case inTable || from == to:
					if err != nil {
						t.Errorf("%s → %s refused: %v", from, to, err)
					}
					if got := stateOf(t, s, id); got != to {
						t.Errorf("%s → %s stored %s", from, to, got)
					}
				case !errors.As(err, &refusal) || refusal.From != from || refusal.To != to:
					t.Errorf("%s → %s = %v, want a TransitionError", from, to, err)
				case stateOf(t, s, id) != from:
					t.Errorf("%s → %s was refused but stored %s", from, to, stateOf(t, s, id))
				}
			}
		}
	})
}

// The claim's and the result's SQL take their transition from exactly the
// states the table lists, and leave a session in any other state as it is.
func TestTheClaimAndTheResultTakeOnlyTheirTransition(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, from := range session.States {
			// The claim: the attempt is the session's current one.
			id, attempt := "claim-"+string(from), "claim-a-"+string(from)
			storedIn(t, s, id, from, "")
			if err := s.CreateAttempt(ctx, store.Attempt{ID: attempt, SessionID: id, Deadline: t0.Add(time.Hour)}, "claim-code-"+attempt, t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimAttempt(ctx, attempt, "claim-code-"+attempt, "token-"+attempt, t0); err != nil {
				t.Fatalf("claim from %s: %v", from, err)
			}
			want := from
			if session.Claim.Allows(from) {
				want = session.Running
			}
			if got := stateOf(t, s, id); got != want {
				t.Errorf("the claim from %s left %s, want %s", from, got, want)
			}

			// The result: an attempt already claimed (by no session, so the
			// claim moved nothing) that the session names as its current.
			id, attempt = "result-"+string(from), "result-a-"+string(from)
			if err := s.CreateAttempt(ctx, store.Attempt{ID: attempt, Deadline: t0.Add(time.Hour)}, "claim-code-"+attempt, t0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ClaimAttempt(ctx, attempt, "claim-code-"+attempt, "token-"+attempt, t0); err != nil {
				t.Fatal(err)
			}
			storedIn(t, s, id, from, attempt)
			if first, err := s.RecordResult(ctx, attempt, `{}`, nil, t0); err != nil || !first {
				t.Fatalf("the result from %s: %v %v", from, first, err)
			}
			want = from
			if session.Report.Allows(from) {
				want = session.Reporting
			}
			if got := stateOf(t, s, id); got != want {
				t.Errorf("the result from %s left %s, want %s", from, got, want)
			}
		}
	})
}

// A session is born queued, or done with an outcome (refused on the way
// in); the store will not insert one anywhere between.
func TestASessionIsBornQueuedOrDone(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.CreateSession(ctx, newSession("born", 1), nil, t0); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, s, "born"); got != session.Queued {
			t.Errorf("a new session is %s", got)
		}
		refused := newSession("refused", 2)
		if err := refused.End(session.Refused, "paused", "paused"); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSession(ctx, refused, nil, t0); err != nil {
			t.Fatal(err)
		}
		if got := stateOf(t, s, "refused"); got != session.Done {
			t.Errorf("a session refused at the door is %s", got)
		}
		admitted := newSession("admitted", 3)
		if err := admitted.Move(session.Admit); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSession(ctx, admitted, nil, t0); err == nil {
			t.Error("a session was born preparing")
		}
		noOutcome := newSession("no-outcome", 4)
		if err := noOutcome.End("", "", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSession(ctx, noOutcome, nil, t0); err == nil {
			t.Error("a session was born done without an outcome")
		}
	})
}

// Move and End take only the table's transitions, in memory.
func TestMoveAndEndFollowTheTable(t *testing.T) {
	var sess store.Session
	if sess.State() != session.Queued {
		t.Fatalf("a new session is %s", sess.State())
	}
	if err := sess.Move(session.Dispatch); err == nil {
		t.Error("a queued session was dispatched")
	}
	if err := sess.Move(session.End); err == nil {
		t.Error("Move ended a session without an outcome")
	}
	for _, step := range []session.Transition{session.Admit, session.Dispatch} {
		if err := sess.Move(step); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	if err := sess.End(session.Cancelled, "cancelled", "by alice"); err != nil || sess.State() != session.Done || sess.Outcome != session.Cancelled {
		t.Fatalf("end: %v, %s %s", err, sess.State(), sess.Outcome)
	}
	if err := sess.End(session.Errored, "again", ""); !errors.Is(err, session.ErrLeftDone) || sess.Outcome != session.Cancelled {
		t.Errorf("ending twice: %v, outcome %s", err, sess.Outcome)
	}
}
