package store

import (
	"context"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Usage is what the model proxy counted: tokens as the provider reported
// them, and the requests relayed.
type Usage struct {
	// InputTokens is all the input the providers charged for, cached or
	// not.
	InputTokens, OutputTokens, TotalTokens int64
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the providers' prompt caches, priced apart
	// (decision 0053).
	CacheReadTokens, CacheWriteTokens int64
	Requests                          int64
}

// sumUsageColumns sums an attempt's usage columns over the rows selected,
// in the order of Usage.scan.
const sumUsageColumns = `COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(total_tokens), 0),
	COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(model_requests), 0)`

// addUsage adds a Usage ($2…$7, in the order of Usage.args) to the attempt
// $1, at $8.
const addUsage = `UPDATE attempts SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,
	total_tokens = total_tokens + $4, cache_read_tokens = cache_read_tokens + $5, cache_write_tokens = cache_write_tokens + $6,
	model_requests = model_requests + $7, updated_at = $8 WHERE id = $1`

func (u *Usage) scan() []any {
	return []any{&u.InputTokens, &u.OutputTokens, &u.TotalTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.Requests}
}

func (u Usage) args() []any {
	return []any{u.InputTokens, u.OutputTokens, u.TotalTokens, u.CacheReadTokens, u.CacheWriteTokens, u.Requests}
}

// AddUsage adds one relayed request's counts to an attempt and returns its
// session's total over all its attempts (a re-dispatch does not reset the
// budget).
func (s *Store) AddUsage(ctx context.Context, attemptID string, u Usage, now time.Time) (Usage, error) {
	args := append(append([]any{attemptID}, u.args()...), ms(now))
	if _, err := s.db.ExecContext(ctx, addUsage, args...); err != nil {
		return Usage{}, err
	}
	return s.SessionUsage(ctx, attemptID)
}

// SessionUsage is the total over the attempt's session's attempts.
func (s *Store) SessionUsage(ctx context.Context, attemptID string) (Usage, error) {
	var u Usage
	err := s.db.QueryRowContext(ctx, `SELECT `+sumUsageColumns+`
		FROM attempts WHERE session_id = (SELECT session_id FROM attempts WHERE id = $1) AND session_id <> ''`, attemptID).
		Scan(u.scan()...)
	return u, err
}

// Tokens is u as evidence and ModelCost count it.
func (u Usage) Tokens() contract.TokenUsage {
	return contract.TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Requests: int(u.Requests),
		CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
}
