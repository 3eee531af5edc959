package store

import (
	"context"
	"time"
)

// The counts /metrics reads at each scrape (app/metrics.StoreCollector).
// Each is one grouped query; the sessions' is the only one over a growing
// table, and groups on its columns alone (decision 0036).

// SessionCount is the number of sessions in one state, outcome and trigger.
type SessionCount struct {
	State, Outcome, Trigger string
	N                       int
}

// SessionCounts counts the sessions by state, outcome and trigger kind.
func (s *Store) SessionCounts(ctx context.Context) ([]SessionCount, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT state, outcome, trigger_kind, COUNT(*) FROM sessions GROUP BY state, outcome, trigger_kind`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SessionCount
	for rows.Next() {
		var c SessionCount
		if err := rows.Scan(&c.State, &c.Outcome, &c.Trigger, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// SandboxesRunning counts the attempts that hold a sandbox, by kind: the
// sessions dispatched or running (their supervisor started or claimed),
// and the snapshot builds under way (their lease not run out, here or on
// an executor). Both read indexed or small tables.
func (s *Store) SandboxesRunning(ctx context.Context, now time.Time) (map[string]int, error) {
	out := map[string]int{}
	var sessions, snapshots int
	if err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE state IN ('dispatched', 'running')`).Scan(&sessions); err != nil {
		return nil, err
	}
	if err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM snapshot_repos WHERE building_until > $1`, ms(now)).Scan(&snapshots); err != nil {
		return nil, err
	}
	out["session"], out["snapshot"] = sessions, snapshots
	return out, nil
}

// SnapshotBuilt is when a repository's newest snapshot was built.
type SnapshotBuilt struct {
	Repo    string
	BuiltAt time.Time
}

// SnapshotsBuilt lists the repositories with a snapshot, and when it was
// built.
func (s *Store) SnapshotsBuilt(ctx context.Context) ([]SnapshotBuilt, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT full_name, last_built_at FROM snapshot_repos WHERE last_digest <> '' ORDER BY full_name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SnapshotBuilt
	for rows.Next() {
		var b SnapshotBuilt
		var at int64
		if err := rows.Scan(&b.Repo, &at); err != nil {
			return nil, err
		}
		b.BuiltAt = fromMS(at)
		out = append(out, b)
	}
	return out, rows.Err()
}
