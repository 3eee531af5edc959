package store

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/inspecthq/inspect/session"
)

// AttemptState is where an attempt is.
type AttemptState string

// The attempt states.
const (
	// AttemptStarted: the executor was asked to run it; not yet claimed.
	AttemptStarted AttemptState = "started"
	// AttemptRunning: the supervisor claimed it.
	AttemptRunning AttemptState = "running"
	// AttemptEnded: its result arrived, or it was cancelled or lost.
	AttemptEnded AttemptState = "ended"
)

// Attempt is one run of a session on an executor. Only hashes of its claim
// code and session token are stored, so a copy of the database grants
// nothing.
type Attempt struct {
	ID        string
	SessionID string
	// DeliveryID is the webhook delivery that started its session (read
	// with it, for the logs; empty for a snapshot build).
	DeliveryID string
	ExternalID string
	// Number counts the session's attempts from 1.
	Number int
	// Kind is "session", "snapshot" (a snapshot build, RepoID's, with no
	// session: SessionID is empty) or "baseline" (the base's verify,
	// decision 0080: RepoID's, with no session either).
	Kind   string
	RepoID int64
	// Host is the replica whose local executor runs the attempt; its
	// sandbox dies with that replica. Empty for a remote executor.
	Host string
	// ExternalState is the executor's last reported state of the attempt
	// (a Buildkite build's "scheduled", "running", "passed", ...).
	ExternalState string
	State         AttemptState
	Deadline      time.Time
	ProgressSeq   int64
	Progress      string
	// Spec is the contract.Spec the attempt runs, as JSON.
	Spec string
	// Model is the spec's agent's model ("" for none), which prices its
	// tokens in a day's spend (DaySpend); written with the attempt only.
	Model string
	// Result is the uploaded contract.ResultUpload, as JSON.
	Result string
	// BaselineDigest is the baselines row a session attempt compares
	// with, or a baseline attempt's own (decision 0080); "" for none.
	BaselineDigest string
	CreatedAt      time.Time
	// UpdatedAt is its last change: for an ended attempt, when it ended.
	UpdatedAt time.Time
}

// Errors of the session channel's authentication.
var (
	ErrClaimRefused = errors.New("claim refused")
	ErrBadToken     = errors.New("bad session token")
)

// HashSecret is how claim codes and session tokens are stored.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateAttempt records a new attempt for a session and makes it the
// session's current one, in one transaction.
func (s *Store) CreateAttempt(ctx context.Context, a Attempt, claimCode string, now time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := insertAttempt(ctx, tx, a, claimCode, now); err != nil {
			return err
		}
		if a.SessionID == "" {
			return nil // a snapshot build or a baseline: no session to point at it
		}
		// The deadline is the session's from here on, whatever else happens
		// (a claim can come before the dispatch is recorded).
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET attempt_id = $2, deadline = $3, updated_at = $4 WHERE id = $1`,
			a.SessionID, a.ID, ms(a.Deadline), ms(now))
		return err
	})
}

// insertAttempt inserts attempt a, started, with its claim code's hash.
func insertAttempt(ctx context.Context, tx *sql.Tx, a Attempt, claimCode string, now time.Time) error {
	number := a.Number
	if number < 1 {
		number = 1
	}
	kind := a.Kind
	if kind == "" {
		kind = "session"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO attempts (id, session_id, claim_hash, state, deadline, spec, number, kind, repo_id, host, model, baseline_digest, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)`, a.ID, a.SessionID, HashSecret(claimCode), string(AttemptStarted), ms(a.Deadline), a.Spec, number, kind, a.RepoID, a.Host, a.Model, a.BaselineDigest, ms(now))
	if err != nil {
		return fmt.Errorf("creating attempt: %w", err)
	}
	return nil
}

