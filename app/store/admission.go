package store

import (
	"context"
	"database/sql"
	"errors"
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
//
// The time handed to fn is read from clock once the lock is held and the
// load has been read: an admission's time then orders as the admissions
// themselves do, and a slot the load saw freed ended (its ended_at is read
// before its end commits) no later than the admission. A time read before
// waiting for the lock, or between the lock and the load, could be older
// than an ending that committed meanwhile, and the recorded intervals
// would then overlap beyond the caps that were in fact kept.
func (s *Store) Admit(ctx context.Context, id string, clock func() time.Time, fn func(x *Session, load policy.Load, now time.Time) ([]NewWork, error)) (Session, error) {
	var out Session
	var ended bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgres {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, admissionLock); err != nil {
				return err
			}
		}
		before, err := s.lockSession(ctx, tx, id)
		if err != nil {
			return err
		}
		// The day's window is placed by a first reading; the admission's
		// own time is read after the load.
		load, err := s.loadOf(ctx, tx, before, clock())
		if err != nil {
			return err
		}
		now := clock()
		out, ended, err = s.mutateLocked(ctx, tx, before, now, func(x *Session) ([]NewWork, error) {
			return fn(x, load, now)
		})
		return err
	})
	if err == nil && ended {
		s.tellEnded(out)
	}
	return out, err
}

// loadOf counts the active and the earlier-waiting sessions in each of
// sess's scopes, and the repo's starts in the 24 hours before now. A
// waiting session counts as ahead only in the scope whose cap holds it,
// so one repo's queue never holds up the rest of its installation.
func (s *Store) loadOf(ctx context.Context, tx *sql.Tx, sess Session, now time.Time) (policy.Load, error) {
	var load policy.Load
	var oldest sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND repo_id = $1 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND requester_id = $2 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN state IN `+activeStates+` AND installation_id = $3 THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN `+waiting+` AND waiting_scope = 'repo' AND repo_id = $1 AND `+earlier+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN `+waiting+` AND waiting_scope = 'user' AND requester_id = $2 AND `+earlier+` THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN `+waiting+` AND waiting_scope = 'installation' AND installation_id = $3 AND `+earlier+` THEN 1 ELSE 0 END), 0)
		FROM sessions WHERE state IN ('queued', 'preparing', 'dispatched', 'running', 'reporting') AND id <> $4`,
		sess.RepoID, sess.RequesterID, sess.InstallationID, sess.ID, ms(sess.CreatedAt)).
		Scan(&load.ActiveRepo, &load.ActiveUser, &load.ActiveInstallation, &load.AheadRepo, &load.AheadUser, &load.AheadInstallation)
	if err != nil {
		return policy.Load{}, fmt.Errorf("reading the load: %w", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT COUNT(*), MIN(NULLIF(admitted_at, 0)) FROM sessions
		WHERE repo_id = $1 AND id <> $2 AND (admitted_at > $3 OR (`+waiting+`))`,
		sess.RepoID, sess.ID, ms(now.Add(-24*time.Hour))).Scan(&load.StartedRepo, &oldest)
	if err != nil {
		return policy.Load{}, fmt.Errorf("reading the day's starts: %w", err)
	}
	load.OldestStart = fromMS(oldest.Int64)
	return load, nil
}

// waiting selects sessions that hold a place in a queue.
const waiting = `state = 'queued' AND waiting_since > 0`

// earlier selects sessions created before the one being admitted ($4 its
// id, $5 its creation time), in the order the queue serves them.
const earlier = `(created_at < $5 OR (created_at = $5 AND id < $4))`

// RepairHistory is what the repair guards need about one pull request.
type RepairHistory struct {
	// Repairs counts its repair sessions, whatever their outcome but a
	// refusal (which ran nothing).
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
			COALESCE(SUM(CASE WHEN trigger_kind = 'repair' AND outcome <> 'refused' THEN 1 ELSE 0 END), 0),
			MAX(CASE WHEN trigger_kind = 'repair' AND state = 'done' AND outcome <> 'refused' THEN ended_at END),
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

// CreateSessionOnce creates a session with its first work items unless one
// of claimKeys was claimed before, in one transaction. It reports whether it
// created the session. Work that creates sessions outside a delivery (a
// retry, a repair) claims a key so a replay creates nothing.
func (s *Store) CreateSessionOnce(ctx context.Context, claimKeys []string, sess *Session, work []NewWork, now time.Time) (bool, error) {
	created := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, key := range claimKeys {
			claimed, err := claim(ctx, tx, key, sess.ID, now)
			if err != nil {
				return err
			}
			if !claimed {
				return errClaimed // roll back the keys claimed before it
			}
		}
		created = true
		return s.insertSessionWork(ctx, tx, sess, work, now)
	})
	if errors.Is(err, errClaimed) {
		return false, nil
	}
	return created, err
}

var errClaimed = errors.New("claimed before")

// Claimed reports whether key was claimed.
func (s *Store) Claimed(ctx context.Context, key string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM trigger_claims WHERE claim_key = $1`, key).Scan(&n)
	return n > 0, err
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
