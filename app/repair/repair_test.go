package repair

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/session"
)

// fakeStore answers the store-only exits: which (PR, commit) repairs are
// claimed, and each pull request's history.
type fakeStore struct {
	claimed map[string]bool
	history map[int]store.RepairHistory
}

func (f *fakeStore) Claimed(_ context.Context, key string) (bool, error) { return f.claimed[key], nil }

func (f *fakeStore) PullRepairHistory(_ context.Context, _ int64, number int) (store.RepairHistory, error) {
	return f.history[number], nil
}

func (f *fakeStore) IsSessionCommit(context.Context, int64, string) (bool, error) { return false, nil }

func (f *fakeStore) CreateSessionOnce(context.Context, []string, *store.Session, []store.NewWork, time.Time) (bool, error) {
	return false, errors.New("no session is created without GitHub's facts")
}

// waited is the error the fake Postpone returns.
type waited struct {
	after time.Duration
	why   string
}

func (w *waited) Error() string { return w.why }

// The store-only exits answer without GitHub: every failing check of a
// commit queues its own item, and waiting must not cost the rate limit.
func TestRepairDecidesFromTheStoreAloneWithoutAskingGitHub(t *testing.T) {
	const sha = "abc123"
	cases := []struct {
		name    string
		paused  bool
		claimed bool
		history store.RepairHistory
		wait    time.Duration // 0: no wait, the item is done
	}{
		{"paused", true, false, store.RepairHistory{Active: true}, 0},
		{"this commit's repair exists", false, true, store.RepairHistory{Active: true}, 0},
		{"the server's budget is spent", false, false, store.RepairHistory{Repairs: 3, Active: true}, 0},
		{"a session is active on the PR", false, false, store.RepairHistory{Active: true}, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{
				claimed: map[string]bool{repairKey(7, 12, sha): c.claimed},
				history: map[int]store.RepairHistory{12: c.history},
			}
			h := &Handler{
				Store: st, Paused: c.paused, Settings: config.Repair{MaxSessionsPerPR: 3, Debounce: time.Minute},
				PollInterval: time.Minute, Now: time.Now,
				Installation: func(context.Context, int64) (*github.Client, error) {
					t.Fatal("GitHub asked")
					return nil, nil
				},
				Postpone: func(after time.Duration, why string) error { return &waited{after, why} },
			}
			payload, err := json.Marshal(session.CheckFailure{
				Repo: session.Repo{ID: 7, Owner: "o", Name: "r"}, HeadSHA: sha, Name: "test",
				PullRequests: []session.PullRef{{Number: 12, HeadSHA: sha}},
			})
			if err != nil {
				t.Fatal(err)
			}
			err = h.Handle(context.Background(), &store.Work{Payload: string(payload)})
			var w *waited
			switch {
			case c.wait == 0 && err != nil:
				t.Fatalf("err %v, want the item done", err)
			case c.wait != 0 && (!errors.As(err, &w) || w.after != c.wait):
				t.Fatalf("err %v, want a wait of %v (five polls, over the debounce)", err, c.wait)
			}
		})
	}
}
