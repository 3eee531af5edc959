package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// The base's verify (decision 0080): a baseline attempt runs verify on the
// pinned commit without the change, once per cache key (the snapshot
// digest, the base SHA and the verify commands, hashed), and every session
// attempt with that key compares its tests with it.

// kindBaseline is a baseline attempt's kind (contract.KindBaseline).
const kindBaseline = "baseline"

// DispatchBaseline starts a baseline attempt on the executor (its id the
// payload), postponed while the executor is at capacity: the session's
// own attempt goes first.
const DispatchBaseline WorkKind = "dispatch_baseline"

// BaselineState is where a baseline is.
type BaselineState string

// The baseline states.
const (
	// BaselineWaiting: its attempt is made, not yet claimed.
	BaselineWaiting BaselineState = "waiting"
	// BaselineRunning: its supervisor claimed the attempt.
	BaselineRunning BaselineState = "running"
	// BaselineDone: the base's verify ran; Result holds its evidence.
	BaselineDone BaselineState = "done"
	// BaselineFailed: it could not run (an error, a timeout, lost); Why
	// says which. A later attempt with the same key starts a new one.
	BaselineFailed BaselineState = "failed"
)

// Baseline is one cached base verify.
type Baseline struct {
	CacheDigest    string
	InstallationID int64
	RepoID         int64
	BaseSHA        string
	// AttemptID is the baseline attempt that runs it.
	AttemptID string
	// ForAttempt is the session attempt it was started for: another
	// attempt that links it reuses it.
	ForAttempt string
	State      BaselineState
	Why        string
	// Result is the base's evidence (its commands and tests), JSON; ""
	// until done.
	Result    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// BaseEvidence is what a baseline keeps of its attempt's evidence (its
// Result): the commands as they ended and the tests, nothing the agent or
// a change would have left.
type BaseEvidence struct {
	Outcome  contract.OutcomeHint     `json:"outcome"`
	Commands []contract.CommandResult `json:"commands,omitempty"`
	Tests    *contract.TestSummary    `json:"tests,omitempty"`
}

// Pending reports whether the base's verify may still come.
func (b Baseline) Pending() bool { return b.State == BaselineWaiting || b.State == BaselineRunning }

const baselineColumns = `cache_digest, installation_id, repo_id, base_sha, attempt_id, for_attempt, state, why, result, created_at, updated_at`

// scanBaseline reads a baseline row (baselineColumns), after the columns
// first names, when a query selects some before them.
func scanBaseline(row interface{ Scan(...any) error }, first ...any) (Baseline, error) {
	var b Baseline
	var state string
	var created, updated int64
	err := row.Scan(append(first, &b.CacheDigest, &b.InstallationID, &b.RepoID, &b.BaseSHA, &b.AttemptID, &b.ForAttempt, &state, &b.Why, &b.Result, &created, &updated)...)
	if errors.Is(err, sql.ErrNoRows) {
		return Baseline{}, fmt.Errorf("baseline: %w", ErrNotFound)
	}
	if err != nil {
		return Baseline{}, err
	}
	b.State, b.CreatedAt, b.UpdatedAt = BaselineState(state), fromMS(created), fromMS(updated)
	return b, nil
}

// GetBaseline loads the baseline cached under digest.
func (s *Store) GetBaseline(ctx context.Context, digest string) (Baseline, error) {
	return scanBaseline(s.db.QueryRowContext(ctx, `SELECT `+baselineColumns+` FROM baselines WHERE cache_digest = $1`, digest))
}

// BaselineOfAttempt loads the baseline a baseline attempt runs.
func (s *Store) BaselineOfAttempt(ctx context.Context, attemptID string) (Baseline, error) {
	return scanBaseline(s.db.QueryRowContext(ctx, `SELECT `+baselineColumns+` FROM baselines WHERE attempt_id = $1`, attemptID))
}

// LinkBaseline makes session attempt forAttempt compare with the baseline
// cached under b.CacheDigest, in one transaction. One that is waiting,
// running or done is linked as it is (a retry, a later turn, a repair:
// reused); otherwise (none, or a failed one) b is stored waiting, with
// its attempt a (kind baseline, no session) and the dispatch_baseline
// work that starts it. It returns the baseline linked and whether it was
// made now.
func (s *Store) LinkBaseline(ctx context.Context, forAttempt string, b Baseline, a Attempt, claimCode string, now time.Time) (Baseline, bool, error) {
	var out Baseline
	var created bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		created = false
		res, err := tx.ExecContext(ctx, `INSERT INTO baselines (`+baselineColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, '', '', $8, $8)
			ON CONFLICT (cache_digest) DO UPDATE SET installation_id = excluded.installation_id, repo_id = excluded.repo_id,
				base_sha = excluded.base_sha, attempt_id = excluded.attempt_id, for_attempt = excluded.for_attempt,
				state = excluded.state, why = '', result = '', updated_at = excluded.updated_at
			WHERE baselines.state = $9`,
			b.CacheDigest, b.InstallationID, b.RepoID, b.BaseSHA, a.ID, forAttempt, string(BaselineWaiting), ms(now), string(BaselineFailed))
		if err != nil {
			return fmt.Errorf("storing the baseline: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n > 0 {
			created = true
			a.Kind, a.SessionID, a.BaselineDigest = kindBaseline, "", b.CacheDigest
			if err := insertAttempt(ctx, tx, a, claimCode, now); err != nil {
				return err
			}
			if err := s.insertWork(ctx, tx, NewWork{Kind: DispatchBaseline, Payload: a.ID}, now); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET baseline_digest = $2 WHERE id = $1`, forAttempt, b.CacheDigest); err != nil {
			return err
		}
		out, err = scanBaseline(tx.QueryRowContext(ctx, `SELECT `+baselineColumns+` FROM baselines WHERE cache_digest = $1`, b.CacheDigest))
		return err
	})
	return out, created, err
}

