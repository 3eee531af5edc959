// Package reconcile makes sure every session reaches an end: the periodic
// pass the fleet runs (and tests, through RunPending) over sessions past
// their deadline, attempts that have not reported, and targets that went
// away. The engine (package app) wires a Reconciler with what it needs and
// nothing more (decision 0049).
package reconcile

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

// MinRedispatchTime is the least time before the deadline for which a lost
// attempt is re-dispatched: less cannot fetch, run and report.
const MinRedispatchTime = 2 * time.Minute

// reconcileBatch bounds the sessions one reconcile pass looks at.
const reconcileBatch = 1000

// Reconciler runs the reconcile pass. Its fields are all it reaches of
// the engine.
type Reconciler struct {
	// Store reads the sessions to look at and prunes what is past its
	// retention.
	Store Store
	// Fleet says which once-per-fleet ticks are due, and whether this
	// replica may judge others dead.
	Fleet Fleet
	// Transitions ends sessions and requeues lost attempts.
	Transitions Transitions
	// Executor is asked about this replica's runs; nil (the control plane
	// alone) leaves attempts to the replicas that run them.
	Executor runner.Executor
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// QueueSnapshotBuilds queues the snapshot builds that are due.
	QueueSnapshotBuilds func(ctx context.Context) error
	// Collect takes an exited run's result from the executor (app/collect).
	Collect func(ctx context.Context, sessionID, attemptID string, st runner.AttemptState) error
	// ForeignLocalAttempt says whether a is another replica's local
	// attempt, which only that replica can see.
	ForeignLocalAttempt func(a store.Attempt) bool
	// ReplaceDeadHostAttempt deals with an attempt whose replica died.
	ReplaceDeadHostAttempt func(ctx context.Context, sess store.Session, a store.Attempt) error
	// AdoptRun records the run an executor started for an attempt whose
	// start was not recorded; found says there was one.
	AdoptRun func(ctx context.Context, a store.Attempt) (found bool, err error)
	// StopAttempt stops an attempt's run and revokes its tokens.
	StopAttempt func(ctx context.Context, attemptID string)
	// Wake wakes the workers for the work a change queued.
	Wake func()
	// Now is the clock.
	Now func() time.Time
	// AttemptsOncePerFleet asks the executor about attempts only when the
	// fleet's tick is due (Buildkite, whose builds every replica sees);
	// otherwise every poll (a local executor sees only its own).
	AttemptsOncePerFleet bool
	// Interval is workers.reconcile_interval: how often, across the
	// fleet, the once-per-fleet parts run.
	Interval time.Duration
	// Retention is artifacts.retention.
	Retention time.Duration
	// ReplicaTimeout is how long a replica may miss its heartbeats
	// before it counts as dead.
	ReplicaTimeout time.Duration
	// Fates, when set, asks GitHub about the fates of PRs Inspect opened
	// that are due a check (app/fates: bounded, within the outbound
	// limits), once per interval across the fleet.
	Fates func(ctx context.Context) error
	// FailLostBaselines fails the baselines whose attempt's deadline
	// passed more than the grace ago without a result, and ends those
	// attempts (decision 0080); nil has none. Baseline attempts belong to
	// no session: the session passes above never see them.
	FailLostBaselines func(ctx context.Context, grace time.Duration) error
	// FailBaselinesOfDeadReplicas fails the baselines whose attempt ran on
	// a replica that alive says is dead (decision 0080); nil has none.
	FailBaselinesOfDeadReplicas func(ctx context.Context, alive func(ctx context.Context, host string) (bool, error)) error
}

// Store is what the reconciler reads and prunes of the store.
type Store interface {
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	SessionsRunning(ctx context.Context, limit int) ([]store.Session, error)
	SessionsPastDeadline(ctx context.Context, now time.Time, limit int) ([]store.Session, error)
	ReplicaAlive(ctx context.Context, replica string, since time.Time) (bool, error)
	PruneArtifacts(ctx context.Context, cutoff time.Time) (int64, error)
	PruneOutput(ctx context.Context, cutoff time.Time) (int64, error)
}

// Fleet is what the reconciler asks of this replica's membership of the
// fleet (app/fleet).
type Fleet interface {
	// Due claims the named tick when it is due across the fleet.
	Due(ctx context.Context, name string, every time.Duration) bool
	// MayJudgeReplicas says whether this replica has beaten long enough
	// to judge another dead.
	MayJudgeReplicas(now time.Time) bool
}

