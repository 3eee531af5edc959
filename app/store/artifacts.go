package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Artifact is one file a session's verify wrote that the repository's
// artifacts: globs name (issue 16), as the channel received it.
type Artifact struct {
	AttemptID   string
	SessionID   string
	Name        string
	ContentType string
	Size        int64
	SHA256      string
	Content     []byte
	CreatedAt   time.Time
}

// ErrArtifactsFull says a session's artifacts would pass its cap.
var ErrArtifactsFull = errors.New("the session's artifacts would pass their cap")

// PutArtifact stores a, replacing the attempt's artifact of that name,
// unless the session's artifacts (every attempt's, but the one replaced)
// would then hold more than maxSessionBytes (ErrArtifactsFull).
func (s *Store) PutArtifact(ctx context.Context, a Artifact, maxSessionBytes int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var held int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM artifacts
			WHERE session_id = $1 AND NOT (attempt_id = $2 AND name = $3) AND name <> $4`, a.SessionID, a.AttemptID, a.Name, contract.AgentStateName).Scan(&held); err != nil {
			return err
		}
		if held+a.Size > maxSessionBytes {
			return ErrArtifactsFull
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM artifacts WHERE attempt_id = $1 AND name = $2`, a.AttemptID, a.Name); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO artifacts (attempt_id, session_id, name, content_type, size, sha256, content, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.AttemptID, a.SessionID, a.Name, a.ContentType, a.Size, a.SHA256, a.Content, ms(a.CreatedAt))
		return err
	})
}

// Artifacts are an attempt's artifacts, by name, without their content
// (and without its agent state: agentstate.go).
func (s *Store) Artifacts(ctx context.Context, attemptID string) ([]Artifact, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT attempt_id, session_id, name, content_type, size, sha256, created_at
		FROM artifacts WHERE attempt_id = $1 AND name <> $2 ORDER BY name`, attemptID, contract.AgentStateName)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err reports what matters
	var out []Artifact
	for rows.Next() {
		var a Artifact
		var created int64
		if err := rows.Scan(&a.AttemptID, &a.SessionID, &a.Name, &a.ContentType, &a.Size, &a.SHA256, &created); err != nil {
			return nil, err
		}
		a.CreatedAt = fromMS(created)
		out = append(out, a)
	}
	return out, rows.Err()
}

// ArtifactContent is one artifact with its bytes (ErrNotFound when there
// is none, or it was pruned).
func (s *Store) ArtifactContent(ctx context.Context, attemptID, name string) (Artifact, error) {
	a := Artifact{AttemptID: attemptID, Name: name}
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT session_id, content_type, size, sha256, content, created_at
		FROM artifacts WHERE attempt_id = $1 AND name = $2`, attemptID, name).
		Scan(&a.SessionID, &a.ContentType, &a.Size, &a.SHA256, &a.Content, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Artifact{}, ErrNotFound
	}
	a.CreatedAt = fromMS(created)
	return a, err
}

// PruneArtifacts deletes the artifacts collected before cutoff and says
// how many.
func (s *Store) PruneArtifacts(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM artifacts WHERE created_at < $1`, ms(cutoff))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
