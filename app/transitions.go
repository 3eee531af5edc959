package app

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The engine's side of the state machine. The states and the table of
// named transitions are session's (session/state.go); a session's state is
// unexported in the store and changes only by naming a transition
// (Session.Move, Session.End, or the claim's and the result's SQL), which
// the store checks on every write (decision 0045). Each arrow is one store
// transaction that also queues the work that brings GitHub in line (a
// sync, a dispatch), so a crash between the two loses nothing. Who takes
// which:
//
//   - Admit, queued → preparing: admit, inside store.Admit under the
//     admission lock (prepare.go).
//   - Dispatch, preparing → dispatched: markDispatched, once the executor
//     took the attempt (dispatch.go).
//   - Claim, preparing or dispatched → running: claimAttempt
//     (store.ClaimAttempt), when the supervisor claims its attempt over the
//     session channel.
//   - Report, dispatched or running → reporting: store.RecordResult, when
//     the result arrives (the channel's upload, or collect.go's fetch).
//   - Requeue, dispatched or running → preparing: requeue, for a lost
//     attempt's one re-dispatch or a replica's handback.
//   - End, any but done → done: end and endIf (one reply, a sync queued),
//     endRun (only while attemptID is still the session's live attempt),
//     giveUp (a step that kept failing), endForBudget (the model proxy's
//     token budget); elsewhere cancel (commands.go), admit's daily budget
//     (prepare.go), and a refusal at the door (intake.go, a new session).
//
// A session that is done never leaves done: the store refuses it, and the
// functions here return errAlreadyDone first, to do nothing quietly.

func (s *Service) mutate(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return s.store.MutateSession(ctx, id, s.clock.Now(), func(x *store.Session) error { fn(x); return nil })
}

// record stores what a step created on GitHub. When the session has ended
// meanwhile, it also queues a sync in the same transaction, so what was just
// created is concluded rather than left behind.
func (s *Service) record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return s.store.MutateSessionThen(ctx, id, s.clock.Now(), func(x *store.Session) ([]store.NewWork, error) {
		fn(x)
		if x.State() == session.Done {
			return []store.NewWork{{Kind: store.SyncSession}}, nil
		}
		return nil, nil
	})
}

