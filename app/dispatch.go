package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// Executor is runner.Executor: cmd/ picks runner/local on the app's host
// or runner/buildkite in production. Results never come through it; they
// arrive over the session channel.
type Executor = runner.Executor

// dispatch builds a prepared session's spec and starts its attempt. A
// replay finds the attempt it created and only starts what did not start.
func (s *Service) dispatch(ctx context.Context, w *store.Work) error {
	sess, err := s.store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	if sess.State() != session.Preparing || s.executor == nil {
		return nil
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Logger()
	ctx = log.WithContext(ctx)
	number := 1
	if sess.AttemptID != "" {
		a, err := s.store.GetAttempt(ctx, sess.AttemptID)
		if err != nil {
			return err
		}
		number = a.Number + 1
		switch {
		case a.State == store.AttemptEnded:
			// Ended: lost and re-dispatched (see reconcile.Reconciler.Redispatch), or replaced
			// below by an earlier run. A fresh attempt follows.
		case foreignLocalAttempt(s.WorkerName, a):
			// Another replica's sandbox, handed back or dead with it: never
			// adopted, since this replica could neither watch nor stop it.
			if err := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); err != nil {
				return err
			}
		case a.ExternalID != "":
			// A replay: the baseline's link may be what did not happen.
			s.baselines.Link(ctx, sess, a)
			return s.transitions.MarkDispatched(ctx, sess.ID, a.Deadline)
		default:
			// An earlier run created the attempt and may have started it
			// without recording that: adopt the run if the executor can
			// find it, else end the attempt rather than guess, and make a
			// fresh one below.
			if found, err := s.adoptRun(ctx, a); err != nil || found {
				return err
			}
			if err := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); err != nil {
				return err
			}
		}
	}
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return err
	}
	spec, reply, err := s.buildSpec(ctx, c, sess)
	if err != nil {
		return err
	}
	if reply != "" {
		return s.transitions.End(ctx, sess.ID, session.Errored, "config_invalid", reply)
	}
	if (sess.Redispatches > 0 || sess.Handbacks > 0) && !sess.Deadline.IsZero() {
		// A re-dispatch or a handback never buys time, however many tries
		// its start takes.
		spec.Limits.Deadline = sess.Deadline.UTC()
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	claim := contract.NewSecret()
	a := store.Attempt{ID: spec.AttemptID, SessionID: sess.ID, Number: number, Deadline: spec.Limits.Deadline, Spec: string(specJSON), Model: spec.Agent.Model}
	if hostsAttempts(s.executor, s.cfg.Executor.Kind) {
		// Its sandbox lives and dies with this replica (see
		// replaceDeadHostAttempt).
		a.Host = s.WorkerName
	}
	if err := s.store.CreateAttempt(ctx, a, claim, s.clock.Now()); err != nil {
		return err
	}
	ext, err := s.executor.Start(ctx, runner.Attempt{
		SessionID: sess.ID, AttemptID: a.ID, Number: a.Number, ChannelURL: s.channelURL, ClaimCode: claim, Deadline: a.Deadline,
		RequesterLogin: sess.RequesterLogin, RequesterID: sess.RequesterID,
	})
	if errors.Is(err, runner.ErrAtCapacity) {
		// Not a failure: the session waits for a free slot. The attempt
		// made for it is ended, and a fresh one is made on the next try.
		if endErr := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); endErr != nil {
			return endErr
		}
		return &postponed{after: s.cfg.Workers.PollInterval * 5, why: "the executor is at capacity"}
	}
	if err != nil {
		return fmt.Errorf("starting the attempt: %w", err)
	}
	if err := s.store.SetAttemptExternalID(ctx, a.ID, ext, s.clock.Now()); err != nil {
		return err
	}
	log.Info().Str("attempt_id", a.ID).Str("external_id", ext).Msg("session dispatched")
	// The base's verify, after the session's own attempt started: a
	// baseline finding the executor at capacity waits, this never does.
	s.baselines.Link(ctx, sess, a)
	if err := s.transitions.MarkDispatched(ctx, sess.ID, a.Deadline); err != nil {
		return err
	}
	// A cancel may have ended the session while the attempt was starting;
	// then nobody else knows to stop it.
	if now, err := s.store.GetSession(ctx, sess.ID); err == nil && now.State() == session.Done {
		s.stopAttempt(ctx, a.ID)
	}
	return nil
}

// adoptRun records the run an executor started for an attempt whose start
// was not recorded. It reports whether there was one.
func (s *Service) adoptRun(ctx context.Context, a store.Attempt) (bool, error) {
	finder, ok := s.executor.(runner.AttemptFinder)
	if !ok {
		return false, nil
	}
	ext, found, err := finder.Find(ctx, a.SessionID, a.Number)
	if err != nil || !found {
		return false, err
	}
	if err := s.store.SetAttemptExternalID(ctx, a.ID, ext, s.clock.Now()); err != nil {
		return false, err
	}
	zerolog.Ctx(ctx).Info().Str("attempt_id", a.ID).Str("external_id", ext).Msg("adopted a run started earlier")
	return true, s.transitions.MarkDispatched(ctx, a.SessionID, a.Deadline)
}
