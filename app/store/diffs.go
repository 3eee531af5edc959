package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Diff is an attempt's change as a unified patch (contract.Diff), kept on
// its own, beside the attempt's result, for the session page. The app cut
// and redacted it before it came here.
type Diff struct {
	Patch string
	// Truncated says Patch is not the whole patch.
	Truncated bool
}

func insertDiff(ctx context.Context, tx *sql.Tx, attemptID, sessionID string, d Diff, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO attempt_diffs (attempt_id, session_id, patch, truncated, created_at)
		VALUES ($1, $2, $3, $4, $5)`, attemptID, sessionID, d.Patch, b2i(d.Truncated), ms(now))
	return err
}

// AttemptDiff is the attempt's diff; ErrNotFound when it has none (it
// changed nothing, or its result has not come).
func (s *Store) AttemptDiff(ctx context.Context, attemptID string) (Diff, error) {
	var d Diff
	var truncated int
	err := s.db.QueryRowContext(ctx, `SELECT patch, truncated FROM attempt_diffs WHERE attempt_id = $1`, attemptID).Scan(&d.Patch, &truncated)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Diff{}, ErrNotFound
	case err != nil:
		return Diff{}, err
	}
	d.Truncated = truncated != 0
	return d, nil
}
