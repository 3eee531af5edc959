package store

import (
	"context"
	"time"
)

// Usage is what the model proxy counted: tokens as the provider reported
// them, and the requests relayed.
type Usage struct {
	InputTokens, OutputTokens, TotalTokens int64
	Requests                               int64
}

// AddUsage adds one relayed request's counts to an attempt and returns its
// session's total over all its attempts (a re-dispatch does not reset the
// budget).
func (s *Store) AddUsage(ctx context.Context, attemptID string, u Usage, now time.Time) (Usage, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE attempts SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
		total_tokens = total_tokens + $4, model_requests = model_requests + $5, updated_at = $6 WHERE id = $1`,
		attemptID, u.InputTokens, u.OutputTokens, u.TotalTokens, u.Requests, ms(now)); err != nil {
		return Usage{}, err
	}
	return s.SessionUsage(ctx, attemptID)
}

// SessionUsage is the total over the attempt's session's attempts.
func (s *Store) SessionUsage(ctx context.Context, attemptID string) (Usage, error) {
	var u Usage
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
			COALESCE(SUM(total_tokens), 0), COALESCE(SUM(model_requests), 0)
		FROM attempts WHERE session_id = (SELECT session_id FROM attempts WHERE id = $1) AND session_id <> ''`, attemptID).
		Scan(&u.InputTokens, &u.OutputTokens, &u.TotalTokens, &u.Requests)
	return u, err
}
