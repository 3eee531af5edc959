package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Attestation is an attempt's signed provenance (decision 0078): the
// DSSE envelope as JSON and the id of the key that signed it.
type Attestation struct {
	AttemptID, SessionID string
	KeyID                string
	Envelope             string
	CreatedAt            time.Time
}

// PutAttestation keeps an attempt's attestation, once: a replay of the
// report step that signs again keeps the first.
func (s *Store) PutAttestation(ctx context.Context, a Attestation) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO attestations (attempt_id, session_id, key_id, envelope, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (attempt_id) DO NOTHING`,
		a.AttemptID, a.SessionID, a.KeyID, a.Envelope, ms(a.CreatedAt))
	return err
}

// GetAttestation is the attempt's attestation; ErrNotFound when it has
// none (nothing was attested: no change, or no provenance configured).
func (s *Store) GetAttestation(ctx context.Context, attemptID string) (Attestation, error) {
	a := Attestation{AttemptID: attemptID}
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT session_id, key_id, envelope, created_at FROM attestations WHERE attempt_id = $1`, attemptID).
		Scan(&a.SessionID, &a.KeyID, &a.Envelope, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Attestation{}, ErrNotFound
	case err != nil:
		return Attestation{}, err
	}
	a.CreatedAt = fromMS(created)
	return a, nil
}
