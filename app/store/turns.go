package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/session"
)

// A session's turns after its request (session.Turn, decision 0071): each
// stored once, by its source key (the comment, or the dashboard post), in
// the order it was admitted.

// ErrTooManyTurns refuses a turn past the session's cap.
var ErrTooManyTurns = errors.New("the session has taken all the turns it may")

// ErrSessionEnded refuses a turn for a session that has ended: the message
// is a continuation (decision 0072), not a turn of it.
var ErrSessionEnded = errors.New("the session has ended")

const turnColumns = `session_id, seq, author_login, author_id, source, comment_id, message, stop, state,
	attempt_id, outcome, created_at, delivered_at, done_at, review`

func scanTurn(row rowScanner) (session.Turn, error) {
	var (
		t                      session.Turn
		source, state          string
		stop                   int
		created, deliv, doneAt int64
		review                 string
	)
	if err := row.Scan(&t.SessionID, &t.Seq, &t.AuthorLogin, &t.AuthorID, &source, &t.CommentID, &t.Message, &stop, &state,
		&t.AttemptID, &t.Outcome, &created, &deliv, &doneAt, &review); err != nil {
		return session.Turn{}, err
	}
	if review != "" {
		t.Review = &session.ReviewComment{}
		if err := json.Unmarshal([]byte(review), t.Review); err != nil {
			return session.Turn{}, fmt.Errorf("turn %d of %s: its review comment: %w", t.Seq, t.SessionID, err)
		}
	}
	t.Source, t.State, t.Stop = session.TurnSource(source), session.TurnState(state), stop != 0
	t.CreatedAt, t.DeliveredAt, t.DoneAt = fromMS(created), fromMS(deliv), fromMS(doneAt)
	return t, nil
}

// AddTurn stores t as the next turn of its session, pending, unless the
// turn with sourceKey is stored already (a replayed delivery or post),
// which it returns as it is with added false. The session must be active
// (ErrSessionEnded) and have fewer than max turns after its request
// (ErrTooManyTurns). The check and the insert share one transaction with
// a write to the session's row, so an end racing it comes before (and the
// turn is refused) or after (and the end finds the turn).
func (s *Store) AddTurn(ctx context.Context, t session.Turn, sourceKey string, max int, now time.Time) (session.Turn, bool, error) {
	var (
		out   session.Turn
		added bool
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// Take the session's row first: the write lock orders this turn
		// against the session's end (PostgreSQL's row lock; SQLite's one
		// writer).
		var state string
		err := tx.QueryRowContext(ctx, `UPDATE sessions SET updated_at = updated_at WHERE id = $1 RETURNING state`, t.SessionID).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		old, err := scanTurn(tx.QueryRowContext(ctx, `SELECT `+turnColumns+` FROM turns WHERE source_key = $1`, sourceKey))
		switch {
		case err == nil:
			out = old
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if session.State(state) == session.Done {
			return ErrSessionEnded
		}
		var n, last int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM turns WHERE session_id = $1`, t.SessionID).Scan(&n, &last); err != nil {
			return err
		}
		if n >= max {
			return ErrTooManyTurns
		}
		t.Seq, t.State, t.CreatedAt = last+1, session.TurnPending, now
		t.AttemptID, t.Outcome, t.DeliveredAt, t.DoneAt = "", "", time.Time{}, time.Time{}
		review := ""
		if t.Review != nil {
			b, err := json.Marshal(t.Review)
			if err != nil {
				return err
			}
			review = string(b)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (session_id, seq, source_key, author_login, author_id, source, comment_id,
			message, stop, state, created_at, review) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			t.SessionID, t.Seq, sourceKey, t.AuthorLogin, t.AuthorID, string(t.Source), t.CommentID,
			t.Message, b2i(t.Stop), string(t.State), ms(now), review); err != nil {
			return fmt.Errorf("storing a turn: %w", err)
		}
		out, added = t, true
		return nil
	})
	return out, added, err
}

// TurnsAfter is the session's turns with Seq above after, oldest first:
// what a supervisor that has every turn up to after has not yet taken.
func (s *Store) TurnsAfter(ctx context.Context, sessionID string, after int) ([]session.Turn, error) {
	return s.queryTurns(ctx, `WHERE session_id = $1 AND seq > $2 ORDER BY seq`, sessionID, after)
}

// SessionTurns is every stored turn of the session (not its request),
// oldest first.
func (s *Store) SessionTurns(ctx context.Context, sessionID string) ([]session.Turn, error) {
	return s.TurnsAfter(ctx, sessionID, 0)
}

// DeliverTurns marks the session's pending turns up to seq upto as taken
// by attemptID: the supervisor asked for the turns after upto, so it has
// them.
func (s *Store) DeliverTurns(ctx context.Context, sessionID, attemptID string, upto int, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE turns SET state = $1, attempt_id = $2, delivered_at = $3
		WHERE session_id = $4 AND seq <= $5 AND state = $6`,
		string(session.TurnDelivered), attemptID, ms(now), sessionID, upto, string(session.TurnPending))
	return err
}

// endTurns closes a session's turns as it ends (writeSession, in the end's
// own transaction): a delivered turn is done with the session's outcome,
// a pending one done as never delivered.
// It reports how many requests (not stops) were never delivered: unless
// the session was cancelled, each starts a session of its own
// (ContinueTurns), as a request that waited for it did before turns.
func endTurns(ctx context.Context, tx *sql.Tx, sessionID string, outcome session.Outcome, now time.Time) (int64, error) {
	if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = $1, outcome = $2, done_at = $3 WHERE session_id = $4 AND state = $5`,
		string(session.TurnDone), string(outcome), ms(now), sessionID, string(session.TurnDelivered)); err != nil {
		return 0, err
	}
	var requests int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM turns WHERE session_id = $1 AND state = $2 AND stop = 0`,
		sessionID, string(session.TurnPending)).Scan(&requests); err != nil {
		return 0, err
	}
	_, err := tx.ExecContext(ctx, `UPDATE turns SET state = $1, outcome = $2, done_at = $3 WHERE session_id = $4 AND state = $5`,
		string(session.TurnDone), TurnUndelivered, ms(now), sessionID, string(session.TurnPending))
	return requests, err
}

