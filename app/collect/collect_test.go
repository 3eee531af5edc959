package collect

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// fakeStore holds one session and its attempts.
type fakeStore struct {
	sess     store.Session
	attempts map[string]store.Attempt
}

func (f *fakeStore) GetSession(_ context.Context, id string) (store.Session, error) {
	if id != f.sess.ID {
		return store.Session{}, store.ErrNotFound
	}
	return f.sess, nil
}

func (f *fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, store.ErrNotFound
	}
	return a, nil
}

// ended records each EndRun.
type ended struct {
	sessionID, attemptID, reason, reply string
	outcome                             session.Outcome
}

type fakeTransitions struct{ ends []ended }

func (f *fakeTransitions) EndRun(_ context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error {
	f.ends = append(f.ends, ended{sessionID, attemptID, reason, reply, outcome})
	return nil
}

// fetcher is an executor that holds results; only FetchResult is called.
type fetcher struct {
	runner.Executor
	err error
}

func (f fetcher) FetchResult(context.Context, string) ([]byte, []byte, error) { return nil, nil, f.err }

func TestCollectEndsARunThatLeftNoResultAsRunnerLost(t *testing.T) {
	const build = "https://buildkite.com/org/pipe/builds/7"
	cases := []struct {
		name      string
		executor  runner.Executor
		state     store.AttemptState
		attemptOf string // the session's attempt
		wantEnd   bool
		wantInMsg string
	}{
		{"no executor", nil, store.AttemptRunning, "a1", true, "Its log is at " + build},
		{"the executor has none", fetcher{err: runner.ErrNoResult}, store.AttemptRunning, "a1", true, "Its log is at " + build},
		{"never claimed", fetcher{err: runner.ErrNoResult}, store.AttemptStarted, "a1", true, "never reached Inspect"},
		{"too large", fetcher{err: runner.ErrResultTooLarge}, store.AttemptRunning, "a1", true, render.ResultRefusedReply("amy", "@inspect")},
		{"superseded", nil, store.AttemptRunning, "a2", false, ""},
		{"already ended", nil, store.AttemptEnded, "a1", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{
				sess:     store.Fixture(session.Running, store.Session{ID: "s1", AttemptID: c.attemptOf, RequesterLogin: "amy"}),
				attempts: map[string]store.Attempt{"a1": {ID: "a1", ExternalID: build, State: c.state}},
			}
			tr := &fakeTransitions{}
			h := &Handler{Store: st, Transitions: tr, Executor: c.executor, CommandWord: "@inspect",
				RecordResult: func(context.Context, string, contract.ResultUpload) (bool, error) {
					t.Fatal("nothing to record")
					return false, nil
				},
				Wake: func() { t.Fatal("nothing to wake for") }}
			if err := h.Collect(context.Background(), "s1", "a1", runner.AttemptState{Status: runner.StatusExited}); err != nil {
				t.Fatal(err)
			}
			if !c.wantEnd {
				if len(tr.ends) != 0 {
					t.Fatalf("ended %+v, want nothing", tr.ends)
				}
				return
			}
			if len(tr.ends) != 1 {
				t.Fatalf("ended %+v, want one end", tr.ends)
			}
			e := tr.ends[0]
			if e.sessionID != "s1" || e.attemptID != "a1" || e.outcome != session.Errored || e.reason != "runner_lost" || !strings.Contains(e.reply, c.wantInMsg) {
				t.Fatalf("ended %+v, want s1/a1 errored runner_lost saying %q", e, c.wantInMsg)
			}
		})
	}
}

func TestCollectReturnsTheExecutorsOtherErrors(t *testing.T) {
	boom := errors.New("buildkite is down")
	st := &fakeStore{
		sess:     store.Fixture(session.Running, store.Session{ID: "s1", AttemptID: "a1"}),
		attempts: map[string]store.Attempt{"a1": {ID: "a1", ExternalID: "b", State: store.AttemptRunning}},
	}
	tr := &fakeTransitions{}
	h := &Handler{Store: st, Transitions: tr, Executor: fetcher{err: boom}}
	if err := h.Collect(context.Background(), "s1", "a1", runner.AttemptState{}); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the executor's", err)
	}
	if len(tr.ends) != 0 {
		t.Fatalf("ended %+v on an error that may pass", tr.ends)
	}
}

func TestRunLinkIsTheAttemptsWebURLOnly(t *testing.T) {
	st := &fakeStore{attempts: map[string]store.Attempt{
		"web":   {ID: "web", ExternalID: "https://buildkite.com/org/pipe/builds/7", ExternalState: "running", Number: 2},
		"local": {ID: "local", ExternalID: "pid-42"},
	}}
	h := &Handler{Store: st}
	got := h.RunLink(context.Background(), store.Session{AttemptID: "web"})
	if want := (render.RunLink{URL: "https://buildkite.com/org/pipe/builds/7", State: "running", Attempt: 2}); got != want {
		t.Fatalf("link %+v, want %+v", got, want)
	}
	for _, id := range []string{"local", "missing", ""} {
		if got := h.RunLink(context.Background(), store.Session{AttemptID: id}); got != (render.RunLink{}) {
			t.Fatalf("attempt %q: link %+v, want none", id, got)
		}
	}
}
