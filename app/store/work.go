package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// WorkKind names a unit of background work.
type WorkKind string

// The kinds of work.
const (
	// PrepareSession runs the worker's preparation steps for a session.
	PrepareSession WorkKind = "prepare_session"
	// PostReply posts one reply comment (help, refusals decided in the
	// request, status).
	PostReply WorkKind = "post_reply"
	// RefreshRepoConfig re-reads a repo's config into the cache.
	RefreshRepoConfig WorkKind = "refresh_repo_config"
	// RunCommand handles status, cancel and retry.
	RunCommand WorkKind = "run_command"
	// SyncSession brings GitHub in line with a session's stored state: the
	// check run, and the progress comment (or a final reply when there is
	// none). Every transition is a store update first; this follows.
	SyncSession WorkKind = "sync_session"
	// DispatchSession builds a prepared session's spec and starts an
	// attempt on the executor.
	DispatchSession WorkKind = "dispatch_session"
	// ReportSession turns an attempt's result into a commit, a pull request
	// and a concluded check run.
	ReportSession WorkKind = "report_session"
	// CollectResult reads a finished attempt's result from its executor
	// (a Buildkite build's artifacts) when the supervisor's upload never
	// came.
	CollectResult WorkKind = "collect_result"
	// ConsiderRepair decides whether a failing check becomes a repair
	// session (the repo's config, the pull request, the guards).
	ConsiderRepair WorkKind = "consider_repair"
	// CheckRevert looks, through the API, for a commit pushed to a default
	// branch that undoes a merged PR Inspect opened by its patch alone
	// (app/fates, decision 0074).
	CheckRevert WorkKind = "check_revert"

	// AdmitTurn decides a message for the thread's running session (a
	// `/inspect <message>` or `/inspect stop` comment): a turn of it, a
	// refusal, or a session of its own (decision 0071).
	AdmitTurn WorkKind = "admit_turn"
)

// NewWork is work to queue.
type NewWork struct {
	Kind      WorkKind
	SessionID string
	// Payload is JSON owned by the work's handler.
	Payload  string
	RunAfter time.Time
}

// Work is a claimed unit of work. Token fences it: only the holder of the
// current lease may complete it.
type Work struct {
	ID        int64
	Kind      WorkKind
	SessionID string
	// DeliveryID is the webhook delivery that started the session (read
	// at the claim, for the logs).
	DeliveryID string
	Payload    string
	Attempts   int
	Owner      string
	Token      string
	Until      time.Time
}

// ErrLeaseLost means another worker took the work over (our lease expired).
var ErrLeaseLost = errors.New("lease lost")

const insertWorkSQL = `INSERT INTO work (kind, session_id, payload, state, run_after, created_at, updated_at)
	VALUES ($1, $2, $3, 'pending', $4, $5, $5)`

func (s *Store) insertWork(ctx context.Context, tx *sql.Tx, w NewWork, now time.Time) error {
	runAfter := w.RunAfter
	if runAfter.IsZero() {
		runAfter = now
	}
	_, err := tx.StmtContext(ctx, s.accept.work).ExecContext(ctx, string(w.Kind), w.SessionID, w.Payload, ms(runAfter), ms(now))
	if err != nil {
		return fmt.Errorf("queueing %s: %w", w.Kind, err)
	}
	return nil
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥1.24 documents it)
	return hex.EncodeToString(b[:])
}