// RecordBaselineResult ends a running baseline attempt with its upload
// (resultJSON) and finishes its baseline: done with the base's evidence
// (evidence, JSON), or failed saying why. The reports that wait for it are
// brought forward. A repeated upload changes nothing; first says whether
// this one counted.
func (s *Store) RecordBaselineResult(ctx context.Context, attemptID, resultJSON string, state BaselineState, why, evidence string, now time.Time) (first bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var digest string
		err := tx.QueryRowContext(ctx, `UPDATE attempts SET result = $2, state = $3, updated_at = $4
			WHERE id = $1 AND state = 'running' AND kind = $5 RETURNING baseline_digest`,
			attemptID, resultJSON, string(AttemptEnded), ms(now), kindBaseline).Scan(&digest)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		first = true
		return finishBaseline(ctx, tx, digest, attemptID, state, why, evidence, now)
	})
	return first, err
}

// FailBaseline fails a pending baseline whose attempt will not report
// (it could not start, or its deadline passed) and brings its waiting
// reports forward. It reports whether it did; the attempt's end is the
// caller's.
func (s *Store) FailBaseline(ctx context.Context, digest, attemptID, why string, now time.Time) (bool, error) {
	var failed bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		b, err := scanBaseline(tx.QueryRowContext(ctx, `SELECT `+baselineColumns+` FROM baselines WHERE cache_digest = $1`, digest))
		if err != nil || b.AttemptID != attemptID || !b.Pending() {
			return err
		}
		failed = true
		return finishBaseline(ctx, tx, digest, attemptID, BaselineFailed, why, "", now)
	})
	return failed, err
}

// LostBaselines are the pending baselines whose attempt's deadline is
// before now: attempts that never reported (reconcile fails them).
func (s *Store) LostBaselines(ctx context.Context, now time.Time) ([]Baseline, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+baselineColumns+` FROM baselines
		WHERE state IN ($1, $2) AND attempt_id IN (SELECT id FROM attempts WHERE deadline < $3)`,
		string(BaselineWaiting), string(BaselineRunning), ms(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Baseline
	for rows.Next() {
		b, err := scanBaseline(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// SetAttemptHost records the replica whose local executor runs a
// baseline attempt (its sandbox dies with that replica), before the run
// starts.
func (s *Store) SetAttemptHost(ctx context.Context, id, host string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET host = $2, updated_at = $3 WHERE id = $1`, id, host, ms(now))
	return err
}

// PendingBaselineHosts are the replicas running a waiting or running
// baseline's attempt on their local executor, each with those baselines.
func (s *Store) PendingBaselineHosts(ctx context.Context) (map[string][]Baseline, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.host, `+prefixed("b.", baselineColumns)+` FROM baselines b
		JOIN attempts a ON a.id = b.attempt_id WHERE b.state IN ($1, $2) AND a.host <> ''`,
		string(BaselineWaiting), string(BaselineRunning))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]Baseline{}
	for rows.Next() {
		var host string
		b, err := scanBaseline(rows, &host)
		if err != nil {
			return nil, err
		}
		out[host] = append(out[host], b)
	}
	return out, rows.Err()
}

// prefixed is a column list with each column named by its table's alias.
func prefixed(alias, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, c := range parts {
		parts[i] = alias + c
	}
	return strings.Join(parts, ", ")
}

// finishBaseline records a baseline's end and brings forward the report
// of each session waiting for it (postponed until it came).
func finishBaseline(ctx context.Context, tx *sql.Tx, digest, attemptID string, state BaselineState, why, evidence string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE baselines SET state = $3, why = $4, result = $5, updated_at = $6
		WHERE cache_digest = $1 AND attempt_id = $2`, digest, attemptID, string(state), why, evidence, ms(now)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE work SET run_after = $2, updated_at = $2
		WHERE state = 'pending' AND kind = $3 AND run_after > $2 AND lease_until = 0
			AND session_id IN (SELECT session_id FROM attempts WHERE baseline_digest = $1 AND kind = 'session')`,
		digest, ms(now), string(ReportSession))
	return err
}

// SetAttemptClaim gives an attempt that has not started a new claim code
// (a baseline's is made when it starts: the work that starts it holds no
// other). False when it has started, been claimed or ended.
func (s *Store) SetAttemptClaim(ctx context.Context, id, claimCode string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE attempts SET claim_hash = $2, updated_at = $3
		WHERE id = $1 AND state = $4 AND external_id = ''`, id, HashSecret(claimCode), ms(now), string(AttemptStarted))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
