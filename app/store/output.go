package store

import (
	"context"
	"database/sql"
	"time"
)

// OutputChunk is a batch of a running attempt's output, as the supervisor
// sent it (contract.OutputChunk, redacted there), with the store's id,
// which orders a session's chunks across its attempts.
type OutputChunk struct {
	ID        int64
	SessionID string
	AttemptID string
	Seq       int64
	Phase     string
	Command   string
	Text      string
	CreatedAt time.Time
}

// AppendOutput stores c unless the attempt's chunk c.Seq is stored
// already (a retried POST), then drops the attempt's oldest chunks until
// what is left holds at most keep bytes, the newest chunk always kept. It
// reports whether c was new.
func (s *Store) AppendOutput(ctx context.Context, c OutputChunk, keep int64) (bool, error) {
	added := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO live_output (session_id, attempt_id, seq, phase, command, text, size, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
			c.SessionID, c.AttemptID, c.Seq, c.Phase, c.Command, c.Text, int64(len(c.Text)), ms(c.CreatedAt))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		added = true
		cut, err := outputCut(ctx, tx, c.AttemptID, keep)
		if err != nil || cut == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM live_output WHERE attempt_id = $1 AND id <= $2`, c.AttemptID, cut)
		return err
	})
	return added, err
}

// outputCut is the id of the newest chunk of the attempt that falls
// outside its last keep bytes, or 0 when all fit.
func outputCut(ctx context.Context, tx *sql.Tx, attemptID string, keep int64) (int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, size FROM live_output WHERE attempt_id = $1 ORDER BY id DESC`, attemptID)
	if err != nil {
		return 0, err
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err reports what matters
	var held int64
	first := true
	for rows.Next() {
		var id, size int64
		if err := rows.Scan(&id, &size); err != nil {
			return 0, err
		}
		held += size
		if held > keep && !first {
			return id, rows.Close()
		}
		first = false
	}
	return 0, rows.Err()
}

// OutputAfter is up to limit of the session's chunks with ids above
// afterID, oldest first.
func (s *Store) OutputAfter(ctx context.Context, sessionID string, afterID int64, limit int) ([]OutputChunk, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, session_id, attempt_id, seq, phase, command, text, created_at
		FROM live_output WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3`, sessionID, afterID, limit)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err reports what matters
	var out []OutputChunk
	for rows.Next() {
		var c OutputChunk
		var created int64
		if err := rows.Scan(&c.ID, &c.SessionID, &c.AttemptID, &c.Seq, &c.Phase, &c.Command, &c.Text, &created); err != nil {
			return nil, err
		}
		c.CreatedAt = fromMS(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

// PruneOutput deletes the live output stored before cutoff and says how
// many chunks went.
func (s *Store) PruneOutput(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM live_output WHERE created_at < $1`, ms(cutoff))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
