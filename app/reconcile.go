package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// deadlineGrace is how long past its deadline a session's result is still
// awaited before reconcile ends it: the supervisor's finish timeout (30 s)
// with room for the upload.
const deadlineGrace = 2 * time.Minute

// minRedispatchTime is the least time before the deadline for which a lost
// attempt is re-dispatched: less cannot fetch, run and report.
const minRedispatchTime = 2 * time.Minute

// reconcileBatch bounds the sessions one reconcile pass looks at.
const reconcileBatch = 1000

// reconcile makes sure every session reaches an end. Every poll: sessions
// past their deadline end timed_out (their run is cancelled; the check run
// concludes through the sync the ending queues), and the local executor is
// asked about this replica's attempts (and the store about other
// replicas' liveness). Once per workers.reconcile_interval across the
// fleet (store.ClaimTick): Buildkite about unfinished builds, and GitHub
// about each session's target.
func (s *Service) reconcile(ctx context.Context) error {
	if s.cfg.Executor.Kind != "buildkite" || s.fleet.Due(ctx, "reconcile_attempts", s.cfg.Workers.ReconcileInterval) {
		if err := s.reconcileAttempts(ctx); err != nil {
			return err
		}
	}
	if s.fleet.Due(ctx, "reconcile_targets", s.cfg.Workers.ReconcileInterval) {
		if err := s.reconcileTargets(ctx); err != nil {
			return err
		}
	}
	if s.fleet.Due(ctx, "prune_artifacts", s.cfg.Workers.ReconcileInterval) {
		// artifacts.retention: the store is shared, so one replica prunes.
		n, err := s.store.PruneArtifacts(ctx, s.clock.Now().Add(-s.cfg.Artifacts.Retention))
		if err != nil {
			return err
		}
		if n > 0 {
			zerolog.Ctx(ctx).Info().Int64("artifacts", n).Msg("pruned artifacts past their retention")
		}
		// The dashboard's live output goes with them (decision 0038).
		if n, err = s.store.PruneOutput(ctx, s.clock.Now().Add(-s.cfg.Artifacts.Retention)); err != nil {
			return err
		}
		if n > 0 {
			zerolog.Ctx(ctx).Info().Int64("chunks", n).Msg("pruned live output past the artifacts' retention")
		}
	}
	// Snapshot scheduling is once per repo per refresh across the fleet by
	// itself: ScheduleSnapshotBuilds claims each repo's next build under a
	// lock.
	if err := s.snapshots.QueueBuilds(ctx); err != nil {
		return err
	}
	// The grace lets a supervisor that stopped at the deadline still upload
	// its (timed_out, partial) evidence, which says more than we can. Every
	// replica looks, every time: the query is cheap, and ending is a
	// conditional mutation, so two replicas ending one session end it once.
	overdue, err := s.store.SessionsPastDeadline(ctx, s.clock.Now().Add(-deadlineGrace), 50)
	if err != nil {
		return err
	}
	for _, sess := range overdue {
		if err := s.transitions.EndRun(ctx, sess.ID, sess.AttemptID, session.TimedOut, "timed_out", render.TimedOutReply(sess.RequesterLogin)); err != nil {
			return err
		}
	}
	return nil
}

// reconcileAttempts asks the executor about sessions whose attempt has not
// reported. A run whose start was not recorded is adopted; a run that
// finished without uploading has its result read from the executor (or
// the session ends runner_lost); a run the executor lost is re-dispatched
// once while the deadline allows, and otherwise left for the deadline. One
// session's trouble is logged and does not hold up the others.
func (s *Service) reconcileAttempts(ctx context.Context) error {
	if s.executor == nil {
		return nil // the control plane alone: nothing to ask
	}
	s.stopOrphans(ctx)
	active, err := s.store.SessionsRunning(ctx, reconcileBatch)
	if err != nil {
		return err
	}
	for _, sess := range active {
		log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("delivery_id", sess.DeliveryID).Str("attempt_id", sess.AttemptID).Logger()
		if err := s.reconcileAttempt(log.WithContext(ctx), sess); err != nil {
			log.Warn().Err(err).Msg("reconciling the attempt failed; trying again next time")
		}
	}
	return nil
}

