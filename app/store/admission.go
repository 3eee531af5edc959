package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// admissionLock is the PostgreSQL advisory lock every admission holds for
// its transaction, so two replicas never both take the last slot under a
// cap. Admissions are one per session, so one lock for all is cheap.
// (SQLite's immediate transactions serialise writers already.)
const admissionLock = 4242006

// activeStates are the states that hold a slot under the caps: admitted
// and not done.
const activeStates = `('preparing', 'dispatched', 'running', 'reporting')`

// Admit reads a session and the load on its scopes (its repository, its
// requester, its installation) in one transaction holding the admission
// lock, and lets fn decide and change the session; fn's changes and the
// work it returns are written in the same transaction. Sessions ahead are
// those held back by a cap (waiting_since set) that were created earlier.
func (s *Store) Admit(ctx context.Context, id string, now time.Time, fn func(x *Session, load policy.Load) ([]NewWork, error)) (Session, error) {
	var out Session
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, admissionLock); err != nil {
				return err
			}
		}
		var err error
		out, err = s.mutateIn(ctx, tx, id, now, func(x *Session) ([]NewWork, error) {
			load, err := s.loadOf(ctx, tx, *x)
			if err != nil {
				return nil, err
			}
			return fn(x, load)
		})
		return err
	})
	return out, err
}

// loadOf counts the active and the earlier-waiting sessions in each of
// sess's scopes.
func (s *Store) loadOf(ctx context.Context, tx *sql.Tx, sess Session) (policy.Load, error) {
	var load policy.Load
	err := tx.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND repo_id = $1 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND requester_id = $2 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND installation_id = $3 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'queued' AND waiting_since > 0 AND repo_id = $1 AND `+earlier+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'queued' AND waiting_since > 0 AND requester_id = $2 AND `+earlier+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state = 'queued' AND waiting_since > 0 AND installation_id = $3 AND `+earlier+` THEN 1 ELSE 0 END), 0)
		FROM sessions WHERE state <> 'done' AND id <> $4`,
		sess.RepoID, sess.RequesterID, sess.InstallationID, sess.ID, ms(sess.CreatedAt)).
		Scan(&load.ActiveRepo, &load.ActiveUser, &load.ActiveInstallation, &load.AheadRepo, &load.AheadUser, &load.AheadInstallation)
	if err != nil {
		return policy.Load{}, fmt.Errorf("reading the load: %w", err)
	}
	return load, nil
}

// earlier selects sessions created before the one being admitted ($4 its
// id, $5 its creation time), in the order the queue serves them.
const earlier = `(created_at < $5 OR (created_at = $5 AND id < $4))`

// StartsSince counts a repository's sessions admitted after since,
// and returns the earliest such admission (the daily budget's window).
func (s *Store) StartsSince(ctx context.Context, repoID int64, since time.Time) (int, time.Time, error) {
	var n int
	var oldest sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), MIN(admitted_at) FROM sessions WHERE repo_id = $1 AND admitted_at > $2`,
		repoID, ms(since)).Scan(&n, &oldest)
	return n, fromMS(oldest.Int64), err
}

// RepairHistory is what the repair guards need about one pull request.
type RepairHistory struct {
	// Repairs counts its repair sessions, whatever their outcome.
	Repairs int
	// LastEnd is when its latest finished repair session ended.
	LastEnd time.Time
	// Active says some session (of any kind) is active on it.
	Active bool
}

// PullRepairHistory reads a pull request's repair history.
func (s *Store) PullRepairHistory(ctx context.Context, repoID int64, number int) (RepairHistory, error) {
	var h RepairHistory
	var last sql.NullInt64
	var active int
	err := s.db.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN trigger_kind = 'repair' THEN 1 ELSE 0 END), 0),
			MAX(CASE WHEN trigger_kind = 'repair' AND state = 'done' THEN updated_at END),
			COALESCE(SUM(CASE WHEN state <> 'done' THEN 1 ELSE 0 END), 0)
		FROM sessions WHERE repo_id = $1 AND number = $2 AND is_pr = 1`, repoID, number).Scan(&h.Repairs, &last, &active)
	h.LastEnd, h.Active = fromMS(last.Int64), active > 0
	return h, err
}

// IsSessionCommit reports whether sha is a commit one of the repository's
// sessions made.
func (s *Store) IsSessionCommit(ctx context.Context, repoID int64, sha string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions WHERE repo_id = $1 AND commit_sha = $2`, repoID, sha).Scan(&n)
	return n > 0, err
}

// SessionsForPull lists, oldest first, the sessions on a pull request's
// thread and those that opened it (from an issue or another PR).
func (s *Store) SessionsForPull(ctx context.Context, repoID int64, number int, limit int) ([]Session, error) {
	return s.querySessions(ctx, `WHERE repo_id = $1 AND ((number = $2 AND is_pr = 1) OR pr_number = $2)
		ORDER BY created_at, id LIMIT $3`, repoID, number, limit)
}

// CreateSessionOnce creates a session with its first work items unless
// claimKey was claimed before, in one transaction. It reports whether it
// created the session. Work that creates sessions outside a delivery (a
// retry, a repair) claims a key so a replay creates nothing.
func (s *Store) CreateSessionOnce(ctx context.Context, claimKey string, sess *Session, work []NewWork, now time.Time) (bool, error) {
	created := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		claimed, err := claim(ctx, tx, claimKey, sess.ID, now)
		if err != nil || !claimed {
			return err
		}
		created = true
		return s.insertSessionWork(ctx, tx, sess, work, now)
	})
	return created, err
}

// claim takes key in trigger_claims for sessionID ("" when the claim makes
// no session), reporting false when it was taken before.
func claim(ctx context.Context, tx *sql.Tx, key, sessionID string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO trigger_claims (claim_key, session_id, claimed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		key, sessionID, ms(now))
	if err != nil {
		return false, fmt.Errorf("claiming %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
