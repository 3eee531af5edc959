package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
)

// Ten requests racing from two replicas on one database: reservations of
// 600 are taken only while what is used and reserved is under the budget
// of 1000, so two are, and the session can spend at most the budget plus
// one reservation; the cap on requests in flight
// holds as well, and the reservations are in the database, where a fresh
// Store (another replica, or this one restarted) sees and settles them.
func TestModelReservationsHoldAcrossReplicasAndRestarts(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			dsn := storetest.DSN(t, driver)
			open := func() *store.Store {
				s, err := store.Open(context.Background(), driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
			a, b := open(), open()
			ctx := context.Background()
			if err := a.CreateSession(ctx, newSession("r1", 0), nil, t0); err != nil {
				t.Fatal(err)
			}
			if err := a.CreateAttempt(ctx, store.Attempt{ID: "r1-a1", SessionID: "r1", Number: 1, Deadline: t0.Add(time.Hour), Spec: "{}"}, "code-r1", t0); err != nil {
				t.Fatal(err)
			}
			lim := store.ReserveLimits{Budget: 1000, MaxInFlight: 10, InFlightFor: time.Hour}
			var wg sync.WaitGroup
			results := make([]store.Reserved, 10)
			errs := make([]error, 10)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := a
					if i%2 == 1 {
						s = b
					}
					results[i], errs[i] = s.ReserveModelTokens(ctx, "r1-a1", fmt.Sprint("res-", i), 600, lim, t0)
				}()
			}
			wg.Wait()
			var taken []int
			for i, r := range results {
				if errs[i] != nil {
					t.Fatalf("reservation %d: %v", i, errs[i])
				}
				if r.Refused == "" {
					taken = append(taken, i)
				} else if r.Refused != store.ReserveBudgetHeld {
					t.Errorf("reservation %d refused as %q, want the budget held by those in flight", i, r.Refused)
				}
			}
			if len(taken) != 2 {
				t.Fatalf("reservations taken: %v, want two (600, then 1200 reaches the budget of 1000)", taken)
			}
			restarted := open()
			if tokens, n, err := restarted.ModelReservations(ctx, "r1-a1"); err != nil || tokens != 1200 || n != 2 {
				t.Fatalf("after a restart: %d tokens in %d reservations, %v", tokens, n, err)
			}
			for i, id := range taken {
				total, err := restarted.SettleModelTokens(ctx, fmt.Sprint("res-", id), store.Usage{InputTokens: 100, OutputTokens: 75, TotalTokens: 175, Requests: 1}, t0)
				if err != nil || total.TotalTokens != 175*int64(i+1) {
					t.Fatalf("settled: %+v %v", total, err)
				}
			}
			if _, err := a.SettleModelTokens(ctx, fmt.Sprint("res-", taken[0]), store.Usage{TotalTokens: 350}, t0); err != store.ErrNotFound {
				t.Errorf("settling twice: %v, want ErrNotFound", err)
			}
			// Settled for less than reserved, the budget has room again;
			// settled past it, the budget is spent.
			if r, err := a.ReserveModelTokens(ctx, "r1-a1", "again", 600, lim, t0); err != nil || r.Refused != "" {
				t.Errorf("after settling for less: %+v %v", r, err)
			}
			if _, err := a.SettleModelTokens(ctx, "again", store.Usage{TotalTokens: 700}, t0); err != nil {
				t.Fatal(err)
			}
			if r, err := b.ReserveModelTokens(ctx, "r1-a1", "past", 1, lim, t0); err != nil || r.Refused != store.ReserveBudgetSpent || r.Used.TotalTokens != 1050 {
				t.Errorf("past the budget: %+v %v, want it spent", r, err)
			}
			// Two in flight is the cap, whatever the budget has left.
			lim.Budget, lim.MaxInFlight = 0, 2
			for i, want := range []string{"", "", store.ReserveTooMany} {
				r, err := b.ReserveModelTokens(ctx, "r1-a1", fmt.Sprint("cap-", i), 10, lim, t0)
				if err != nil || r.Refused != want {
					t.Errorf("in flight %d: %+v %v, want %q", i, r, err, want)
				}
			}
			// A reservation older than InFlightFor (its replica died) frees
			// its slot but stays charged.
			later := t0.Add(2 * time.Hour)
			r, err := b.ReserveModelTokens(ctx, "r1-a1", "cap-late", 10, lim, later)
			if err != nil || r.Refused != "" || r.Reserved != 20 || r.Used.TotalTokens != 1050 {
				t.Errorf("after the stale ones: %+v %v", r, err)
			}
		})
	}
}

// The prompt-cache parts of a request's input are kept apart through a
// settled reservation (migration 15): a session's usage, and what the
// next reservation sees as used, carry them.
func TestSettledUsageKeepsItsCacheReadsAndWrites(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.CreateSession(ctx, newSession("c1", 0), nil, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateAttempt(ctx, store.Attempt{ID: "c1-a1", SessionID: "c1", Number: 1, Deadline: t0.Add(time.Hour), Spec: "{}"}, "code-c1", t0); err != nil {
			t.Fatal(err)
		}
		lim := store.ReserveLimits{Budget: 1 << 20, InFlightFor: time.Hour}
		if _, err := s.ReserveModelTokens(ctx, "c1-a1", "res-1", 60000, lim, t0); err != nil {
			t.Fatal(err)
		}
		u := store.Usage{InputTokens: 49203, OutputTokens: 250, TotalTokens: 49453, CacheReadTokens: 48000, CacheWriteTokens: 1200, Requests: 1}
		if got, err := s.SettleModelTokens(ctx, "res-1", u, t0); err != nil || got != u {
			t.Fatalf("settled: %+v %v, want %+v", got, err, u)
		}
		got, err := s.ReserveModelTokens(ctx, "c1-a1", "res-2", 100, lim, t0)
		if err != nil || got.Used != u {
			t.Fatalf("the next reservation saw %+v %v, want %+v", got.Used, err, u)
		}
		if got, err := s.AddUsage(ctx, "c1-a1", store.Usage{InputTokens: 10, CacheReadTokens: 4, TotalTokens: 10}, t0); err != nil ||
			got.CacheReadTokens != 48004 || got.CacheWriteTokens != 1200 || got.InputTokens != 49213 {
			t.Fatalf("after AddUsage: %+v %v", got, err)
		}
	})
}
