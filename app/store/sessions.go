package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/session"
)

// Session is one request for an agent session.
type Session struct {
	ID             string
	RepoID         int64
	RepoOwner      string
	RepoName       string
	InstallationID int64
	Number         int
	IsPR           bool
	// TriggerKind is how the session came in (stored by its StoredName).
	TriggerKind    session.TriggerKind
	CommentID      int64
	DeliveryID     string
	RequesterLogin string
	RequesterID    int64
	RequesterType  string
	Instructions   string
	// Truncated says the instructions were cut at policy's limit.
	Truncated       bool
	IgnoredCommands int
	RetryOf         string

	// state changes only through a named transition (Move, End, and the
	// claim's and the result's SQL), and every write checks it against
	// session's table (decision 0045); State reads it.
	state session.State
	// Outcome is set with End, and never changes once the session is done.
	Outcome session.Outcome
	// Reason is a stable code (policy.Reason or an app code); Detail is the
	// human text that was posted.
	Reason string
	Detail string

	HeadSHA           string
	CheckRunID        int64
	ProgressCommentID int64
	Reacted           bool

	// AttemptID is the current attempt (dispatch creates it).
	AttemptID string
	// Deadline is when the session must be done, whatever happens.
	Deadline time.Time
	// CommitSHA, Branch and PRNumber are what the report created.
	CommitSHA string
	Branch    string
	PRNumber  int
	// DefaultBranch is the repo's, as preparation saw it.
	DefaultBranch string
	// Redispatches counts attempts re-dispatched because their executor
	// lost them; a session gets one, and keeps its deadline through it.
	Redispatches int
	// Handbacks counts attempts a stopping replica gave back to the fleet
	// (they do not use up the one re-dispatch, and keep the deadline).
	Handbacks int
	// TriggerInfo is JSON the app owns: what the way in adds (the label,
	// a review comment's place, the failing checks of a repair).
	TriggerInfo string
	// AdmittedAt is when the session got past the caps (zero while
	// queued); WaitingSince is when it was first held back by a cap, and
	// WaitingScope the cap ("repo", "user", "installation") that holds it
	// now: it counts as ahead only in that scope's queue.
	AdmittedAt   time.Time
	WaitingSince time.Time
	WaitingScope string
	// EndedAt is when the session became done (the repair cooldown's start).
	EndedAt time.Time

	CreatedAt time.Time
	UpdatedAt time.Time

	// fixture marks a session Fixture built: the store inserts it in any
	// state, where any other is born queued or done.
	fixture bool
}

// FullName is "owner/name".
func (s Session) FullName() string { return s.RepoOwner + "/" + s.RepoName }

// State is the session's place in its life. A session that was never
// stored (the zero value) is queued: every session is born queued.
func (s Session) State() session.State {
	if s.state == "" {
		return session.Queued
	}
	return s.state
}

// Active reports whether the session has not ended.
func (s Session) Active() bool { return s.State() != session.Done }

const sessionColumns = `id, repo_id, repo_owner, repo_name, installation_id, number, is_pr, trigger_kind,
	comment_id, delivery_id, requester_login, requester_id, requester_type, instructions, ignored_commands,
	retry_of, state, outcome, reason, detail, head_sha, check_run_id, progress_comment_id, reacted,
	created_at, updated_at, attempt_id, deadline, commit_sha, branch, pr_number, default_branch, truncated, redispatches,
	trigger_info, admitted_at, waiting_since, waiting_scope, ended_at, handbacks`

const insertSessionSQL = `INSERT INTO sessions (` + sessionColumns + `)
	VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31,$32,$33,$34,$35,$36,$37,$38,$39,$40)`

