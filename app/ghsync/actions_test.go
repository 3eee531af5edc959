package ghsync_test

import (
	"testing"

	"github.com/inspecthq/inspect/app/ghsync"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The check run offers Retry only once the session is done, and never to a
// refused one (decision 0033).
func TestCheckActionsOfferRetryOnlyWhenDoneAndNotRefused(t *testing.T) {
	done := func(o session.Outcome) store.Session {
		s := store.Fixture(session.Done, store.Session{ID: "s1"})
		s.Outcome = o
		return s
	}
	cases := []struct {
		name  string
		sess  store.Session
		retry bool
	}{
		{"running", store.Fixture(session.Running, store.Session{ID: "s1"}), false},
		{"queued", store.Fixture(session.Queued, store.Session{ID: "s1"}), false},
		{"refused", done(session.Refused), false},
		{"failed", done(session.Errored), true},
		{"changed", done(session.Changed), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ghsync.CheckActions(c.sess)
			if !c.retry {
				if len(got) != 0 {
					t.Fatalf("actions %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Identifier != ghsync.ActionRetry || got[0].Label == "" {
				t.Fatalf("actions %v, want one Retry", got)
			}
		})
	}
}
