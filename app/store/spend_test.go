package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// admitted creates a session of repo in installation 9, admitted at,
// with one attempt of model, and returns the attempt's id.
func admitted(t *testing.T, s *store.Store, id string, repo int64, at time.Time, model string) string {
	t.Helper()
	ctx := context.Background()
	sess := newSession(id, 0)
	sess.RepoID = repo
	if err := s.CreateSession(ctx, sess, nil, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, id, func() time.Time { return at }, func(x *store.Session, _ policy.Load, now time.Time) ([]store.NewWork, error) {
		x.AdmittedAt = now
		return nil, x.Move(session.Admit)
	}); err != nil {
		t.Fatal(err)
	}
	attempt := id + "-a1"
	if err := s.CreateAttempt(ctx, store.Attempt{ID: attempt, SessionID: id, Number: 1, Deadline: at.Add(time.Hour), Spec: "{}", Model: model}, "code-"+id, at); err != nil {
		t.Fatal(err)
	}
	return attempt
}

// A day's spend is the usage of the sessions the installation admitted
// in the window, by session and model, each with its repository; an
// older session, another installation's and one that used nothing are
// not in it. Reservations weigh it: once the repository's spend reaches
// the money budget, its session's next request is refused money_spent,
// naming the spend, while another repository's session goes on.
func TestDaySpendAndTheMoneyBudgetAtTheProxy(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := t0.Add(48 * time.Hour)
		old := admitted(t, s, "old", 1, now.Add(-25*time.Hour), "m")
		a1 := admitted(t, s, "s1", 1, now.Add(-3*time.Hour), "m")
		a2 := admitted(t, s, "s2", 2, now.Add(-2*time.Hour), "m")
		admitted(t, s, "idle", 1, now.Add(-time.Hour), "m")
		other := newSession("other-inst", 0)
		other.InstallationID = 10
		if err := s.CreateSession(ctx, other, nil, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		for attempt, tokens := range map[string]int64{old: 9_000_000, a1: 4_000_000, a2: 1_000_000} {
			if _, err := s.AddUsage(ctx, attempt, store.Usage{InputTokens: tokens, TotalTokens: tokens, Requests: 1}, now.Add(-30*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}

		spends, err := s.DaySpend(ctx, 9, now.Add(-24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, sp := range spends {
			got += fmt.Sprintf("%s repo %d at -%s %s %d; ", sp.SessionID, sp.RepoID, now.Sub(sp.AdmittedAt), sp.Model, sp.Usage.TotalTokens)
		}
		if want := "s1 repo 1 at -3h0m0s m 4000000; s2 repo 2 at -2h0m0s m 1000000; "; got != want {
			t.Fatalf("day's spend = %q, want %q", got, want)
		}

		// $1 a million tokens; the repository may spend $4 a day.
		money := func(repoID int64, spends []store.SessionSpend, now time.Time) policy.Decision {
			var ps []policy.Spend
			for _, sp := range spends {
				ps = append(ps, policy.Spend{RepoID: sp.RepoID, StartedAt: sp.AdmittedAt, USD: float64(sp.Usage.TotalTokens) / 1e6})
			}
			return policy.MoneyBudget(policy.Limits{DailyMoneyPerRepo: 4}, repoID, ps, now, "")
		}
		lim := store.ReserveLimits{MaxInFlight: 10, InFlightFor: time.Hour, Money: money}
		r, err := s.ReserveModelTokens(ctx, a1, "res-1", 100, lim, now)
		if err != nil {
			t.Fatal(err)
		}
		if r.Refused != store.ReserveMoneySpent || r.Money.MoneyScope != policy.ScopeRepo || r.Money.Spent != 4 || r.Money.MoneyCap != 4 ||
			!r.Money.NextSlot.Equal(now.Add(21*time.Hour)) {
			t.Errorf("repo 1 at its budget: %+v", r)
		}
		if r, err := s.ReserveModelTokens(ctx, a2, "res-2", 100, lim, now); err != nil || r.Refused != "" {
			t.Errorf("repo 2 under its budget: %+v %v", r, err)
		}
		// Without a money budget nothing of it is weighed.
		lim.Money = nil
		if r, err := s.ReserveModelTokens(ctx, a1, "res-3", 100, lim, now); err != nil || r.Refused != "" {
			t.Errorf("no money budget: %+v %v", r, err)
		}
	})
}
