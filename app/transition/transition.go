// Package transition is the engine's side of every change of a session's
// state. The states and the table of named transitions are session's
// (session/state.go); a session's state is unexported in the store and
// changes only by naming a transition (Session.Move, Session.End, or the
// claim's and the result's SQL), which the store checks on every write
// (decision 0045). Each arrow here is one store transaction that also
// queues the work that brings GitHub in line (a sync, a dispatch), so a
// crash between the two loses nothing. Who takes which:
//
//   - Admit, queued → preparing: inside store.Admit under the admission
//     lock (app/prepare.go).
//   - Dispatch, preparing → dispatched: MarkDispatched, once the executor
//     took the attempt (app/dispatch.go).
//   - Claim, preparing or dispatched → running: store.ClaimAttempt, when
//     the supervisor claims its attempt over the session channel
//     (app/transitions.go, claimAttempt).
//   - Report, dispatched or running → reporting: store.RecordResult, when
//     the result arrives (the channel's upload, or app/collect's fetch).
//   - Requeue, dispatched or running → preparing: Requeue, for a lost
//     attempt's one re-dispatch or a replica's handback.
//   - End, any but done → done: End and EndIf (one reply, a sync queued),
//     EndRun (only while the attempt is still the session's live one),
//     GiveUp (a step that kept failing), EndForBudget (the model proxy's
//     token budget); elsewhere cancel (app/commands), admit's daily
//     budget (app/prepare.go), and a refusal at the door (app/intake.go, a
//     new session).
//
// A session that is done never leaves done: the store refuses it, and the
// functions here return ErrAlreadyDone first, to do nothing quietly.
// Handlers of work receive a *Writer (decision 0049); it is the store, the
// clock, and what stops an attempt, nothing of the engine besides.
package transition

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Writer makes the engine's state changes, each one store transaction
// with the work that follows it.
type Writer struct {
	// Store keeps the sessions and the work queue.
	Store *store.Store
	// Now is the engine's clock.
	Now func() time.Time
	// StopAttempt ends an attempt in the store, revokes its read tokens
	// and cancels it on its executor (best effort: it returns nothing).
	StopAttempt func(ctx context.Context, attemptID string)
	// Wake tells this replica's workers that work is ready.
	Wake func()
	// Log is the engine's logger, for what happens outside a request's
	// or a work item's own.
	Log zerolog.Logger
}

// ErrAlreadyDone aborts a mutation that has nothing to do.
var ErrAlreadyDone = errors.New("session already done")

// Mutate changes a session's fields (its state only by a named move).
func (t *Writer) Mutate(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return t.Store.MutateSession(ctx, id, t.Now(), func(x *store.Session) error { fn(x); return nil })
}

// Record stores what a step created on GitHub. When the session has ended
// meanwhile, it also queues a sync in the same transaction, so what was just
// created is concluded rather than left behind.
func (t *Writer) Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return t.Store.MutateSessionThen(ctx, id, t.Now(), func(x *store.Session) ([]store.NewWork, error) {
		fn(x)
		if x.State() == session.Done {
			return []store.NewWork{{Kind: store.SyncSession}}, nil
		}
		return nil, nil
	})
}

// End ends a session (refused, or an error the user must fix): the store
// first, with a sync queued in the same transaction that posts the one reply
// and concludes anything an earlier attempt created.
func (t *Writer) End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error {
	_, err := t.EndIf(ctx, id, func(*store.Session) bool { return true }, outcome, reason, reply)
	return err
}

// EndIf ends a session that is not done yet and passes cond, queueing the
// sync that tells GitHub, in one transaction. It reports whether it did.
func (t *Writer) EndIf(ctx context.Context, id string, cond func(*store.Session) bool, outcome session.Outcome, reason, reply string) (bool, error) {
	_, err := t.Store.MutateSession(ctx, id, t.Now(), func(x *store.Session) error {
		if x.State() == session.Done || !cond(x) {
			return ErrAlreadyDone
		}
		return x.End(outcome, reason, reply)
	}, store.NewWork{Kind: store.SyncSession})
	if errors.Is(err, ErrAlreadyDone) {
		return false, nil
	}
	return err == nil, err
}

