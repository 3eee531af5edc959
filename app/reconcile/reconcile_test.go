package reconcile

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fakeStore struct {
	running  []store.Session
	overdue  []store.Session
	attempts map[string]store.Attempt
	// overdueBefore is the cutoff SessionsPastDeadline was asked with.
	overdueBefore time.Time
}

func (f *fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, store.ErrNotFound
	}
	return a, nil
}

func (f *fakeStore) SessionsRunning(context.Context, int) ([]store.Session, error) {
	return f.running, nil
}

func (f *fakeStore) SessionsPastDeadline(_ context.Context, before time.Time, _ int) ([]store.Session, error) {
	f.overdueBefore = before
	return f.overdue, nil
}

func (f *fakeStore) ReplicaAlive(context.Context, string, time.Time) (bool, error) { return true, nil }
func (f *fakeStore) PruneArtifacts(context.Context, time.Time) (int64, error)      { return 0, nil }
func (f *fakeStore) PruneOutput(context.Context, time.Time) (int64, error)         { return 0, nil }

// fakeFleet says which ticks are due, and records which were asked.
type fakeFleet struct {
	due   map[string]bool
	asked []string
}

func (f *fakeFleet) Due(_ context.Context, name string, _ time.Duration) bool {
	f.asked = append(f.asked, name)
	return f.due[name]
}

func (f *fakeFleet) MayJudgeReplicas(time.Time) bool { return true }

type end struct {
	sessionID, attemptID, reason, reply string
	outcome                             session.Outcome
}

type fakeTransitions struct {
	ends     []end
	requeued []store.Session
}

func (f *fakeTransitions) EndRun(_ context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error {
	f.ends = append(f.ends, end{sessionID, attemptID, reason, reply, outcome})
	return nil
}

func (f *fakeTransitions) Requeue(_ context.Context, sessionID, _ string, count func(*store.Session)) (bool, error) {
	sess := store.Session{ID: sessionID}
	count(&sess)
	f.requeued = append(f.requeued, sess)
	return true, nil
}

// lostExecutor reports every run lost; only State is called.
type lostExecutor struct {
	runner.Executor
	asked []string
}

func (e *lostExecutor) State(_ context.Context, externalID string) (runner.AttemptState, error) {
	e.asked = append(e.asked, externalID)
	return runner.AttemptState{Status: runner.StatusLost}, nil
}

// reconciler is a Reconciler over fakes whose engine funcs fail the test
// unless a case sets them.
func reconciler(t *testing.T, st *fakeStore, fl *fakeFleet, tr *fakeTransitions) *Reconciler {
	return &Reconciler{
		Store: st, Fleet: fl, Transitions: tr, Now: func() time.Time { return now },
		Installation: func(context.Context, int64) (*github.Client, error) {
			t.Fatal("GitHub asked while no target tick is due")
			return nil, nil
		},
		QueueSnapshotBuilds:    func(context.Context) error { return nil },
		ForeignLocalAttempt:    func(store.Attempt) bool { return false },
		ReplaceDeadHostAttempt: func(context.Context, store.Session, store.Attempt) error { t.Fatal("no replica is dead"); return nil },
		AdoptRun: func(context.Context, store.Attempt) (bool, error) {
			t.Fatal("every start is recorded")
			return false, nil
		},
		Collect: func(context.Context, string, string, runner.AttemptState) error {
			t.Fatal("no run exited")
			return nil
		},
		StopAttempt: func(context.Context, string) {}, Wake: func() {},
	}
}

func TestRunEndsSessionsPastTheirDeadlineAndGraceTimedOut(t *testing.T) {
	st := &fakeStore{overdue: []store.Session{{ID: "s1", AttemptID: "a1", RequesterLogin: "amy"}, {ID: "s2", AttemptID: "a2", RequesterLogin: "bo"}}}
	tr := &fakeTransitions{}
	r := reconciler(t, st, &fakeFleet{}, tr)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := now.Add(-deadlineGrace); !st.overdueBefore.Equal(want) {
		t.Fatalf("asked for sessions past %v, want the deadline's grace (%v)", st.overdueBefore, want)
	}
	want := []end{
		{"s1", "a1", "timed_out", render.TimedOutReply("amy"), session.TimedOut},
		{"s2", "a2", "timed_out", render.TimedOutReply("bo"), session.TimedOut},
	}
	if !slices.Equal(tr.ends, want) {
		t.Fatalf("ended %+v, want %+v", tr.ends, want)
	}
}

func TestAttemptsAreAskedEveryPollOrOncePerFleet(t *testing.T) {
	cases := []struct {
		name         string
		oncePerFleet bool
		due          bool
		asked        bool
	}{
		{"local, every poll", false, false, true},
		{"buildkite, tick not due", true, false, false},
		{"buildkite, tick due", true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{
				running:  []store.Session{{ID: "s1", AttemptID: "a1", Redispatches: 1}},
				attempts: map[string]store.Attempt{"a1": {ID: "a1", ExternalID: "b1", State: store.AttemptRunning}},
			}
			fl := &fakeFleet{due: map[string]bool{"reconcile_attempts": c.due}}
			ex := &lostExecutor{}
			r := reconciler(t, st, fl, &fakeTransitions{})
			r.Executor, r.AttemptsOncePerFleet = ex, c.oncePerFleet
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(ex.asked) > 0; got != c.asked {
				t.Fatalf("executor asked %v, want asked %v", ex.asked, c.asked)
			}
			if slices.Contains(fl.asked, "reconcile_attempts") != c.oncePerFleet {
				t.Fatalf("fleet asked %v; the attempts' tick asked only once per fleet", fl.asked)
			}
		})
	}
}

func TestRedispatchOnceAndOnlyWhileTheDeadlineAllows(t *testing.T) {
	cases := []struct {
		name         string
		redispatches int
		left         time.Duration
		requeued     bool
	}{
		{"first loss, time left", 0, MinRedispatchTime, true},
		{"second loss", 1, time.Hour, false},
		{"too close to the deadline", 0, MinRedispatchTime - time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := &fakeTransitions{}
			var stopped []string
			woken := 0
			r := reconciler(t, &fakeStore{}, &fakeFleet{}, tr)
			r.StopAttempt = func(_ context.Context, id string) { stopped = append(stopped, id) }
			r.Wake = func() { woken++ }
			sess := store.Session{ID: "s1", AttemptID: "a1", Redispatches: c.redispatches, Deadline: now.Add(c.left)}
			if err := r.Redispatch(context.Background(), sess, store.Attempt{ID: "a1"}); err != nil {
				t.Fatal(err)
			}
			if !c.requeued {
				if len(tr.requeued) != 0 || len(stopped) != 0 || woken != 0 {
					t.Fatalf("requeued %+v, stopped %v, woke %d; want nothing", tr.requeued, stopped, woken)
				}
				return
			}
			if len(tr.requeued) != 1 || tr.requeued[0].Redispatches != 1 || !slices.Equal(stopped, []string{"a1"}) || woken != 1 {
				t.Fatalf("requeued %+v, stopped %v, woke %d; want one requeue counted, a1 stopped, one wake", tr.requeued, stopped, woken)
			}
		})
	}
}