// SetAttemptExternalID records the executor's id for the attempt.
func (s *Store) SetAttemptExternalID(ctx context.Context, id, externalID string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET external_id = $2, updated_at = $3 WHERE id = $1`, id, externalID, ms(now))
	return err
}

// ClaimAttempt exchanges a claim code for a session token, once: the code
// must match and the attempt must not have been claimed or ended. In the same
// transaction the session, if this is still its attempt, takes the claim
// transition (to running, from the states session's table says) and a sync
// is queued to tell GitHub.
func (s *Store) ClaimAttempt(ctx context.Context, id, claimCode, sessionToken string, now time.Time) (Attempt, error) {
	var out Attempt
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		a, claimHash, _, err := s.attemptRow(ctx, tx, id)
		if errors.Is(err, ErrNotFound) {
			return ErrClaimRefused
		}
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(claimHash), []byte(HashSecret(claimCode))) != 1 || a.State != AttemptStarted {
			return ErrClaimRefused
		}
		if !now.Before(a.Deadline) {
			return ErrClaimRefused
		}
		if _, err = tx.ExecContext(ctx, `UPDATE attempts SET token_hash = $2, state = $3, updated_at = $4 WHERE id = $1`,
			id, HashSecret(sessionToken), string(AttemptRunning), ms(now)); err != nil {
			return err
		}
		if a.Kind == kindBaseline {
			// A baseline has no session: its row says it runs.
			if _, err := tx.ExecContext(ctx, `UPDATE baselines SET state = $2, updated_at = $3 WHERE attempt_id = $1 AND state = $4`,
				id, string(BaselineRunning), ms(now), string(BaselineWaiting)); err != nil {
				return err
			}
		}
		sources, args := transitionSQL(session.Claim, a.SessionID, id, ms(now))
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET state = $4, updated_at = $3
			WHERE id = $1 AND attempt_id = $2 AND state IN `+sources, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n > 0 {
			if err := s.insertWork(ctx, tx, NewWork{Kind: SyncSession, SessionID: a.SessionID}, now); err != nil {
				return err
			}
		}
		a.State = AttemptRunning
		out = a
		return nil
	})
	return out, err
}

// AuthenticateAttempt checks a session token against a running attempt.
func (s *Store) AuthenticateAttempt(ctx context.Context, id, sessionToken string) (Attempt, error) {
	a, _, tokenHash, err := s.attemptRow(ctx, s.db, id)
	if err != nil {
		return Attempt{}, ErrBadToken
	}
	if tokenHash == "" || subtle.ConstantTimeCompare([]byte(tokenHash), []byte(HashSecret(sessionToken))) != 1 {
		return Attempt{}, ErrBadToken
	}
	return a, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) attemptRow(ctx context.Context, q querier, id string) (Attempt, string, string, error) {
	var (
		a                    Attempt
		state                string
		deadline, created    int64
		updated              int64
		claimHash, tokenHash string
	)
	err := q.QueryRowContext(ctx, `SELECT id, session_id, external_id, state, deadline, progress_seq, progress, spec, result,
		created_at, claim_hash, token_hash, number, external_state, kind, repo_id, host, updated_at, baseline_digest,
		COALESCE((SELECT delivery_id FROM sessions WHERE sessions.id = attempts.session_id), '') FROM attempts WHERE id = $1`, id).
		Scan(&a.ID, &a.SessionID, &a.ExternalID, &state, &deadline, &a.ProgressSeq, &a.Progress, &a.Spec, &a.Result, &created, &claimHash, &tokenHash,
			&a.Number, &a.ExternalState, &a.Kind, &a.RepoID, &a.Host, &updated, &a.BaselineDigest, &a.DeliveryID)
	if errors.Is(err, sql.ErrNoRows) {
		return Attempt{}, "", "", fmt.Errorf("attempt %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Attempt{}, "", "", err
	}
	a.State, a.Deadline, a.CreatedAt, a.UpdatedAt = AttemptState(state), fromMS(deadline), fromMS(created), fromMS(updated)
	return a, claimHash, tokenHash, nil
}

// GetAttempt loads an attempt.
func (s *Store) GetAttempt(ctx context.Context, id string) (Attempt, error) {
	a, _, _, err := s.attemptRow(ctx, s.db, id)
	return a, err
}

// AttemptByNumber finds a session's attempt by its number.
func (s *Store) AttemptByNumber(ctx context.Context, sessionID string, number int) (Attempt, error) {
	var id string
	// Newest first: numbers are unique per session from migration 3 on,
	// but rows from before it all say 1.
	err := s.db.QueryRowContext(ctx, `SELECT id FROM attempts WHERE session_id = $1 AND number = $2
		ORDER BY created_at DESC, id DESC LIMIT 1`, sessionID, number).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Attempt{}, fmt.Errorf("attempt %d of session %s: %w", number, sessionID, ErrNotFound)
	}
	if err != nil {
		return Attempt{}, err
	}
	return s.GetAttempt(ctx, id)
}

