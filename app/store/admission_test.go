package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Admissions racing for one slot (as several replicas would) admit one.
func TestAdmitNeverOversubscribesACap(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const n = 8
		for i := range n {
			sess := newSession(fmt.Sprintf("s%d", i), int64(1000+i))
			sess.Number = 100 + i // each on its own thread
			if err := s.CreateSession(ctx, sess, nil, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		limits := policy.Limits{ActivePerRepo: 1}
		var wg sync.WaitGroup
		admitted := make(chan string, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("s%d", i)
				_, err := s.Admit(ctx, id, at(t0.Add(time.Second)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
					if a := policy.Admit(limits, load); !a.Admit {
						x.WaitingSince, x.WaitingScope = t0.Add(time.Second), string(a.Scope)
						return nil, nil
					}
					x.AdmittedAt = t0.Add(time.Second)
					if err := x.Move(session.Admit); err != nil {
						return nil, err
					}
					admitted <- id
					return nil, nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		close(admitted)
		var got []string
		for id := range admitted {
			got = append(got, id)
		}
		if len(got) != 1 {
			t.Fatalf("admitted %v under a cap of 1", got)
		}
		// The rest wait in creation order: the newest waiting one has every
		// other waiting session ahead of it.
		newest := "s7"
		if got[0] == newest {
			newest = "s6"
		}
		if _, err := s.Admit(ctx, newest, at(t0.Add(2*time.Second)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
			if load.ActiveRepo != 1 || load.AheadRepo != n-2 {
				t.Errorf("%s sees load %+v, want 1 active and %d ahead", newest, load, n-2)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		// The day's starts: the one admitted, and the places in the queue.
		if _, err := s.Admit(ctx, newest, at(t0.Add(3*time.Second)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
			if load.StartedRepo != n-1 || !load.OldestStart.Equal(t0.Add(time.Second)) {
				t.Errorf("day's starts = %d since %v, want %d since %v", load.StartedRepo, load.OldestStart, n-1, t0.Add(time.Second))
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Admit(ctx, newest, at(t0.Add(25*time.Hour)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
			if load.StartedRepo != n-2 || !load.OldestStart.IsZero() {
				t.Errorf("a day later: %d starts since %v, want only the %d places in the queue", load.StartedRepo, load.OldestStart, n-2)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCreateSessionOnceAndRepairHistory(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		repair := func(id string) *store.Session {
			sess := newSession(id, 0)
			sess.TriggerKind = "repair"
			return sess
		}
		created, err := s.CreateSessionOnce(ctx, []string{"repair:1:7:abc", "repair-n:1:7:1"}, repair("r1"), []store.NewWork{{Kind: store.PrepareSession}}, t0)
		if err != nil || !created {
			t.Fatalf("first: %v %v", created, err)
		}
		created, err = s.CreateSessionOnce(ctx, []string{"repair:1:7:abd", "repair-n:1:7:1"}, repair("r2"), nil, t0)
		if err != nil || created {
			t.Fatalf("a second key free, the repair number taken: %v %v", created, err)
		}
		if _, err := s.GetSession(ctx, "r2"); err == nil {
			t.Error("the duplicate's session was written")
		}
		if free, err := s.Claimed(ctx, "repair:1:7:abd"); err != nil || free {
			t.Errorf("the refused creation kept its first claim (%v, %v)", free, err)
		}
		h, err := s.PullRepairHistory(ctx, 1, 7)
		if err != nil || h.Repairs != 1 || !h.Active || !h.LastEnd.IsZero() {
			t.Fatalf("history while active = %+v %v", h, err)
		}
		if _, err := s.MutateSession(ctx, "r1", t0.Add(time.Minute), func(x *store.Session) error {
			x.CommitSHA = "fff"
			return x.End(session.Changed, "", "")
		}); err != nil {
			t.Fatal(err)
		}
		h, err = s.PullRepairHistory(ctx, 1, 7)
		if err != nil || h.Repairs != 1 || h.Active || !h.LastEnd.Equal(t0.Add(time.Minute)) {
			t.Errorf("history after = %+v %v", h, err)
		}
		if own, err := s.IsSessionCommit(ctx, 1, "fff"); err != nil || !own {
			t.Errorf("IsSessionCommit(fff) = %v %v", own, err)
		}
		if own, err := s.IsSessionCommit(ctx, 1, "eee"); err != nil || own {
			t.Errorf("IsSessionCommit(eee) = %v %v", own, err)
		}
	})
}

// A session held by its repo's cap is ahead of no one outside that repo:
// one repo that narrows its own cap does not queue its installation.
func TestWaitingCountsOnlyInTheScopeThatHoldsIt(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		held := newSession("held", 0)
		other := newSession("other", 0)
		other.RepoID, other.RequesterID = 2, 6 // another repo of the installation, another requester
		for i, sess := range []*store.Session{held, other} {
			if err := s.CreateSession(ctx, sess, nil, t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Admit(ctx, "held", at(t0.Add(time.Minute)), func(x *store.Session, _ policy.Load, _ time.Time) ([]store.NewWork, error) {
			x.WaitingSince, x.WaitingScope = t0.Add(time.Minute), string(policy.ScopeRepo)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Admit(ctx, "other", at(t0.Add(time.Minute)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
			if load.AheadInstallation != 0 || load.AheadRepo != 0 || load.AheadUser != 0 {
				t.Errorf("load = %+v: the other repo's waiting session counts as ahead", load)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		// Held by the installation's cap instead, it is ahead installation-wide.
		if _, err := s.Admit(ctx, "held", at(t0.Add(2*time.Minute)), func(x *store.Session, _ policy.Load, _ time.Time) ([]store.NewWork, error) {
			x.WaitingScope = string(policy.ScopeInstallation)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Admit(ctx, "other", at(t0.Add(2*time.Minute)), func(x *store.Session, load policy.Load, _ time.Time) ([]store.NewWork, error) {
			if load.AheadInstallation != 1 {
				t.Errorf("load = %+v, want the held session ahead in the installation", load)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUsageAddsUpOverASessionsAttempts(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.CreateSession(ctx, newSession("u1", 0), nil, t0); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"u1-a1", "u1-a2"} {
			if err := s.CreateAttempt(ctx, store.Attempt{ID: id, SessionID: "u1", Number: i + 1, Deadline: t0.Add(time.Hour), Spec: "{}"}, "code-"+id, t0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.AddUsage(ctx, "u1-a1", store.Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110, Requests: 1}, t0); err != nil {
			t.Fatal(err)
		}
		got, err := s.AddUsage(ctx, "u1-a2", store.Usage{InputTokens: 5, OutputTokens: 5, TotalTokens: 10, Requests: 1}, t0)
		want := store.Usage{InputTokens: 105, OutputTokens: 15, TotalTokens: 120, Requests: 2}
		if err != nil || got != want {
			t.Fatalf("session usage = %+v %v, want %+v", got, err, want)
		}
	})
}

// at is a clock stopped at t.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// An admission's time is read after its load: when the load saw a slot
// freed by an ending that committed meanwhile, the admission is stamped no
// earlier than that ending, so the recorded intervals (admitted_at to
// ended_at, what the fault tests and the dashboard read) never overlap
// beyond the cap that was kept. PostgreSQL only: there the ending commits
// while the admission's transaction is open, as another replica's would
// (SQLite's single writer would wait for it).
func TestAdmissionIsStampedAfterTheEndingItSaw(t *testing.T) {
	s := storetest.Open(t, "postgres")
	ctx := context.Background()
	for i, id := range []string{"y", "x"} {
		sess := newSession(id, int64(2000+i))
		sess.Number = 200 + i
		if err := s.CreateSession(ctx, sess, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.MutateSession(ctx, "y", t0, func(x *store.Session) error {
		x.AdmittedAt = t0
		return x.Move(session.Admit)
	}); err != nil {
		t.Fatal(err)
	}
	endedAt := t0.Add(500 * time.Millisecond)
	reads := 0
	clock := func() time.Time {
		reads++
		if reads == 1 {
			// Between the lock and the load, y ends on another connection.
			if _, err := s.MutateSession(ctx, "y", endedAt, func(x *store.Session) error {
				return x.End(session.NoChange, "", "")
			}); err != nil {
				t.Error(err)
			}
			return t0
		}
		return t0.Add(time.Second)
	}
	limits := policy.Limits{ActivePerRepo: 1}
	x, err := s.Admit(ctx, "x", clock, func(x *store.Session, load policy.Load, now time.Time) ([]store.NewWork, error) {
		if a := policy.Admit(limits, load); !a.Admit {
			return nil, fmt.Errorf("x was held (load %+v), though y had ended", load)
		}
		x.AdmittedAt = now
		return nil, x.Move(session.Admit)
	})
	if err != nil {
		t.Fatal(err)
	}
	y, err := s.GetSession(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	if !y.EndedAt.Equal(endedAt) {
		t.Fatalf("y ended at %v, want %v", y.EndedAt, endedAt)
	}
	if x.AdmittedAt.Before(y.EndedAt) {
		t.Errorf("x was admitted at %v, before y ended at %v: the recorded intervals overlap beyond the cap of 1", x.AdmittedAt, y.EndedAt)
	}
}
