package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// rateLockClass is the first key of the two-key PostgreSQL advisory lock
// a rate slot holds for its transaction; the second is a hash of the rate
// key. Locking per key, not with one lock for all as admissions do, keeps
// busy installations from queueing behind each other: slots are taken per
// outbound write, far more often than sessions are admitted. (The two-key
// space does not overlap the one-key space admissionLock lives in.)
const rateLockClass = 4242007

// RateLimit is at most Limit events in any Window (a sliding window).
type RateLimit struct {
	Limit  int
	Window time.Duration
}

// TakeRateSlot records one event for key now if every window has room,
// and returns 0; otherwise it records nothing and returns how long until
// the fullest window has room again. Replicas sharing the database share
// the budget, so a fleet makes no more events per key than one replica
// may. Windows with a non-positive limit or length are ignored (config
// refuses them).
//
// The time is read from clock once the key's lock is held, as Admit does:
// an event is then stamped no earlier than every event granted before it,
// and no earlier than the request it lets go out. (Read before waiting in
// the lock's queue, a stamp could be seconds older than the send, age out
// of the window that early, and let a fleet send more than the limit
// within one window as GitHub counts arrivals.)
func (s *Store) TakeRateSlot(ctx context.Context, key string, clock func() time.Time, windows []RateLimit) (time.Duration, error) {
	var longest time.Duration
	for _, w := range windows {
		if w.Limit > 0 && w.Window > 0 {
			longest = max(longest, w.Window)
		}
	}
	if longest == 0 {
		return 0, nil // nothing to limit, so nothing worth recording
	}
	var wait time.Duration
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgres {
			// Serialise takers of one key across replicas: without it two
			// could both count limit-1 and both insert. The lock is released
			// at commit, after the insert is visible to the next taker.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, rateLockClass, keyHash(key)); err != nil {
				return err
			}
		}
		// (SQLite: transactions begin immediate, so the single writer
		// already serialises takers.)
		at := ms(clock())
		for _, w := range windows {
			if w.Limit <= 0 || w.Window <= 0 {
				continue
			}
			since := at - w.Window.Milliseconds()
			// The window is full when it holds a limit-th newest event;
			// that event is the one that keeps it full, and room returns
			// when it ages out.
			var keeper int64
			err := tx.QueryRowContext(ctx, `SELECT at FROM rate_events WHERE rate_key = $1 AND at > $2 ORDER BY at DESC LIMIT 1 OFFSET $3`,
				key, since, w.Limit-1).Scan(&keeper)
			if errors.Is(err, sql.ErrNoRows) {
				continue // fewer than limit events: room
			}
			if err != nil {
				return fmt.Errorf("reading rate events: %w", err)
			}
			// An event at t counts while now < t+window, so it is out at
			// exactly t+window; keeper > since makes this positive.
			wait = max(wait, time.Duration(keeper+w.Window.Milliseconds()-at)*time.Millisecond)
		}
		if wait > 0 {
			return nil // full: record nothing, so waiting costs no budget
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rate_events (rate_key, at) VALUES ($1, $2)`, key, at); err != nil {
			return fmt.Errorf("recording a rate event: %w", err)
		}
		// Events older than the longest window count for nothing. Dropping
		// them on every take keeps each key's rows near its longest
		// window's limit, and costs one index range (usually a row or
		// none) under the lock already held.
		if _, err := tx.ExecContext(ctx, `DELETE FROM rate_events WHERE rate_key = $1 AND at <= $2`, key, at-longest.Milliseconds()); err != nil {
			return fmt.Errorf("pruning rate events: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return wait, nil
}

// keyHash maps a rate key to the advisory lock's second key. Collisions
// only make two keys take turns, never share a budget.
func keyHash(key string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // a hash's Write does not fail
	return int32(h.Sum32())
}