// ContinueTurns starts a session for each request a session ended
// without delivering (app/turns), linked to its conversation.
const ContinueTurns WorkKind = "continue_turns"

// UndeliveredTurns are the requests (not stops) the session ended without
// delivering, oldest first.
func (s *Store) UndeliveredTurns(ctx context.Context, sessionID string) ([]session.Turn, error) {
	return s.queryTurns(ctx, `WHERE session_id = $1 AND outcome = $2 AND stop = 0 ORDER BY seq`, sessionID, TurnUndelivered)
}

// TurnUndelivered is the outcome of a turn still pending when its session
// ended: the agent never saw it.
const TurnUndelivered = "undelivered"

func (s *Store) queryTurns(ctx context.Context, clause string, args ...any) ([]session.Turn, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+turnColumns+` FROM turns `+clause, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // read-only; rows.Err reports what matters
	var out []session.Turn
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ActiveSessionOn is the id of the oldest unfinished session on an issue
// or pull request ("" for none): the one a message on its thread steers.
func (s *Store) ActiveSessionOn(ctx context.Context, repoID int64, number int) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM sessions WHERE repo_id = $1 AND number = $2 AND state <> 'done'
		ORDER BY created_at, id LIMIT 1`, repoID, number).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// SetRecorder keeps the attempt's flight recorder (contract.Recorder, as
// JSON), as its supervisor last reported it.
func (s *Store) SetRecorder(ctx context.Context, attemptID, recorder string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE attempts SET recorder = $1 WHERE id = $2`, recorder, attemptID)
	return err
}

// Recorder is the attempt's flight recorder as JSON ("" for none).
func (s *Store) Recorder(ctx context.Context, attemptID string) (string, error) {
	var r string
	err := s.db.QueryRowContext(ctx, `SELECT recorder FROM attempts WHERE id = $1`, attemptID).Scan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	return r, err
}

// maxConversationSessions bounds the walk back through a conversation's
// sessions.
const maxConversationSessions = 50

// ConversationTurns are the turns of sess's whole conversation, oldest
// first: each earlier session it continues (TriggerInfo.Continues, decision
// 0072), then sess; each session's request (session.RequestTurn) and then
// its stored turns.
func (s *Store) ConversationTurns(ctx context.Context, sess Session) ([]session.Turn, error) {
	chain := []Session{sess}
	seen := map[string]bool{sess.ID: true}
	for cur := sess; cur.Info().Continues != "" && len(chain) < maxConversationSessions; {
		prev, err := s.GetSession(ctx, cur.Info().Continues)
		if errors.Is(err, ErrNotFound) {
			break // pruned: the history starts where the store's does
		}
		if err != nil {
			return nil, err
		}
		if seen[prev.ID] {
			break
		}
		seen[prev.ID] = true
		chain = append(chain, prev)
		cur = prev
	}
	var out []session.Turn
	for i := len(chain) - 1; i >= 0; i-- {
		x := chain[i]
		out = append(out, session.RequestTurn(x.ID, x.RequesterLogin, x.RequesterID, x.CommentID, x.Instructions, x.CreatedAt))
		turns, err := s.SessionTurns(ctx, x.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, turns...)
	}
	return out, nil
}
