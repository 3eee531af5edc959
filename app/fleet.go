package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
)

// Several replicas share one database (decision 0015). Work items are
// leased (store.Claim), so each step runs on one replica at a time; what
// this file adds is what the fleet must agree on beyond that: which
// replicas are alive, which replica runs a periodic job this interval, and
// what happens to local attempts when their replica dies or stops.

// replicaName names this replica in leases, heartbeats and attempt hosts:
// the host name (for people reading the tables) and randomness (for two
// processes on one host, or a restart, which must not inherit a dead
// process's attempts as its own).
func replicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "inspect"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
	return strings.ReplaceAll(host, "/", "-") + "-" + hex.EncodeToString(b[:])
}

// fleetDue reports whether this replica runs the periodic job name now: one
// replica of the fleet per interval. A store failure says no (the job waits
// for the next poll) and is logged.
func (s *Service) fleetDue(ctx context.Context, name string, every time.Duration) bool {
	ok, err := s.store.ClaimTick(ctx, name, s.WorkerName, s.clock.Now(), every)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", name).Msg("could not claim the periodic job; trying next poll")
		return false
	}
	return ok
}

// periodic runs this replica's periodic duties once: the reconcile, and
// the fleet's redelivery sweep when this replica wins it. Failures are
// logged; the next poll tries again. The heartbeat is not among them: a
// long pass (a thousand target checks, a sweep after an outage) must not
// make this replica look dead.
func (s *Service) periodic(ctx context.Context) {
	if err := s.reconcile(ctx); err != nil {
		s.log.Error().Err(err).Msg("reconcile failed")
	}
	if r := s.cfg.GitHub.Redelivery; r.Interval > 0 && s.fleetDue(ctx, "redelivery_sweep", r.Interval) {
		n, err := s.sweepDeliveries(ctx)
		if err != nil {
			s.log.Warn().Err(err).Msg("redelivery sweep stopped early")
		}
		if n > 0 {
			s.log.Info().Int("redelivered", n).Msg("asked GitHub to redeliver failed deliveries")
		}
	}
}

// periodicLoop runs periodic until stop is closed.
func (s *Service) periodicLoop(stop <-chan struct{}, ctx context.Context) {
	// The jobs log through the context (zerolog.Ctx), as work items do.
	ctx = s.log.With().Str("replica", s.WorkerName).Logger().WithContext(ctx)
	t := time.NewTicker(s.cfg.Workers.PollInterval)
	defer t.Stop()
	for {
		s.periodic(ctx)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// heartbeat records that this replica is alive. beatingSince is when the
// current run of successful beats began (0 after a failure): a replica
// whose own beats failed (the database was away) cannot tell a dead peer
// from one whose beats failed too, so it judges none until it has beaten
// for a whole workers.replica_timeout again.
func (s *Service) heartbeat(ctx context.Context) {
	now := s.clock.Now()
	if err := s.store.Heartbeat(ctx, s.WorkerName, now); err != nil {
		s.beatingSince.Store(0)
		s.log.Warn().Err(err).Msg("heartbeat failed")
		return
	}
	s.beatingSince.CompareAndSwap(0, now.UnixMilli())
	if err := s.store.PruneReplicas(ctx, now.Add(-10*s.cfg.Workers.ReplicaTimeout)); err != nil {
		s.log.Warn().Err(err).Msg("pruning old replicas failed")
	}
}

// heartbeatLoop beats every workers.heartbeat until stop is closed.
func (s *Service) heartbeatLoop(stop <-chan struct{}, ctx context.Context) {
	t := time.NewTicker(s.cfg.Workers.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.heartbeat(ctx)
		}
	}
}

// mayJudgeReplicas reports whether this replica's own heartbeats have
// held long enough to call another replica dead (see heartbeat).
func (s *Service) mayJudgeReplicas(now time.Time) bool {
	since := s.beatingSince.Load()
	return since != 0 && now.Sub(time.UnixMilli(since)) >= s.cfg.Workers.ReplicaTimeout
}

// hostsAttempts reports whether attempts run on this replica's own host,
// and so die with it: the local executor's.
func (s *Service) hostsAttempts() bool {
	return s.executor != nil && s.cfg.Executor.Kind == "local"
}

// replaceDeadHostAttempt deals with an attempt whose replica died: its
// sandbox died with it, so unlike an attempt merely out of sight it is
// certainly gone. It is re-dispatched once, here, while the deadline
// allows; otherwise the session ends error now instead of at its deadline.
func (s *Service) replaceDeadHostAttempt(ctx context.Context, sess store.Session, a store.Attempt) error {
	if sess.Redispatches < 1 && sess.Deadline.Sub(s.clock.Now()) >= minRedispatchTime {
		zerolog.Ctx(ctx).Warn().Str("host", a.Host).Msg("the attempt's replica is dead; re-dispatching")
		return s.redispatch(ctx, sess, a)
	}
	zerolog.Ctx(ctx).Warn().Str("host", a.Host).Int("redispatches", sess.Redispatches).Msg("the attempt's replica is dead; ending the session")
	return s.endRun(ctx, sess.ID, a.ID, store.Errored, "runner_lost", render.HostDiedReply(sess.RequesterLogin, s.cfg.CommandWord))
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
	if !s.hostsAttempts() {
		return
	}
	running, err := s.store.SessionsRunningOn(ctx, s.WorkerName)
	if err != nil {
		s.log.Warn().Err(err).Msg("could not list sessions to hand back; other replicas will find them")
		return
	}
	for _, sess := range running {
		log := s.log.With().Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Logger()
		requeued, err := s.requeue(ctx, sess.ID, sess.AttemptID, func(x *store.Session) { x.Handbacks++ })
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

// foreignLocalAttempt reports whether a is another replica's local attempt:
// one this replica can neither see nor stop, which it must not adopt.
func (s *Service) foreignLocalAttempt(a store.Attempt) bool {
	return a.Host != "" && a.Host != s.WorkerName
}