// GiveUp ends the session of work that failed for good, so nothing stays
// stuck: the session is done with outcome error, and a sync (with its own
// retries, since GitHub may be why we failed) tells the requester and
// concludes the check run. A prepare item that failed after its session
// was admitted leaves the session alone: what failed is announcing it (the
// check run, the progress comment; decision 0048), and the session, its
// dispatch already queued, runs on; its sync says how it ends.
func (t *Writer) GiveUp(ctx context.Context, w *store.Work, refusal *ghclient.Refusal) {
	if w.SessionID == "" || w.Kind == store.SyncSession {
		return
	}
	ended, err := t.Store.MutateSession(ctx, w.SessionID, t.Now(), func(x *store.Session) error {
		if x.State() == session.Done {
			return ErrAlreadyDone
		}
		if w.Kind == store.PrepareSession && !x.AdmittedAt.IsZero() {
			zerolog.Ctx(ctx).Warn().Msg("announcing the admitted session failed for good; it runs on without it")
			return ErrAlreadyDone
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
		t.StopAttempt(ctx, ended.AttemptID)
	case !errors.Is(err, ErrAlreadyDone):
		zerolog.Ctx(ctx).Error().Err(err).Msg("could not end the failed session")
	}
}

// EndRun ends a session whose attempt attemptID is still its current one
// and still running (preparing, dispatched or running), then stops that
// attempt. A session that moved on meanwhile (its result came and is being
// reported, it ended, it was re-dispatched) is left alone: the run's news
// is stale.
func (t *Writer) EndRun(ctx context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error {
	ended, err := t.EndIf(ctx, sessionID, func(x *store.Session) bool {
		return x.AttemptID == attemptID && (x.State() == session.Preparing || x.State() == session.Dispatched || x.State() == session.Running)
	}, outcome, reason, reply)
	if ended {
		t.StopAttempt(ctx, attemptID)
	}
	return err
}

// Requeue puts a session back to preparing, with a dispatch (and a sync,
// for the check run and the progress comment) queued in the same
// transaction, if attemptID is still its current, running attempt; count
// records why. It reports whether it did.
func (t *Writer) Requeue(ctx context.Context, sessionID, attemptID string, count func(*store.Session)) (bool, error) {
	_, err := t.Store.MutateSession(ctx, sessionID, t.Now(), func(x *store.Session) error {
		if x.State() != session.Dispatched && x.State() != session.Running || x.AttemptID != attemptID {
			return ErrAlreadyDone
		}
		if err := x.Move(session.Requeue); err != nil {
			return err
		}
		count(x)
		return nil
	}, store.NewWork{Kind: store.SyncSession}, store.NewWork{Kind: store.DispatchSession})
	if errors.Is(err, ErrAlreadyDone) {
		return false, nil
	}
	return err == nil, err
}

// MarkDispatched moves a preparing session to dispatched, with the
// attempt's deadline.
func (t *Writer) MarkDispatched(ctx context.Context, id string, deadline time.Time) error {
	_, err := t.Mutate(ctx, id, func(x *store.Session) {
		// A session no longer preparing (ended meanwhile, or dispatched
		// already) keeps its state: the table refuses the move.
		if err := x.Move(session.Dispatch); err == nil {
			x.Deadline = deadline
		}
	})
	return err
}

// EndForMoneyBudget ends a session whose repository's or installation's
// day's spend reached a money budget (d, policy.MoneyBudget's refusal), as
// EndForBudget ends one over its token budget: outcome error, reason
// money_budget, and its attempt stopped.
func (t *Writer) EndForMoneyBudget(ctx context.Context, a store.Attempt, d policy.Decision) {
	log := zerolog.Ctx(ctx)
	ended, err := t.Store.MutateSession(ctx, a.SessionID, t.Now(), func(x *store.Session) error {
		if x.State() == session.Done {
			return ErrAlreadyDone
		}
		if err := x.End(session.Errored, string(policy.ReasonMoneyBudget), ""); err != nil {
			return err
		}
		x.Detail = render.MoneyBudgetReply(x.RequesterLogin, d)
		return nil
	}, store.NewWork{Kind: store.SyncSession})
	if err != nil {
		if err != ErrAlreadyDone {
			log.Error().Err(err).Msg("ending the session over a money budget failed")
		}
		return
	}
	t.Log.Info().Str("session_id", ended.ID).Str("delivery_id", ended.DeliveryID).Str("scope", string(d.MoneyScope)).
		Float64("spent_usd", d.Spent).Float64("budget_usd", d.MoneyCap).Msg("session stopped: money budget spent")
	t.StopAttempt(ctx, ended.AttemptID)
	t.Wake()
}

// EndForBudget ends a session whose tokens passed its budget: outcome
// error with a clear reason, and its attempt stopped (the supervisor
// uploads partial evidence, which arrives too late to change the ending).
func (t *Writer) EndForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64) {
	log := zerolog.Ctx(ctx)
	ended, err := t.Store.MutateSession(ctx, a.SessionID, t.Now(), func(x *store.Session) error {
		if x.State() == session.Done {
			return ErrAlreadyDone
		}
		if err := x.End(session.Errored, "token_budget", ""); err != nil {
			return err
		}
		x.Detail = render.TokenBudgetReply(x.RequesterLogin, used.TotalTokens, budget)
		return nil
	}, store.NewWork{Kind: store.SyncSession})
	if err != nil {
		if err != ErrAlreadyDone {
			log.Error().Err(err).Msg("ending the session over its token budget failed")
		}
		return
	}
	t.Log.Info().Str("session_id", ended.ID).Str("delivery_id", ended.DeliveryID).Int64("tokens", used.TotalTokens).Int64("budget", budget).Msg("session stopped: token budget spent")
	t.StopAttempt(ctx, ended.AttemptID)
	t.Wake()
}