// Claim leases the oldest ready work item to owner until now+lease. It
// returns nil when nothing is ready. Work whose lease expired is ready
// again: that is how a dead worker's work is taken over.
func (s *Store) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration) (*Work, error) {
	token := newToken()
	until := now.Add(lease)
	pick := `SELECT id FROM work WHERE state = 'pending' AND run_after <= $4 AND lease_until <= $4 ORDER BY run_after, id LIMIT 1`
	if s.dialect == postgres {
		// SKIP LOCKED lets replicas claim different rows at once instead of
		// queueing on the same one.
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	row := s.db.QueryRowContext(ctx, `UPDATE work SET lease_owner = $1, lease_token = $2, lease_until = $3,
		attempts = attempts + 1, updated_at = $4
		WHERE id = (`+pick+`) AND lease_until <= $4
		RETURNING id, kind, session_id, payload, attempts,
			COALESCE((SELECT delivery_id FROM sessions WHERE sessions.id = work.session_id), '')`, owner, token, ms(until), ms(now))
	var (
		w    Work
		kind string
	)
	err := row.Scan(&w.ID, &kind, &w.SessionID, &w.Payload, &w.Attempts, &w.DeliveryID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claiming work: %w", err)
	}
	w.Kind = WorkKind(kind)
	w.Owner, w.Token, w.Until = owner, token, until
	return &w, nil
}

// fenced updates a work row only if w still holds its lease.
func (s *Store) fenced(ctx context.Context, w *Work, set string, args ...any) error {
	all := append([]any{w.ID, w.Token}, args...)
	res, err := s.db.ExecContext(ctx, `UPDATE work SET `+set+` WHERE id = $1 AND lease_token = $2 AND state = 'pending'`, all...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Complete marks claimed work done.
func (s *Store) Complete(ctx context.Context, w *Work, now time.Time) error {
	return s.fenced(ctx, w, `state = 'done', lease_until = 0, updated_at = $3`, ms(now))
}

// ExtendLease holds claimed work until until: for work that takes longer
// than the usual lease (a snapshot build), so no other worker takes it
// over meanwhile.
func (s *Store) ExtendLease(ctx context.Context, w *Work, until, now time.Time) error {
	if err := s.fenced(ctx, w, `lease_until = $3, updated_at = $4`, ms(until), ms(now)); err != nil {
		return err
	}
	w.Until = until
	return nil
}

// Retry releases claimed work to run again after runAfter.
func (s *Store) Retry(ctx context.Context, w *Work, now, runAfter time.Time, cause string) error {
	return s.fenced(ctx, w, `lease_until = 0, lease_owner = '', run_after = $3, last_error = $4, updated_at = $5`,
		ms(runAfter), cause, ms(now))
}

// Release gives claimed work back at once without counting the attempt:
// the worker is shutting down, not failing.
func (s *Store) Release(ctx context.Context, w *Work, now time.Time) error {
	return s.fenced(ctx, w, `lease_until = 0, lease_owner = '', attempts = attempts - 1, run_after = $3, updated_at = $3`, ms(now))
}

// Postpone gives claimed work back to run after runAfter, uncounted: it
// waits its turn (one active session per thread), it did not fail.
func (s *Store) Postpone(ctx context.Context, w *Work, now, runAfter time.Time) error {
	return s.fenced(ctx, w, `lease_until = 0, lease_owner = '', attempts = attempts - 1, run_after = $3, updated_at = $4`, ms(runAfter), ms(now))
}

// Fail ends claimed work for good.
func (s *Store) Fail(ctx context.Context, w *Work, now time.Time, cause string) error {
	return s.fenced(ctx, w, `state = 'failed', lease_until = 0, last_error = $3, updated_at = $4`, cause, ms(now))
}

// WorkCounts reports how many items are in each state (tests, metrics).
func (s *Store) WorkCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*) FROM work GROUP BY state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, err
		}
		out[state] = n
	}
	return out, rows.Err()
}

// NextRunAfter returns when the earliest pending work becomes ready, or the
// zero time when there is none. Workers use it to wait without polling hot.
func (s *Store) NextRunAfter(ctx context.Context) (time.Time, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MIN(CASE WHEN lease_until > run_after THEN lease_until ELSE run_after END)
		FROM work WHERE state = 'pending'`).Scan(&v)
	if err != nil || !v.Valid {
		return time.Time{}, err
	}
	return fromMS(v.Int64), nil
}
