package app

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/fleet"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/reconcile"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The fleet (app/fleet) keeps the replica table and the periodic schedule;
// what this file keeps is the engine's side of it: what becomes of local
// attempts when their replica dies or stops, and what the periodic loop
// runs each poll.

// newFleet wires this replica's membership of the fleet from the service's
// parts.
func newFleet(o Options) *fleet.Fleet {
	return fleet.New(fleet.Options{
		Name: o.WorkerName, Store: o.Store, GitHub: o.GitHub, Clock: o.Clock, Logger: o.Logger,
		ClassifyError: func(err error, now time.Time) (time.Duration, bool) {
			wait, refusal := ghclient.ClassifyError(err, now)
			return wait, refusal != nil
		},
		Heartbeat: o.Config.Workers.Heartbeat, ReplicaTimeout: o.Config.Workers.ReplicaTimeout,
		PollInterval: o.Config.Workers.PollInterval, Redelivery: o.Config.GitHub.Redelivery,
		OnFleetSize: o.OnFleetSize,
	})
}

// SweepDeliveries runs the redelivery sweep once, now, whatever the fleet's
// schedule: for tests, and for an operator recovering after an outage.
func (s *Service) SweepDeliveries(ctx context.Context) (int, error) {
	return s.fleet.SweepDeliveries(ctx)
}

// hostsAttempts reports whether attempts run on this replica's own host,
// and so die with it: the local executor's.
func hostsAttempts(ex Executor, kind string) bool {
	return ex != nil && kind == "local"
}

// replaceDeadHostAttempt deals with an attempt whose replica died: its
// sandbox died with it, so unlike an attempt merely out of sight it is
// certainly gone. It is re-dispatched once, here, while the deadline
// allows; otherwise the session ends error now instead of at its deadline.
func (s *Service) replaceDeadHostAttempt(ctx context.Context, sess store.Session, a store.Attempt) error {
	if sess.Redispatches < 1 && sess.Deadline.Sub(s.clock.Now()) >= reconcile.MinRedispatchTime {
		zerolog.Ctx(ctx).Warn().Str("host", a.Host).Msg("the attempt's replica is dead; re-dispatching")
		return s.reconciler.Redispatch(ctx, sess, a)
	}
	zerolog.Ctx(ctx).Warn().Str("host", a.Host).Int("redispatches", sess.Redispatches).Msg("the attempt's replica is dead; ending the session")
	return s.transitions.EndRun(ctx, sess.ID, a.ID, session.Errored, "runner_lost", render.HostDiedReply(sess.RequesterLogin, s.cfg.CommandWord))
}

// handBack gives this replica's running local attempts to the fleet before
// it stops: each session goes back to preparing with a dispatch queued, so
// a live replica runs it again (the attempt's sandbox is about to be
// stopped with this process). A handback is not the session's failure, so
// it does not use up the one re-dispatch a dead replica's session gets; it
// does keep the deadline (see dispatch), so rolling restarts never buy a
// session time. What cannot be handed back (the store is down) is found by
// the others when this replica's heartbeat ages out.
func (s *Service) handBack(ctx context.Context) {
	if !hostsAttempts(s.executor, s.cfg.Executor.Kind) {
		return
	}
	running, err := s.store.SessionsRunningOn(ctx, s.WorkerName)
	if err != nil {
		s.log.Warn().Err(err).Msg("could not list sessions to hand back; other replicas will find them")
		return
	}
	for _, sess := range running {
		log := s.log.With().Str("session_id", sess.ID).Str("delivery_id", sess.DeliveryID).Str("attempt_id", sess.AttemptID).Logger()
		requeued, err := s.transitions.Requeue(ctx, sess.ID, sess.AttemptID, func(x *store.Session) { x.Handbacks++ })
		if err != nil {
			log.Warn().Err(err).Msg("could not hand the session back")
		}
		if !requeued {
			continue
		}
		log.Info().Msg("shutting down: session handed back to the fleet")
		s.stopAttempt(log.WithContext(ctx), sess.AttemptID)
	}
}

// foreignLocalAttempt reports whether a is a local attempt of a replica
// other than self: one this replica can neither see nor stop, which it
// must not adopt.
func foreignLocalAttempt(self string, a store.Attempt) bool {
	return a.Host != "" && a.Host != self
}