// end ends a session (refused, or an error the user must fix): the store
// first, with a sync queued in the same transaction that posts the one reply
// and concludes anything an earlier attempt created.
func (s *Service) end(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error {
	_, err := s.endIf(ctx, id, func(*store.Session) bool { return true }, outcome, reason, reply)
	return err
}

// endIf ends a session that is not done yet and passes cond, queueing the
// sync that tells GitHub, in one transaction. It reports whether it did.
func (s *Service) endIf(ctx context.Context, id string, cond func(*store.Session) bool, outcome session.Outcome, reason, reply string) (bool, error) {
	_, err := s.store.MutateSession(ctx, id, s.clock.Now(), func(x *store.Session) error {
		if x.State() == session.Done || !cond(x) {
			return errAlreadyDone
		}
		return x.End(outcome, reason, reply)
	}, store.NewWork{Kind: store.SyncSession})
	if errors.Is(err, errAlreadyDone) {
		return false, nil
	}
	return err == nil, err
}

// giveUp ends the session of work that failed for good, so nothing stays
// stuck: the session is done with outcome error, and a sync (with its own
// retries, since GitHub may be why we failed) tells the requester and
// concludes the check run.
func (s *Service) giveUp(ctx context.Context, w *store.Work, refusal *ghclient.Refusal) {
	if w.SessionID == "" || w.Kind == store.SyncSession {
		return
	}
	ended, err := s.store.MutateSession(ctx, w.SessionID, s.clock.Now(), func(x *store.Session) error {
		if x.State() == session.Done {
			return errAlreadyDone
		}
		if err := x.End(session.Errored, "internal_error", ""); err != nil {
			return err
		}
		x.Detail = render.ErrorReply(*x)
		if refusal != nil && x.CommitSHA == "" {
			x.Reason, x.Detail = "api_refused", render.RefusalReply(x.RequesterLogin, refusal.Service, refusal.Status, refusal.Message)
		}
		return nil
	}, store.NewWork{Kind: store.SyncSession})
	switch {
	case err == nil:
		s.stopAttempt(ctx, ended.AttemptID)
	case !errors.Is(err, errAlreadyDone):
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not end the failed session")
	}
}

// errAlreadyDone aborts a mutation that has nothing to do.
var errAlreadyDone = errors.New("session already done")

// endRun ends a session whose attempt attemptID is still its current one
// and still running (preparing, dispatched or running), then stops that
// attempt. A session that moved on meanwhile (its result came and is being
// reported, it ended, it was re-dispatched) is left alone: the run's news
// is stale.
func (s *Service) endRun(ctx context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error {
	ended, err := s.endIf(ctx, sessionID, func(x *store.Session) bool {
		return x.AttemptID == attemptID && (x.State() == session.Preparing || x.State() == session.Dispatched || x.State() == session.Running)
	}, outcome, reason, reply)
	if ended {
		s.stopAttempt(ctx, attemptID)
	}
	return err
}

// requeue puts a session back to preparing, with a dispatch (and a sync,
// for the check run and the progress comment) queued in the same
// transaction, if attemptID is still its current, running attempt; count
// records why. It reports whether it did.
func (s *Service) requeue(ctx context.Context, sessionID, attemptID string, count func(*store.Session)) (bool, error) {
	_, err := s.store.MutateSession(ctx, sessionID, s.clock.Now(), func(x *store.Session) error {
		if x.State() != session.Dispatched && x.State() != session.Running || x.AttemptID != attemptID {
			return errAlreadyDone
		}
		if err := x.Move(session.Requeue); err != nil {
			return err
		}
		count(x)
		return nil
	}, store.NewWork{Kind: store.SyncSession}, store.NewWork{Kind: store.DispatchSession})
	if errors.Is(err, errAlreadyDone) {
		return false, nil
	}
	return err == nil, err
}

func (s *Service) markDispatched(ctx context.Context, id string, deadline time.Time) error {
	_, err := s.mutate(ctx, id, func(x *store.Session) {
		// A session no longer preparing (ended meanwhile, or dispatched
		// already) keeps its state: the table refuses the move.
		if err := x.Move(session.Dispatch); err == nil {
			x.Deadline = deadline
		}
	})
	return err
}

// endForBudget ends a session whose tokens passed its budget: outcome
// error with a clear reason, and its attempt stopped (the supervisor
// uploads partial evidence, which arrives too late to change the ending).
func (s *Service) endForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64) {
	log := zerolog.Ctx(ctx)
	ended, err := s.store.MutateSession(ctx, a.SessionID, s.clock.Now(), func(x *store.Session) error {
		if x.State() == session.Done {
			return errAlreadyDone
		}
		if err := x.End(session.Errored, "token_budget", ""); err != nil {
			return err
		}
		x.Detail = render.TokenBudgetReply(x.RequesterLogin, used.TotalTokens, budget)
		return nil
	}, store.NewWork{Kind: store.SyncSession})
	if err != nil {
		if err != errAlreadyDone {
			log.Error().Err(err).Msg("ending the session over its token budget failed")
		}
		return
	}
	s.log.Info().Str("session_id", ended.ID).Str("delivery_id", ended.DeliveryID).Int64("tokens", used.TotalTokens).Int64("budget", budget).Msg("session stopped: token budget spent")
	s.stopAttempt(ctx, ended.AttemptID)
	s.wakeWorkers()
}

// claimAttempt exchanges an attempt's single-use claim code for its session
// token. In the same transaction the session, if this is still its attempt
// and it is preparing or dispatched, becomes running, with a sync queued to
// tell GitHub.
func (s *Service) claimAttempt(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error) {
	a, err := s.store.ClaimAttempt(ctx, attemptID, claimCode, sessionToken, s.clock.Now())
	if err == nil {
		s.observeAgentStart(ctx, a)
	}
	return a, err
}
