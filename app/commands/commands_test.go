package commands

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// fakeStore lists the thread's sessions, newest first, as the store does.
type fakeStore struct {
	sessions []store.Session
	attempts map[string]store.Attempt
}

func (f *fakeStore) GetSession(context.Context, string) (store.Session, error) {
	return store.Session{}, store.ErrNotFound
}

func (f *fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, store.ErrNotFound
	}
	return a, nil
}

func (f *fakeStore) SessionsForTarget(_ context.Context, _ int64, _ int, limit int) ([]store.Session, error) {
	// A fresh slice each time, as the store's: the handler filters it in place.
	return slices.Clone(f.sessions[:min(limit, len(f.sessions))]), nil
}

func (f *fakeStore) MutateSession(context.Context, string, time.Time, func(*store.Session) error, ...store.NewWork) (store.Session, error) {
	panic("not written by these tests")
}

func (f *fakeStore) CreateSessionOnce(context.Context, []string, *store.Session, []store.NewWork, time.Time) (bool, error) {
	panic("not written by these tests")
}

func ids(sessions []store.Session) []string {
	var out []string
	for _, s := range sessions {
		out = append(out, s.ID)
	}
	return out
}

func TestCancellableIsWhatTheTriggerMayStop(t *testing.T) {
	accepted := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	label := store.TriggerInfo{Label: "inspect"}.Encode()
	st := &fakeStore{sessions: []store.Session{
		{ID: "later-label", TriggerInfo: label, CreatedAt: accepted.Add(time.Second)},
		{ID: "label", TriggerInfo: label, CreatedAt: accepted.Add(-time.Minute)},
		{ID: "branch", TriggerInfo: store.TriggerInfo{Branch: "main"}.Encode()},
		{ID: "comment", CreatedAt: accepted.Add(-time.Hour)},
	}}
	cases := []struct {
		name string
		t    session.Trigger
		want []string
	}{
		{"a comment: every session on the thread", session.Trigger{Kind: session.KindComment, Number: 0}, []string{"later-label", "label", "comment"}},
		{"a button: its own session", session.Trigger{Kind: session.KindCheckAction, SessionID: "label"}, []string{"label"}},
		{"a label taken off: what it started before", session.Trigger{Kind: session.KindUnlabel, Label: "INSPECT", AcceptedAt: accepted}, []string{"label"}},
		{"a branch's button: that branch's sessions", session.Trigger{Kind: session.KindCheckAction, SessionID: "branch", Branch: "main"}, []string{"branch"}},
	}
	h := &Handler{Store: st}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := h.cancellable(context.Background(), c.t)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), c.want) {
				t.Fatalf("cancellable %v, want %v", ids(got), c.want)
			}
		})
	}
}

// Status lists the thread's sessions, with a running one's progress, and
// leaves out those nobody asked for; it costs no permission lookup.
func TestStatusListsWhatWasAskedForWithoutARole(t *testing.T) {
	running := store.Fixture(session.Running, store.Session{ID: "run", AttemptID: "a1"})
	st := &fakeStore{
		sessions: []store.Session{running, {ID: "unasked", Reason: "not_a_trigger"}, {ID: "done", Reason: "changed"}},
		attempts: map[string]store.Attempt{"a1": {ID: "a1", Progress: "running the tests"}},
	}
	h := &Handler{
		Store: st, UnaskedReasons: []string{"not_a_trigger"}, ForkPRAllowed: func(string) bool { return false },
		ThreadFacts: func(context.Context, *github.Client, session.Trigger) (policy.Target, policy.Role, error) {
			t.Fatal("status read the target and the sender's role")
			return policy.Target{}, "", nil
		},
	}
	tr := session.Trigger{Kind: session.KindComment, Command: policy.Parsed{Sub: policy.Status}}
	if _, err := h.commandFacts(context.Background(), nil, tr); err != nil {
		t.Fatal(err)
	}
	var replies []string
	if err := h.status(context.Background(), tr, func(body string) error { replies = append(replies, body); return nil }); err != nil {
		t.Fatal(err)
	}
	want := render.StatusListing([]render.StatusRow{{Session: running, Progress: "running the tests"}, {Session: st.sessions[2]}})
	if len(replies) != 1 || replies[0] != want {
		t.Fatalf("replies %q, want one:\n%s", replies, want)
	}
}
