package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
)

// A full window says how long until its oldest event ages out, and
// records nothing while it says so.
func TestTakeRateSlotWaitsForTheOldestEvent(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		perMinute := []store.RateLimit{{Limit: 3, Window: time.Minute}}
		for i := range 3 {
			if wait := take(t, s, "k", t0.Add(time.Duration(i)*10*time.Second), perMinute); wait != 0 {
				t.Fatalf("take %d: wait %v with room in the window", i, wait)
			}
		}
		// Events at 0s, 10s, 20s: at 30s the window is full until 60s.
		if wait := take(t, s, "k", t0.Add(30*time.Second), perMinute); wait != 30*time.Second {
			t.Fatalf("wait = %v, want 30s", wait)
		}
		// The refusal recorded nothing: one millisecond before the first
		// event ages out it is still full, and at 60s there is room.
		if wait := take(t, s, "k", t0.Add(time.Minute-time.Millisecond), perMinute); wait != time.Millisecond {
			t.Fatalf("wait = %v, want 1ms", wait)
		}
		if wait := take(t, s, "k", t0.Add(time.Minute), perMinute); wait != 0 {
			t.Fatalf("wait = %v at the first event's expiry, want 0", wait)
		}
		// Now 10s, 20s, 60s: full again until 70s.
		if wait := take(t, s, "k", t0.Add(61*time.Second), perMinute); wait != 9*time.Second {
			t.Fatalf("wait = %v, want 9s", wait)
		}
		// Other keys have their own budget.
		if wait := take(t, s, "other", t0.Add(61*time.Second), perMinute); wait != 0 {
			t.Fatalf("another key waited %v", wait)
		}
		// Without windows nothing is limited.
		if wait, err := s.TakeRateSlot(ctx, "k", at(t0.Add(61*time.Second)), nil); err != nil || wait != 0 {
			t.Fatalf("no windows: wait %v, err %v", wait, err)
		}
	})
}

// The longest full window decides: a minute window with room does not
// let an event past a full hour window.
func TestTakeRateSlotHonoursEveryWindow(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		windows := []store.RateLimit{{Limit: 2, Window: time.Minute}, {Limit: 3, Window: time.Hour}}
		for i := range 3 {
			if wait := take(t, s, "k", t0.Add(time.Duration(i)*time.Minute), windows); wait != 0 {
				t.Fatalf("take %d: wait %v", i, wait)
			}
		}
		if wait := take(t, s, "k", t0.Add(3*time.Minute), windows); wait != 57*time.Minute {
			t.Fatalf("wait = %v, want 57m (the hour window's first event)", wait)
		}
		// Two at once in a minute fill the minute window first.
		if wait := take(t, s, "m", t0, windows); wait != 0 {
			t.Fatal(wait)
		}
		if wait := take(t, s, "m", t0.Add(time.Second), windows); wait != 0 {
			t.Fatal(wait)
		}
		if wait := take(t, s, "m", t0.Add(2*time.Second), windows); wait != 58*time.Second {
			t.Fatalf("wait = %v, want 58s (the minute window)", wait)
		}
	})
}

// Takers racing on one key (as replicas would) never get more than the
// limit: the count and the insert happen under one lock.
func TestTakeRateSlotNeverGrantsPastTheLimit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		windows := []store.RateLimit{{Limit: 5, Window: time.Minute}, {Limit: 8, Window: time.Hour}}
		const takers = 24
		// Two rounds a minute apart: the first fills the minute window,
		// the second only has the hour window's remaining 3.
		for round, want := range []int{5, 3} {
			now := t0.Add(time.Duration(round) * time.Minute)
			var wg sync.WaitGroup
			var mu sync.Mutex
			granted := 0
			for range takers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					wait, err := s.TakeRateSlot(ctx, "busy", at(now), windows)
					if err != nil {
						t.Error(err)
						return
					}
					if wait == 0 {
						mu.Lock()
						granted++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if granted != want {
				t.Fatalf("round %d: granted %d of %d racing takers, want %d", round, granted, takers, want)
			}
		}
	})
}

// Events older than the longest window are dropped as new ones come in,
// so a key's rows stay near its hour's budget.
func TestTakeRateSlotPrunesOldEvents(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, dsn := openWithRaw(t, driver)
			windows := []store.RateLimit{{Limit: 100, Window: time.Minute}}
			for i := range 10 {
				take(t, s, "k", t0.Add(time.Duration(i)*time.Second), windows)
			}
			take(t, s, "other", t0, windows)
			// At 65s the events at 0s..5s are out of the minute window.
			take(t, s, "k", t0.Add(65*time.Second), windows)
			raw := openRaw(t, driver, dsn)
			var n, others int
			if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM rate_events WHERE rate_key = 'k'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM rate_events WHERE rate_key = 'other'`).Scan(&others); err != nil {
				t.Fatal(err)
			}
			if n != 5 || others != 1 {
				t.Fatalf("rows after pruning: k %d (want 5: 6s..9s and 65s), other %d (want 1, another key's)", n, others)
			}
		})
	}
}

// The slot's time is read once the key's lock is held: a taker that
// queued behind others is stamped when it is granted, not when it began to
// wait. (PostgreSQL: the key's advisory lock; SQLite: the single writer's
// lock, held from BEGIN IMMEDIATE.) The clock checks, from another
// connection, that the lock is held when it is read.
func TestTakeRateSlotReadsTheClockBehindTheLock(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, dsn := openWithRaw(t, driver)
			raw := openRaw(t, driver, dsn)
			held := func() (bool, error) {
				if driver == "postgres" {
					var n int
					err := raw.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 4242007 AND objsubid = 2`).Scan(&n)
					return n == 1, err
				}
				// Another writer cannot begin while the taker's
				// transaction holds the write lock.
				conn, err := raw.Conn(ctx)
				if err != nil {
					return false, err
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
					return false, err
				}
				if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
					return true, nil // SQLITE_BUSY: the taker holds it
				}
				_, err = conn.ExecContext(ctx, `ROLLBACK`)
				return false, err
			}
			reads := 0
			clock := func() time.Time {
				reads++
				ok, err := held()
				if err != nil {
					t.Errorf("asking whether the lock is held: %v", err)
				} else if !ok {
					t.Error("the clock was read without the key's lock held")
				}
				return t0
			}
			if wait, err := s.TakeRateSlot(ctx, "k", clock, []store.RateLimit{{Limit: 1, Window: time.Minute}}); err != nil || wait != 0 {
				t.Fatalf("take: wait %v, err %v", wait, err)
			}
			if reads != 1 {
				t.Fatalf("the clock was read %d times, want once", reads)
			}
		})
	}
}

func take(t *testing.T, s *store.Store, key string, now time.Time, windows []store.RateLimit) time.Duration {
	t.Helper()
	wait, err := s.TakeRateSlot(context.Background(), key, at(now), windows)
	if err != nil {
		t.Fatal(err)
	}
	return wait
}

// openRaw opens a second connection to a test store's database, to look
// at rows the store's API does not expose.
// openWithRaw opens a fresh store of driver and returns its DSN, for a
// raw connection beside it (openRaw).
func openWithRaw(t *testing.T, driver string) (*store.Store, string) {
	t.Helper()
	dsn := storetest.DSN(t, driver)
	s, err := store.Open(context.Background(), driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dsn
}

func openRaw(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch driver {
	case "sqlite":
		db, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(5000)")
	case "postgres":
		db, err = sql.Open("pgx", dsn)
	default:
		err = fmt.Errorf("unknown driver %q", driver)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