// SetAttemptExternalState records the executor's view of the attempt and,
// when that changed, queues then in the same transaction: a repeated
// webhook queues nothing, and a recorded state always has its work queued.
func (s *Store) SetAttemptExternalState(ctx context.Context, id, state string, now time.Time, then ...NewWork) (changed bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET external_state = $2, updated_at = $3 WHERE id = $1 AND external_state <> $2`,
			id, state, ms(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		changed = true
		for _, w := range then {
			if err := s.insertWork(ctx, tx, w, now); err != nil {
				return err
			}
		}
		return nil
	})
	return changed, err
}

// RecordProgress keeps the newest progress message; a repeated or older
// seq changes nothing. It reports whether the event was new.
func (s *Store) RecordProgress(ctx context.Context, id string, seq int64, message string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE attempts SET progress_seq = $2, progress = $3, updated_at = $4
		WHERE id = $1 AND progress_seq < $2 AND state = 'running'`, id, seq, message, ms(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// RecordResult stores an attempt's result, and its diff when it has one
// (nil: none), ends the attempt, moves its session to reporting (the
// report transition, from the states session's table says) and queues
// the report, in one transaction. A second upload changes nothing (the
// supervisor may retry); so does an upload for an attempt that is no
// longer the session's current one, but for keeping its result and diff.
func (s *Store) RecordResult(ctx context.Context, id, resultJSON string, diff *Diff, now time.Time) (first bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var sessionID string
		err := tx.QueryRowContext(ctx, `UPDATE attempts SET result = $2, state = $3, updated_at = $4
			WHERE id = $1 AND state = 'running' RETURNING session_id`, id, resultJSON, string(AttemptEnded), ms(now)).Scan(&sessionID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		first = true
		if diff != nil {
			if err := insertDiff(ctx, tx, id, sessionID, *diff, now); err != nil {
				return err
			}
		}
		sources, args := transitionSQL(session.Report, id, ms(now))
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET state = $3, updated_at = $2
			WHERE attempt_id = $1 AND state IN `+sources, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // the session ended meanwhile (cancelled, timed out): nothing to report
		}
		return s.insertWork(ctx, tx, NewWork{Kind: ReportSession, SessionID: sessionID}, now)
	})
	return first, err
}

// SetAttemptResult replaces an ended attempt's stored result with what the
// app adds to it when it reports (the evidence's baseline comparison and
// reproduce-first judgement, decisions 0080 and 0082), so the check run
// and the session's page read the same. It changes nothing for an attempt
// that has no result yet, and keeps when the attempt ended (UpdatedAt).
func (s *Store) SetAttemptResult(ctx context.Context, id, resultJSON string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET result = $2 WHERE id = $1 AND state = $3 AND result <> ''`,
		id, resultJSON, string(AttemptEnded))
	return err
}

// RecordSnapshotResult ends a snapshot build attempt with its result, and
// records it on the repo's schedule (FinishSnapshotBuild's effect), in one
// transaction; a repeated upload changes nothing.
func (s *Store) RecordSnapshotResult(ctx context.Context, id, resultJSON string, o SnapshotOutcome, now time.Time) (first bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var repoID int64
		err := tx.QueryRowContext(ctx, `UPDATE attempts SET result = $2, state = $3, updated_at = $4
			WHERE id = $1 AND state = 'running' AND kind = 'snapshot' RETURNING repo_id`, id, resultJSON, string(AttemptEnded), ms(now)).Scan(&repoID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		first = true
		if err := finishSnapshotBuild(ctx, tx, repoID, id, o, now); err != nil || o.Digest == "" {
			return err
		}
		// Collecting old images talks to the registry: not in the request
		// that brought the result.
		return s.insertWork(ctx, tx, NewWork{Kind: CollectSnapshots, Payload: strconv.FormatInt(repoID, 10)}, now)
	})
	return first, err
}

// EndAttempt marks an attempt ended (cancelled, timed out, lost), so its
// token stops working and a late result is ignored.
func (s *Store) EndAttempt(ctx context.Context, id string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET state = $2, updated_at = $3 WHERE id = $1 AND state <> $2`,
		id, string(AttemptEnded), ms(now))
	return err
}
