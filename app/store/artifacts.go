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
// would then hold more than maxSessionBytes (ErrArtifactsFull). An
// attempt of no session (a baseline's, decision 0083) is capped alone:
// its session_id is empty, which every such attempt shares.
func (s *Store) PutArtifact(ctx context.Context, a Artifact, maxSessionBytes int64) error {
	heldQuery := `SELECT COALESCE(SUM(size), 0) FROM artifacts
		WHERE session_id = $1 AND NOT (attempt_id = $2 AND name = $3) AND name <> $4`
	if a.SessionID == "" {
		heldQuery = `SELECT COALESCE(SUM(size), 0) FROM artifacts
		WHERE session_id = $1 AND attempt_id = $2 AND name <> $3 AND name <> $4`
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var held int64
		if err := tx.QueryRowContext(ctx, heldQuery, a.SessionID, a.AttemptID, a.Name, contract.AgentStateName).Scan(&held); err != nil {
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

// PruneArtifacts deletes the artifacts collected before cutoff, and the
// public screenshots published before it, and says how many artifacts.
func (s *Store) PruneArtifacts(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM artifacts WHERE created_at < $1`, ms(cutoff))
	if err != nil {
		return 0, err
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM public_screenshots WHERE created_at < $1`, ms(cutoff)); err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// PublishScreenshot makes the attempt's artifact name, whose digest is
// sha256, servable without sign-in at that digest (decision 0083): the
// caller has checked that its repository is public. A digest published
// before now names this artifact instead (the bytes are the same).
func (s *Store) PublishScreenshot(ctx context.Context, sha256, attemptID, name string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO public_screenshots (sha256, attempt_id, name, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (sha256) DO UPDATE SET attempt_id = excluded.attempt_id, name = excluded.name, created_at = excluded.created_at`,
		sha256, attemptID, name, ms(now))
	return err
}

// PublicScreenshot is the published screenshot whose digest is sha256,
// with its bytes: ErrNotFound unless that digest was published and the
// artifact it names is still stored with that very digest.
func (s *Store) PublicScreenshot(ctx context.Context, sha256 string) (Artifact, error) {
	var a Artifact
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT a.attempt_id, a.session_id, a.name, a.content_type, a.size, a.sha256, a.content, a.created_at
		FROM public_screenshots p JOIN artifacts a ON a.attempt_id = p.attempt_id AND a.name = p.name AND a.sha256 = p.sha256
		WHERE p.sha256 = $1`, sha256).
		Scan(&a.AttemptID, &a.SessionID, &a.Name, &a.ContentType, &a.Size, &a.SHA256, &a.Content, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Artifact{}, ErrNotFound
	}
	a.CreatedAt = fromMS(created)
	return a, err
}