// Transitions is what the reconciler changes of a session as stored.
type Transitions interface {
	// EndRun ends the session if attemptID is still its attempt.
	EndRun(ctx context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error
	// Requeue puts the session back to be dispatched again, counting it.
	Requeue(ctx context.Context, sessionID, attemptID string, count func(*store.Session)) (bool, error)
}

// Run makes sure every session reaches an end. Every poll: sessions
// past their deadline end timed_out (their run is cancelled; the check run
// concludes through the sync the ending queues), and the local executor is
// asked about this replica's attempts (and the store about other
// replicas' liveness). Once per workers.reconcile_interval across the
// fleet (store.ClaimTick): Buildkite about unfinished builds, and GitHub
// about each session's target.
func (r *Reconciler) Run(ctx context.Context) error {
	// Before the sessions: a session re-dispatched from a dead replica
	// then links a new base's verify, not the one that died with it.
	if now := r.Now(); r.FailBaselinesOfDeadReplicas != nil && r.Fleet.MayJudgeReplicas(now) {
		alive := func(ctx context.Context, host string) (bool, error) {
			return r.Store.ReplicaAlive(ctx, host, now.Add(-r.ReplicaTimeout))
		}
		if err := r.FailBaselinesOfDeadReplicas(ctx, alive); err != nil {
			return err
		}
	}
	if !r.AttemptsOncePerFleet || r.Fleet.Due(ctx, "reconcile_attempts", r.Interval) {
		if err := r.reconcileAttempts(ctx); err != nil {
			return err
		}
	}
	if r.Fleet.Due(ctx, "reconcile_targets", r.Interval) {
		if err := r.reconcileTargets(ctx); err != nil {
			return err
		}
	}
	if r.Fleet.Due(ctx, "prune_artifacts", r.Interval) {
		// artifacts.retention: the store is shared, so one replica prunes.
		n, err := r.Store.PruneArtifacts(ctx, r.Now().Add(-r.Retention))
		if err != nil {
			return err
		}
		if n > 0 {
			zerolog.Ctx(ctx).Info().Int64("artifacts", n).Msg("pruned artifacts past their retention")
		}
		// The dashboard's live output goes with them (decision 0038).
		if n, err = r.Store.PruneOutput(ctx, r.Now().Add(-r.Retention)); err != nil {
			return err
		}
		if n > 0 {
			zerolog.Ctx(ctx).Info().Int64("chunks", n).Msg("pruned live output past the artifacts' retention")
		}
	}
	if r.Fates != nil && r.Fleet.Due(ctx, "reconcile_fates", r.Interval) {
		if err := r.Fates(ctx); err != nil {
			// The fates wait for the next pass; sessions must not.
			zerolog.Ctx(ctx).Warn().Err(err).Msg("reconciling PR fates failed; trying again next pass")
		}
	}
	// Snapshot scheduling is once per repo per refresh across the fleet by
	// itself: ScheduleSnapshotBuilds claims each repo's next build under a
	// lock.
	if err := r.QueueSnapshotBuilds(ctx); err != nil {
		return err
	}
	if r.FailLostBaselines != nil {
		if err := r.FailLostBaselines(ctx, deadlineGrace); err != nil {
			return err
		}
	}
	// The grace lets a supervisor that stopped at the deadline still upload
	// its (timed_out, partial) evidence, which says more than we can. Every
	// replica looks, every time: the query is cheap, and ending is a
	// conditional mutation, so two replicas ending one session end it once.
	overdue, err := r.Store.SessionsPastDeadline(ctx, r.Now().Add(-deadlineGrace), 50)
	if err != nil {
		return err
	}
	for _, sess := range overdue {
		if err := r.Transitions.EndRun(ctx, sess.ID, sess.AttemptID, session.TimedOut, "timed_out", render.TimedOutReply(sess.RequesterLogin)); err != nil {
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
func (r *Reconciler) reconcileAttempts(ctx context.Context) error {
	if r.Executor == nil {
		return nil // the control plane alone: nothing to ask
	}
	r.stopOrphans(ctx)
	active, err := r.Store.SessionsRunning(ctx, reconcileBatch)
	if err != nil {
		return err
	}
	for _, sess := range active {
		log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("delivery_id", sess.DeliveryID).Str("attempt_id", sess.AttemptID).Logger()
		if err := r.reconcileAttempt(log.WithContext(ctx), sess); err != nil {
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
func (r *Reconciler) stopOrphans(ctx context.Context) {
	lister, ok := r.Executor.(runner.RunningLister)
	if !ok {
		return
	}
	for ext, attemptID := range lister.Running(ctx) {
		a, err := r.Store.GetAttempt(ctx, attemptID)
		// A supervisor whose result just arrived is still exiting: only
		// one whose attempt ended longer ago than it takes to finish
		// (deadlineGrace) is an orphan.
		if err != nil || a.State != store.AttemptEnded || r.Now().Sub(a.UpdatedAt) < deadlineGrace {
			continue
		}
		zerolog.Ctx(ctx).Warn().Str("attempt_id", attemptID).Str("external_id", ext).Msg("stopping a supervisor whose attempt has ended")
		if err := r.Executor.Cancel(ctx, ext); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("attempt_id", attemptID).Msg("stopping the orphaned supervisor failed")
		}
	}
}

func (r *Reconciler) reconcileAttempt(ctx context.Context, sess store.Session) error {
	a, err := r.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.State == store.AttemptEnded {
		return err // an ended attempt's result is being reported
	}
	if r.ForeignLocalAttempt(a) {
		// Another replica's local attempt: only that replica can see it,
		// and its own reconcile does. Once the replica is dead, its sandbox
		// died with it.
		now := r.Now()
		if !r.Fleet.MayJudgeReplicas(now) {
			return nil
		}
		alive, err := r.Store.ReplicaAlive(ctx, a.Host, now.Add(-r.ReplicaTimeout))
		if err != nil || alive {
			return err
		}
		return r.ReplaceDeadHostAttempt(ctx, sess, a)
	}
	if a.ExternalID == "" {
		// The supervisor claimed the attempt (so the session runs) before
		// its start was recorded: find the run.
		_, err := r.AdoptRun(ctx, a)
		return err
	}
	st, err := r.Executor.State(ctx, a.ExternalID)
	if err != nil {
		return err
	}
	switch st.Status {
	case runner.StatusExited:
		return r.Collect(ctx, sess.ID, a.ID, st)
	case runner.StatusLost:
		return r.Redispatch(ctx, sess, a)
	}
	return nil
}

// Redispatch replaces an attempt the executor lost with a new one, once
// per session and only while the deadline leaves time to run; otherwise
// the session waits for its deadline, where reconcile ends it timed_out
// (the run may only be out of sight, and a deadline is what was promised).
// The new attempt keeps the session's deadline (see dispatch).
func (r *Reconciler) Redispatch(ctx context.Context, sess store.Session, a store.Attempt) error {
	log := zerolog.Ctx(ctx)
	if sess.Redispatches >= 1 || sess.Deadline.Sub(r.Now()) < MinRedispatchTime {
		log.Warn().Int("redispatches", sess.Redispatches).Msg("attempt lost; not re-dispatched, the deadline will end the session")
		return nil
	}
	requeued, err := r.Transitions.Requeue(ctx, sess.ID, a.ID, func(x *store.Session) { x.Redispatches++ })
	if err != nil || !requeued {
		return err
	}
	// Only now that the session no longer waits for it: if the mutation had
	// failed, the session would still be waiting on a live attempt.
	log.Warn().Msg("attempt lost; re-dispatched")
	r.StopAttempt(ctx, a.ID)
	r.Wake()
	return nil
}

// reconcileTargets cancels active sessions whose target went away: a pull
// request that was closed (or merged), or a repository the installation can
// no longer read (removed from it, or deleted). Their results would have
// nowhere to go.
func (r *Reconciler) reconcileTargets(ctx context.Context) error {
	active, err := r.Store.SessionsRunning(ctx, reconcileBatch)
	if err != nil {
		return err
	}
	for _, sess := range active {
		log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("delivery_id", sess.DeliveryID).Logger()
		why, err := r.targetGone(ctx, sess)
		if err != nil {
			log.Warn().Err(err).Msg("checking the session's target failed; trying again next time")
			continue
		}
		if why == "" {
			continue
		}
		log.Info().Str("reason", why).Msg("target gone; cancelling the session")
		if err := r.Transitions.EndRun(ctx, sess.ID, sess.AttemptID, session.Cancelled, why, render.TargetGoneReply(why == "repo_removed")); err != nil {
			return err
		}
	}
	return nil
}

// targetGone says why a session's target is gone ("pr_closed",
// "repo_removed"), or "" when it is still there. A rate limit is an error,
// never "gone": go-github reports those with a 403 response too.
func (r *Reconciler) targetGone(ctx context.Context, sess store.Session) (string, error) {
	c, err := r.Installation(ctx, sess.InstallationID)
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
