package transition_test

import (
	"context"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/transition"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// fixture is a Writer over a fresh SQLite store holding one session in
// state st on attempt "a1", and the attempts it was asked to stop.
type fixture struct {
	w       *transition.Writer
	store   *store.Store
	stopped []string
	woken   int
}

func newFixture(t *testing.T, st session.State) *fixture {
	t.Helper()
	f := &fixture{store: storetest.OpenMigrated(t, "sqlite")}
	f.w = &transition.Writer{
		Store: f.store, Now: func() time.Time { return t0 },
		StopAttempt: func(_ context.Context, id string) { f.stopped = append(f.stopped, id) },
		Wake:        func() { f.woken++ },
	}
	sess := store.Fixture(st, store.Session{
		ID: "s1", RepoID: 1, RepoOwner: "o", RepoName: "r", InstallationID: 9, Number: 7, IsPR: true,
		TriggerKind: session.KindComment, DeliveryID: "d-s1", RequesterLogin: "alice", RequesterID: 5,
		RequesterType: "User", Instructions: "fix it", AttemptID: "a1",
	})
	if st == session.Done {
		sess.Outcome = session.Cancelled
	}
	if err := f.store.CreateSession(context.Background(), &sess, nil, t0); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) session(t *testing.T) store.Session {
	t.Helper()
	sess, err := f.store.GetSession(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// queued claims every ready work item and returns their kinds in order.
func (f *fixture) queued(t *testing.T) []store.WorkKind {
	t.Helper()
	var kinds []store.WorkKind
	for {
		w, err := f.store.Claim(context.Background(), "test", t0.Add(time.Hour), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if w == nil {
			return kinds
		}
		kinds = append(kinds, w.Kind)
	}
}

func TestEndQueuesOneSyncAndLeavesADoneSessionAlone(t *testing.T) {
	f := newFixture(t, session.Running)
	ctx := context.Background()
	if err := f.w.End(ctx, "s1", session.Errored, "config_invalid", "the reply"); err != nil {
		t.Fatal(err)
	}
	got := f.session(t)
	if got.State() != session.Done || got.Outcome != session.Errored || got.Reason != "config_invalid" || got.Detail != "the reply" {
		t.Fatalf("ended: state %s outcome %s reason %q detail %q", got.State(), got.Outcome, got.Reason, got.Detail)
	}
	if err := f.w.End(ctx, "s1", session.Cancelled, "cancelled", "later"); err != nil {
		t.Fatalf("ending a done session: %v, want nothing done quietly", err)
	}
	if again := f.session(t); again.Outcome != session.Errored || again.Detail != "the reply" {
		t.Fatalf("a done session changed: outcome %s detail %q", again.Outcome, again.Detail)
	}
	if q := f.queued(t); len(q) != 1 || q[0] != store.SyncSession {
		t.Fatalf("queued %v, want one sync", q)
	}
	if len(f.stopped) != 0 {
		t.Fatalf("End stopped %v; only EndRun and GiveUp stop attempts", f.stopped)
	}
}

func TestEndRunStopsOnlyTheLiveAttempt(t *testing.T) {
	f := newFixture(t, session.Running)
	ctx := context.Background()
	if err := f.w.EndRun(ctx, "s1", "a0", session.TimedOut, "timed_out", "late"); err != nil {
		t.Fatal(err)
	}
	if f.session(t).State() != session.Running || len(f.stopped) != 0 {
		t.Fatalf("a stale attempt's end: state %s, stopped %v; want running, none", f.session(t).State(), f.stopped)
	}
	if err := f.w.EndRun(ctx, "s1", "a1", session.TimedOut, "timed_out", "late"); err != nil {
		t.Fatal(err)
	}
	if got := f.session(t); got.State() != session.Done || got.Outcome != session.TimedOut {
		t.Fatalf("the live attempt's end: state %s outcome %s", got.State(), got.Outcome)
	}
	if len(f.stopped) != 1 || f.stopped[0] != "a1" {
		t.Fatalf("stopped %v, want [a1]", f.stopped)
	}
}

func TestGiveUpEndsInErrorSavingASyncsOwnSession(t *testing.T) {
	cases := []struct {
		name       string
		kind       store.WorkKind
		refusal    *ghclient.Refusal
		wantState  session.State
		wantReason string
	}{
		{"a failing sync retries on its own", store.SyncSession, nil, session.Running, ""},
		{"a step that kept failing", store.ReportSession, nil, session.Done, "internal_error"},
		{"a step GitHub refused", store.ReportSession, &ghclient.Refusal{Service: "GitHub", Status: 403, Message: "no"}, session.Done, "api_refused"},
		{"preparing a session never admitted", store.PrepareSession, nil, session.Done, "internal_error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, session.Running)
			f.w.GiveUp(context.Background(), &store.Work{Kind: c.kind, SessionID: "s1"}, c.refusal)
			got := f.session(t)
			if got.State() != c.wantState || got.Reason != c.wantReason {
				t.Fatalf("state %s reason %q, want %s %q", got.State(), got.Reason, c.wantState, c.wantReason)
			}
			if c.wantState == session.Done && (len(f.stopped) != 1 || f.stopped[0] != "a1" || got.Detail == "") {
				t.Fatalf("stopped %v, detail %q: want a1 stopped and a reply", f.stopped, got.Detail)
			}
		})
	}
}

// A prepare item that fails for good after admission failed to announce the
// session (decision 0048): the session, dispatched or running, runs on.
func TestGiveUpLeavesAnAdmittedSessionToRun(t *testing.T) {
	f := newFixture(t, session.Running)
	if _, err := f.store.MutateSession(context.Background(), "s1", t0, func(x *store.Session) error {
		x.AdmittedAt = t0
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.w.GiveUp(context.Background(), &store.Work{Kind: store.PrepareSession, SessionID: "s1"}, &ghclient.Refusal{Service: "GitHub", Status: 410, Message: "gone"})
	if got := f.session(t); got.State() != session.Running || got.Reason != "" || len(f.stopped) != 0 {
		t.Fatalf("state %s reason %q stopped %v: the admitted session must run on", got.State(), got.Reason, f.stopped)
	}
	// The same failure of another step still ends it.
	f.w.GiveUp(context.Background(), &store.Work{Kind: store.ReportSession, SessionID: "s1"}, nil)
	if got := f.session(t); got.State() != session.Done {
		t.Fatalf("state %s after a report that failed for good", got.State())
	}
}

func TestRequeueOnlyTheCurrentRunningAttempt(t *testing.T) {
	f := newFixture(t, session.Running)
	ctx := context.Background()
	count := func(x *store.Session) { x.Redispatches++ }
	if did, err := f.w.Requeue(ctx, "s1", "a0", count); err != nil || did {
		t.Fatalf("requeue of a stale attempt: %t, %v; want not done", did, err)
	}
	did, err := f.w.Requeue(ctx, "s1", "a1", count)
	if err != nil || !did {
		t.Fatalf("requeue of the live attempt: %t, %v", did, err)
	}
	if got := f.session(t); got.State() != session.Preparing || got.Redispatches != 1 {
		t.Fatalf("requeued: state %s redispatches %d", got.State(), got.Redispatches)
	}
	if q := f.queued(t); len(q) != 2 || q[0] != store.SyncSession || q[1] != store.DispatchSession {
		t.Fatalf("queued %v, want a sync and a dispatch", q)
	}
}

func TestEndForBudgetStopsAndWakes(t *testing.T) {
	f := newFixture(t, session.Running)
	f.w.EndForBudget(context.Background(), store.Attempt{ID: "a1", SessionID: "s1"}, store.Usage{TotalTokens: 1200}, 1000)
	if got := f.session(t); got.State() != session.Done || got.Reason != "token_budget" {
		t.Fatalf("state %s reason %q", got.State(), got.Reason)
	}
	if len(f.stopped) != 1 || f.woken != 1 {
		t.Fatalf("stopped %v, woken %d; want one of each", f.stopped, f.woken)
	}
}