func (st *Store) insertSession(ctx context.Context, tx *sql.Tx, s *Session, now time.Time) error {
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if !s.fixture {
		// A session is born queued, or ended at once (refused on the way
		// in: End from queued); every other state is reached through the
		// store's checked writes.
		switch err := session.CheckChange(session.Queued, s.State(), "", s.Outcome); {
		case err != nil:
			return fmt.Errorf("inserting session %s: %w", s.ID, err)
		case s.State() != session.Queued && s.State() != session.Done:
			return fmt.Errorf("inserting session %s: %w", s.ID, errBornMidway)
		}
	}
	s.state = s.State()
	if s.state == session.Done && s.EndedAt.IsZero() {
		s.EndedAt = now // refused on the way in
	}
	s.UpdatedAt = now
	var commentID any
	if s.CommentID != 0 {
		commentID = s.CommentID
	}
	_, err := tx.StmtContext(ctx, st.accept.session).ExecContext(ctx,
		s.ID, s.RepoID, s.RepoOwner, s.RepoName, s.InstallationID, s.Number, b2i(s.IsPR), s.TriggerKind.StoredName(),
		commentID, s.DeliveryID, s.RequesterLogin, s.RequesterID, s.RequesterType, s.Instructions, s.IgnoredCommands,
		s.RetryOf, string(s.state), string(s.Outcome), s.Reason, s.Detail, s.HeadSHA, s.CheckRunID, s.ProgressCommentID, b2i(s.Reacted),
		ms(s.CreatedAt), ms(s.UpdatedAt), s.AttemptID, ms(s.Deadline), s.CommitSHA, s.Branch, s.PRNumber, s.DefaultBranch, b2i(s.Truncated), s.Redispatches,
		s.TriggerInfo, ms(s.AdmittedAt), ms(s.WaitingSince), s.WaitingScope, ms(s.EndedAt), s.Handbacks)
	if err != nil {
		return fmt.Errorf("inserting session: %w", err)
	}
	if s.state == session.Done {
		// Refused on the way in (or a test's fixture): it counts among the
		// outcomes' sessions.
		return st.followSession(ctx, tx, Session{}, *s, now)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanSession(row rowScanner) (Session, error) {
	var (
		s                Session
		commentID        sql.NullInt64
		isPR, reacted    int
		truncated        int
		state, outcome   string
		triggerKind      string
		created, updated int64
		deadline         int64
		admitted, since  int64
		ended            int64
	)
	err := row.Scan(&s.ID, &s.RepoID, &s.RepoOwner, &s.RepoName, &s.InstallationID, &s.Number, &isPR, &triggerKind,
		&commentID, &s.DeliveryID, &s.RequesterLogin, &s.RequesterID, &s.RequesterType, &s.Instructions, &s.IgnoredCommands,
		&s.RetryOf, &state, &outcome, &s.Reason, &s.Detail, &s.HeadSHA, &s.CheckRunID, &s.ProgressCommentID, &reacted,
		&created, &updated, &s.AttemptID, &deadline, &s.CommitSHA, &s.Branch, &s.PRNumber, &s.DefaultBranch, &truncated, &s.Redispatches,
		&s.TriggerInfo, &admitted, &since, &s.WaitingScope, &ended, &s.Handbacks)
	if err != nil {
		return Session{}, err
	}
	s.Deadline = fromMS(deadline)
	s.AdmittedAt, s.WaitingSince, s.EndedAt = fromMS(admitted), fromMS(since), fromMS(ended)
	s.Truncated = truncated == 1
	s.CommentID = commentID.Int64
	s.IsPR = isPR == 1
	s.TriggerKind = session.KindFromStoredName(triggerKind)
	s.Reacted = reacted == 1
	s.state = session.State(state)
	s.Outcome = session.Outcome(outcome)
	s.CreatedAt = fromMS(created)
	s.UpdatedAt = fromMS(updated)
	return s, nil
}

// GetSession loads one session.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.reader.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return sess, err
}

// MutateSession reads a session, lets fn change it, and writes it back, all
// in one transaction (row-locked on PostgreSQL), queueing then in the same
// transaction. fn changes the state only through a named transition (Move,
// End); the write is refused with a *session.TransitionError when the change
// is outside session's table (done is final among them), and when a done
// session would have no outcome.
func (s *Store) MutateSession(ctx context.Context, id string, now time.Time, fn func(*Session) error, then ...NewWork) (Session, error) {
	return s.MutateSessionThen(ctx, id, now, func(x *Session) ([]NewWork, error) {
		return then, fn(x)
	})
}

// MutateSessionThen is MutateSession where fn also decides, from the state
// it sees, which work to queue in the same transaction.
func (s *Store) MutateSessionThen(ctx context.Context, id string, now time.Time, fn func(*Session) ([]NewWork, error)) (Session, error) {
	var out Session
	var ended bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, ended, err = s.mutateIn(ctx, tx, id, now, fn)
		return err
	})
	if err == nil && ended {
		s.tellEnded(out)
	}
	return out, err
}

// mutateIn is MutateSessionThen's body (ended: it moved the session to
// done), inside a transaction the caller holds. (Admit reads the row and
// the load itself, then finishes with mutateLocked.)
func (s *Store) mutateIn(ctx context.Context, tx *sql.Tx, id string, now time.Time, fn func(*Session) ([]NewWork, error)) (out Session, ended bool, err error) {
	before, err := s.lockSession(ctx, tx, id)
	if err != nil {
		return Session{}, false, err
	}
	return s.mutateLocked(ctx, tx, before, now, fn)
}

// mutateLocked is mutateIn once the session's row is read and locked.
func (s *Store) mutateLocked(ctx context.Context, tx *sql.Tx, before Session, now time.Time, fn func(*Session) ([]NewWork, error)) (out Session, ended bool, err error) {
	after := before
	then, err := fn(&after)
	if err != nil {
		return Session{}, false, err
	}
	ended = after.state == session.Done && before.state != session.Done
	if ended {
		after.EndedAt = now
	}
	if err := s.writeSession(ctx, tx, before, after, now, then); err != nil {
		return Session{}, false, err
	}
	after.UpdatedAt = now
	return after, ended, nil
}

