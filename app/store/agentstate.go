package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// An agent's packed conversation state (decision 0072) is kept as
// artifacts are (decision 0029): a row of the artifacts table, named
// contract.AgentStateName, pruned with them after artifacts.retention. It
// counts toward no session's artifacts cap, and no list of artifacts
// shows it (Artifacts leaves it out; the dashboard refuses the name).

// PutAgentState keeps the attempt's agent state, replacing one an earlier
// upload of the same result kept.
func (s *Store) PutAgentState(ctx context.Context, attemptID, sessionID string, data []byte, now time.Time) error {
	sum := sha256.Sum256(data)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE attempt_id = $1 AND name = $2`, attemptID, contract.AgentStateName); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO artifacts (attempt_id, session_id, name, content_type, size, sha256, content, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, attemptID, sessionID, contract.AgentStateName, contract.ContentTypeGzip,
			int64(len(data)), hex.EncodeToString(sum[:]), data, ms(now))
		return err
	})
}

// AgentState is the attempt's kept agent state (ErrNotFound when it kept
// none, or it was pruned).
func (s *Store) AgentState(ctx context.Context, attemptID string) ([]byte, error) {
	a, err := s.ArtifactContent(ctx, attemptID, contract.AgentStateName)
	if err != nil {
		return nil, err
	}
	return a.Content, nil
}

// HasAgentState reports whether the attempt's agent state is kept.
func (s *Store) HasAgentState(ctx context.Context, attemptID string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM artifacts WHERE attempt_id = $1 AND name = $2`,
		attemptID, contract.AgentStateName).Scan(&n)
	return n > 0, err
}