// stopOrphans cancels this host's supervisors whose attempts the store has
// ended by another path: another replica took the session over while this
// one could not beat (the database was out of reach), or a cancel that
// never reached the process. Their results would be refused anyway; this
// frees the slot and the sandbox.
func (s *Service) stopOrphans(ctx context.Context) {
	lister, ok := s.executor.(runner.RunningLister)
	if !ok {
		return
	}
	for ext, attemptID := range lister.Running(ctx) {
		a, err := s.store.GetAttempt(ctx, attemptID)
		// A supervisor whose result just arrived is still exiting: only
		// one whose attempt ended longer ago than it takes to finish
		// (deadlineGrace) is an orphan.
		if err != nil || a.State != store.AttemptEnded || s.clock.Now().Sub(a.UpdatedAt) < deadlineGrace {
			continue
		}
		zerolog.Ctx(ctx).Warn().Str("attempt_id", attemptID).Str("external_id", ext).Msg("stopping a supervisor whose attempt has ended")
		if err := s.executor.Cancel(ctx, ext); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("attempt_id", attemptID).Msg("stopping the orphaned supervisor failed")
		}
	}
}

func (s *Service) reconcileAttempt(ctx context.Context, sess store.Session) error {
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.State == store.AttemptEnded {
		return err // an ended attempt's result is being reported
	}
	if s.foreignLocalAttempt(a) {
		// Another replica's local attempt: only that replica can see it,
		// and its own reconcile does. Once the replica is dead, its sandbox
		// died with it.
		now := s.clock.Now()
		if !s.fleet.MayJudgeReplicas(now) {
			return nil
		}
		alive, err := s.store.ReplicaAlive(ctx, a.Host, now.Add(-s.cfg.Workers.ReplicaTimeout))
		if err != nil || alive {
			return err
		}
		return s.replaceDeadHostAttempt(ctx, sess, a)
	}
	if a.ExternalID == "" {
		// The supervisor claimed the attempt (so the session runs) before
		// its start was recorded: find the run.
		_, err := s.adoptRun(ctx, a)
		return err
	}
	st, err := s.executor.State(ctx, a.ExternalID)
	if err != nil {
		return err
	}
	switch st.Status {
	case runner.StatusExited:
		return s.collect(ctx, sess.ID, a.ID, st)
	case runner.StatusLost:
		return s.redispatch(ctx, sess, a)
	}
	return nil
}

// redispatch replaces an attempt the executor lost with a new one, once
// per session and only while the deadline leaves time to run; otherwise
// the session waits for its deadline, where reconcile ends it timed_out
// (the run may only be out of sight, and a deadline is what was promised).
// The new attempt keeps the session's deadline (see dispatch).
func (s *Service) redispatch(ctx context.Context, sess store.Session, a store.Attempt) error {
	log := zerolog.Ctx(ctx)
	if sess.Redispatches >= 1 || sess.Deadline.Sub(s.clock.Now()) < minRedispatchTime {
		log.Warn().Int("redispatches", sess.Redispatches).Msg("attempt lost; not re-dispatched, the deadline will end the session")
		return nil
	}
	requeued, err := s.transitions.Requeue(ctx, sess.ID, a.ID, func(x *store.Session) { x.Redispatches++ })
	if err != nil || !requeued {
		return err
	}
	// Only now that the session no longer waits for it: if the mutation had
	// failed, the session would still be waiting on a live attempt.
	log.Warn().Msg("attempt lost; re-dispatched")
	s.stopAttempt(ctx, a.ID)
	s.wakeWorkers()
	return nil
}

// reconcileTargets cancels active sessions whose target went away: a pull
// request that was closed (or merged), or a repository the installation can
// no longer read (removed from it, or deleted). Their results would have
// nowhere to go.
func (s *Service) reconcileTargets(ctx context.Context) error {
	active, err := s.store.SessionsRunning(ctx, reconcileBatch)
	if err != nil {
		return err
	}
	for _, sess := range active {
		log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("delivery_id", sess.DeliveryID).Logger()
		why, err := s.targetGone(ctx, sess)
		if err != nil {
			log.Warn().Err(err).Msg("checking the session's target failed; trying again next time")
			continue
		}
		if why == "" {
			continue
		}
		log.Info().Str("reason", why).Msg("target gone; cancelling the session")
		if err := s.transitions.EndRun(ctx, sess.ID, sess.AttemptID, session.Cancelled, why, render.TargetGoneReply(why == "repo_removed")); err != nil {
			return err
		}
	}
	return nil
}

// targetGone says why a session's target is gone ("pr_closed",
// "repo_removed"), or "" when it is still there. A rate limit is an error,
// never "gone": go-github reports those with a 403 response too.
func (s *Service) targetGone(ctx context.Context, sess store.Session) (string, error) {
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return "", err
	}
	var resp *github.Response
	if sess.Target().IsPullRequest() {
		var pr *github.PullRequest
		pr, resp, err = c.PullRequests.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number)
		if err == nil && pr.GetState() == "closed" {
			return "pr_closed", nil
		}
	} else {
		_, resp, err = c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
	}
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &rate) || errors.As(err, &abuse):
		return "", err
	case resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden):
		return "repo_removed", nil
	}
	return "", err
}