// lockSession reads a session inside tx, row-locked on PostgreSQL (SQLite's
// immediate transactions already hold the write lock).
func (s *Store) lockSession(ctx context.Context, tx *sql.Tx, id string) (Session, error) {
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE id = $1`
	if s.dialect == postgres {
		q += ` FOR UPDATE`
	}
	sess, err := scanSession(tx.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return sess, err
}

// writeSession writes a mutated session back and queues then, refusing a
// change of state outside session's table (done is final; done has an
// outcome).
func (s *Store) writeSession(ctx context.Context, tx *sql.Tx, before, after Session, now time.Time, then []NewWork) error {
	if err := session.CheckChange(before.state, after.state, before.Outcome, after.Outcome); err != nil {
		return fmt.Errorf("session %s: %w", before.ID, err)
	}

	_, err := tx.ExecContext(ctx, `UPDATE sessions SET state=$2, outcome=$3, reason=$4, detail=$5, head_sha=$6,
		check_run_id=$7, progress_comment_id=$8, reacted=$9, updated_at=$10, attempt_id=$11, deadline=$12,
		commit_sha=$13, branch=$14, pr_number=$15, default_branch=$16, redispatches=$17,
		trigger_info=$18, admitted_at=$19, waiting_since=$20, waiting_scope=$21, ended_at=$22, handbacks=$23 WHERE id=$1`,
		before.ID, string(after.state), string(after.Outcome), after.Reason, after.Detail, after.HeadSHA,
		after.CheckRunID, after.ProgressCommentID, b2i(after.Reacted), ms(now),
		after.AttemptID, ms(after.Deadline), after.CommitSHA, after.Branch, after.PRNumber, after.DefaultBranch, after.Redispatches,
		after.TriggerInfo, ms(after.AdmittedAt), ms(after.WaitingSince), after.WaitingScope, ms(after.EndedAt), after.Handbacks)
	if err != nil {
		return err
	}
	if err := s.followSession(ctx, tx, before, after, now); err != nil {
		return err
	}
	if after.state == session.Done && before.state != session.Done {
		undelivered, err := endTurns(ctx, tx, before.ID, after.Outcome, now)
		if err != nil {
			return fmt.Errorf("session %s: closing its turns: %w", before.ID, err)
		}
		if undelivered > 0 && after.Outcome != session.Cancelled {
			then = append(then[:len(then):len(then)], NewWork{Kind: ContinueTurns}) // a copy: the caller's slice stays as it was
		}
	}
	for _, w := range then {
		if w.SessionID == "" {
			w.SessionID = before.ID
		}
		if err := s.insertWork(ctx, tx, w, now); err != nil {
			return err
		}
	}
	return nil
}

// SessionsForTarget lists the newest sessions on one issue or PR.
func (s *Store) SessionsForTarget(ctx context.Context, repoID int64, number int, limit int) ([]Session, error) {
	return s.querySessions(ctx, `WHERE repo_id = $1 AND number = $2 ORDER BY created_at DESC, id DESC LIMIT $3`, repoID, number, limit)
}

// querySessions lists the sessions a WHERE/ORDER clause selects.
func (s *Store) querySessions(ctx context.Context, clause string, args ...any) ([]Session, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions `+clause, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}

// CountSessions counts all sessions (for tests and metrics).
func (s *Store) CountSessions(ctx context.Context) (int, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&n)
	return n, err
}

// SessionsPastDeadline lists dispatched or running sessions whose deadline
// has passed, and re-dispatched ones still waiting for their new attempt
// (a re-dispatch keeps the deadline, however long the new start takes).
func (s *Store) SessionsPastDeadline(ctx context.Context, now time.Time, limit int) ([]Session, error) {
	return s.querySessions(ctx, `WHERE (state IN ('dispatched', 'running') OR (state = 'preparing' AND redispatches > 0))
		AND deadline > 0 AND deadline <= $1 ORDER BY deadline LIMIT $2`, ms(now), limit)
}

// ActiveSessionBefore returns the id of an unfinished session on the same
// PR or issue that came before sess, or "" when sess may go ahead.
func (s *Store) ActiveSessionBefore(ctx context.Context, sess Session) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM sessions
		WHERE repo_id = $1 AND number = $2 AND state <> 'done' AND id <> $3
			AND (created_at < $4 OR (created_at = $4 AND id < $3))
		ORDER BY created_at, id LIMIT 1`, sess.RepoID, sess.Number, sess.ID, ms(sess.CreatedAt)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// SessionsRunning lists dispatched or running sessions, oldest first.
func (s *Store) SessionsRunning(ctx context.Context, limit int) ([]Session, error) {
	return s.querySessions(ctx, `WHERE state IN ('dispatched', 'running') ORDER BY updated_at LIMIT $1`, limit)
}

// SessionsRunningOn lists the dispatched or running sessions whose current
// attempt runs on host's local executor.
func (s *Store) SessionsRunningOn(ctx context.Context, host string) ([]Session, error) {
	return s.querySessions(ctx, `WHERE state IN ('dispatched', 'running')
		AND attempt_id IN (SELECT id FROM attempts WHERE host = $1 AND state <> 'ended') ORDER BY updated_at`, host)
}
