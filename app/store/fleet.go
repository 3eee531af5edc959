package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A fleet is the replicas sharing one database. What they must agree on
// lives here: who is alive (heartbeats), which periodic job runs when
// (ticks), and how often a webhook delivery was asked for again.

// Heartbeat records that replica is alive at now. The first beat of a
// replica records when it started.
func (s *Store) Heartbeat(ctx context.Context, replica string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO replicas (name, started_at, seen_at) VALUES ($1, $2, $2)
		ON CONFLICT (name) DO UPDATE SET seen_at = excluded.seen_at`, replica, ms(now))
	if err != nil {
		return fmt.Errorf("recording the heartbeat: %w", err)
	}
	return nil
}

// Leave removes a replica that stopped cleanly, so nobody waits out its
// timeout to know it is gone.
func (s *Store) Leave(ctx context.Context, replica string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM replicas WHERE name = $1`, replica)
	return err
}

// ReplicaAlive reports whether replica beat after since. A replica with no
// row has left or never was: not alive.
func (s *Store) ReplicaAlive(ctx context.Context, replica string, since time.Time) (bool, error) {
	var seen int64
	err := s.db.QueryRowContext(ctx, `SELECT seen_at FROM replicas WHERE name = $1`, replica).Scan(&seen)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return seen > ms(since), nil
}

// LiveReplicas counts the replicas that beat after since: the fleet's
// size, of which each replica takes its share of what GitHub counts across
// all of them (github.outbound.max_concurrent).
func (s *Store) LiveReplicas(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM replicas WHERE seen_at > $1`, ms(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the live replicas: %w", err)
	}
	return n, nil
}

// PruneReplicas forgets replicas not seen since before: their attempts have
// been dealt with by then, and the table stays the size of the fleet.
func (s *Store) PruneReplicas(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM replicas WHERE seen_at < $1`, ms(before))
	return err
}

// ClaimTick reports whether the periodic job name is due at now, and if so
// makes it due again only after every: of the replicas asking, exactly one
// gets true per interval. The first ask ever is due (start-up).
func (s *Store) ClaimTick(ctx context.Context, name, owner string, now time.Time, every time.Duration) (bool, error) {
	// Read first: most asks find the job not due, and a read costs no
	// write (SQLite syncs every write transaction).
	var due int64
	switch err := s.reader.QueryRowContext(ctx, `SELECT due_at FROM ticks WHERE name = $1`, name).Scan(&due); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, fmt.Errorf("reading tick %s: %w", name, err)
	case due > ms(now):
		return false, nil
	}
	next := now.Add(every)
	res, err := s.db.ExecContext(ctx, `UPDATE ticks SET due_at = $2, owner = $3 WHERE name = $1 AND due_at <= $4`,
		name, ms(next), owner, ms(now))
	if err != nil {
		return false, fmt.Errorf("claiming tick %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	// No row, or not due. Inserting tells them apart: only the first
	// replica to insert runs it.
	res, err = s.db.ExecContext(ctx, `INSERT INTO ticks (name, due_at, owner) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		name, ms(next), owner)
	if err != nil {
		return false, fmt.Errorf("claiming tick %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// DeliveryKnown reports whether a delivery with that id was accepted.
func (s *Store) DeliveryKnown(ctx context.Context, deliveryID string) (bool, error) {
	var one int
	err := s.reader.QueryRowContext(ctx, `SELECT 1 FROM deliveries WHERE delivery_id = $1`, deliveryID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Redeliveries says how often a redelivery of guid was asked for.
func (s *Store) Redeliveries(ctx context.Context, guid string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT requests FROM redeliveries WHERE guid = $1`, guid).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// RecordRedelivery counts one more redelivery asked for guid.
func (s *Store) RecordRedelivery(ctx context.Context, guid string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO redeliveries (guid, requests, last_at) VALUES ($1, 1, $2)
		ON CONFLICT (guid) DO UPDATE SET requests = redeliveries.requests + 1, last_at = excluded.last_at`, guid, ms(now))
	return err
}

// PruneRedeliveries forgets GUIDs last asked for before: GitHub keeps
// deliveries for three days, so older ones cannot come back.
func (s *Store) PruneRedeliveries(ctx context.Context, before time.Time) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM redeliveries WHERE last_at < $1`, ms(before))
	return err
}
