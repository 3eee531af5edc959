package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Acceptance is everything one webhook delivery creates. It is written in
// one transaction, or not at all.
type Acceptance struct {
	DeliveryID string
	Event      string
	At         time.Time
	// CommentID, when non-zero, claims the comment: a second acceptance of
	// the same comment (under another delivery id) creates nothing.
	CommentID int64
	// ClaimKey, when set, claims a trigger that is not an issue comment
	// (a review comment): a second acceptance of it creates nothing.
	ClaimKey string
	// Session, when set, is created in the state it carries.
	Session *Session
	// Work is queued; items with an empty SessionID get Session's id.
	Work []NewWork
}

// AcceptResult says what Accept did.
type AcceptResult int

const (
	// Accepted means everything was written.
	Accepted AcceptResult = iota
	// DuplicateDelivery means the delivery id was seen before: nothing new.
	DuplicateDelivery
	// DuplicateComment means the comment was claimed before: the delivery is
	// recorded, nothing else.
	DuplicateComment
)

func (r AcceptResult) String() string {
	switch r {
	case Accepted:
		return "accepted"
	case DuplicateDelivery:
		return "duplicate_delivery"
	case DuplicateComment:
		return "duplicate_comment"
	}
	return fmt.Sprintf("AcceptResult(%d)", int(r))
}

// acceptTimeout bounds one group commit.
const acceptTimeout = 5 * time.Second

type acceptReq struct {
	a    Acceptance
	res  AcceptResult
	err  error
	lead bool
	done chan struct{}
}

// Accept durably records a delivery and what it creates, and returns only
// after the commit is on disk.
//
// Concurrent calls are group-committed: the first caller becomes the leader
// and commits everything queued in one transaction (one fsync), then hands
// leadership to the next waiter. This is what lets the durable path keep up
// with a bare dispatcher; see docs/decisions/0002-group-commit.md.
func (s *Store) Accept(ctx context.Context, a Acceptance) (AcceptResult, error) {
	req := &acceptReq{a: a, done: make(chan struct{})}
	b := &s.batch
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if b.committing {
		b.mu.Unlock()
		// Waiting ignores ctx on purpose: once queued, the request is part of
		// a transaction that may already be committing, and the caller must
		// learn its fate.
		<-req.done
		if !req.lead {
			return req.res, req.err
		}
		b.mu.Lock()
	}
	b.committing = true
	batch := b.pending
	b.pending = nil
	b.mu.Unlock()

	s.commitBatch(ctx, batch)

	b.mu.Lock()
	if len(b.pending) > 0 {
		next := b.pending[0]
		next.lead = true
		close(next.done)
	} else {
		b.committing = false
	}
	b.mu.Unlock()
	return req.res, req.err
}

func (s *Store) commitBatch(ctx context.Context, batch []*acceptReq) {
	// The leader's context must not abort its followers' writes, but a hung
	// database must not hold every webhook either: past acceptTimeout the
	// batch fails, and each waiter answers 503 within GitHub's 10 s.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), acceptTimeout)
	defer cancel()
	finish := func() {
		for _, r := range batch {
			if !r.lead {
				close(r.done)
			}
		}
	}
	defer finish()

	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, r := range batch {
			res, err := s.acceptOne(ctx, tx, r.a)
			if err != nil {
				return err
			}
			r.res = res
		}
		return nil
	})
	if err == nil {
		return
	}
	if len(batch) == 1 {
		batch[0].err = err
		return
	}
	// One bad acceptance must not fail its neighbours: retry each alone.
	for _, r := range batch {
		r.err = s.inTx(ctx, func(tx *sql.Tx) error {
			res, err := s.acceptOne(ctx, tx, r.a)
			r.res = res
			return err
		})
	}
}

// acceptStmts are prepared once: re-parsing SQL on every webhook was a
// visible share of the acknowledgement's CPU time.
type acceptStmts struct {
	delivery, claim, session, work *sql.Stmt
	// cachedConfig runs on the reader pool: the request path's one read.
	cachedConfig *sql.Stmt
}

func (s *Store) prepareAccept(ctx context.Context) error {
	var err error
	if s.accept.delivery, err = s.db.PrepareContext(ctx,
		`INSERT INTO deliveries (delivery_id, event, received_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`); err != nil {
		return err
	}
	if s.accept.claim, err = s.db.PrepareContext(ctx,
		`INSERT INTO command_claims (comment_id, delivery_id, claimed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`); err != nil {
		return err
	}
	if s.accept.session, err = s.db.PrepareContext(ctx, insertSessionSQL); err != nil {
		return err
	}
	if s.accept.work, err = s.db.PrepareContext(ctx, insertWorkSQL); err != nil {
		return err
	}
	s.accept.cachedConfig, err = s.reader.PrepareContext(ctx, cachedConfigSQL)
	return err
}

func (s *Store) acceptOne(ctx context.Context, tx *sql.Tx, a Acceptance) (AcceptResult, error) {
	at := ms(a.At)
	res, err := tx.StmtContext(ctx, s.accept.delivery).ExecContext(ctx, a.DeliveryID, a.Event, at)
	if err != nil {
		return 0, fmt.Errorf("recording delivery: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return DuplicateDelivery, nil
	}
	if a.CommentID != 0 {
		res, err := tx.StmtContext(ctx, s.accept.claim).ExecContext(ctx, a.CommentID, a.DeliveryID, at)
		if err != nil {
			return 0, fmt.Errorf("claiming comment: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 0 {
			return DuplicateComment, nil
		}
	}
	if a.ClaimKey != "" {
		sid := ""
		if a.Session != nil {
			sid = a.Session.ID
		}
		if claimed, err := claim(ctx, tx, a.ClaimKey, sid, a.At); err != nil || !claimed {
			return DuplicateComment, err
		}
	}
	sessionID := ""
	if a.Session != nil {
		if err := s.insertSession(ctx, tx, a.Session, a.At); err != nil {
			return 0, err
		}
		sessionID = a.Session.ID
	}
	for _, w := range a.Work {
		if w.SessionID == "" {
			w.SessionID = sessionID
		}
		if err := s.insertWork(ctx, tx, w, a.At); err != nil {
			return 0, err
		}
	}
	return Accepted, nil
}

// Enqueue queues work outside of a delivery (follow-up steps, retries).
func (s *Store) Enqueue(ctx context.Context, w NewWork, now time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.insertWork(ctx, tx, w, now) })
}

// CreateSession creates a session with its first work items, outside of a
// delivery (for example `/inspect retry`, whose comment claim is the
// delivery's).
func (s *Store) CreateSession(ctx context.Context, sess *Session, work []NewWork, now time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.insertSessionWork(ctx, tx, sess, work, now) })
}

// insertSessionWork inserts a session and its first work items.
func (s *Store) insertSessionWork(ctx context.Context, tx *sql.Tx, sess *Session, work []NewWork, now time.Time) error {
	if err := s.insertSession(ctx, tx, sess, now); err != nil {
		return err
	}
	for _, w := range work {
		if w.SessionID == "" {
			w.SessionID = sess.ID
		}
		if err := s.insertWork(ctx, tx, w, now); err != nil {
			return err
		}
	}
	return nil
}

// DeliverySeen reports whether a delivery id was recorded.
func (s *Store) DeliverySeen(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE delivery_id = $1`, id).Scan(&n)
	return n > 0, err
}
