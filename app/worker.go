package app

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/buildkitelog"
	"github.com/inspecthq/inspect/app/collect"
	"github.com/inspecthq/inspect/app/commands"
	"github.com/inspecthq/inspect/app/gather"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghsync"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/reconcile"
	"github.com/inspecthq/inspect/app/repair"
	"github.com/inspecthq/inspect/app/report"
	"github.com/inspecthq/inspect/app/snapshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/turns"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// RunWorkers runs the configured number of workers until stop is closed,
// then waits for the work they hold to finish. Work runs under workCtx,
// which the caller cancels when the drain deadline passes.
func (s *Service) RunWorkers(stop <-chan struct{}, workCtx context.Context) {
	// Beat before any work: an attempt this replica starts must not look
	// like a dead replica's for want of a first heartbeat.
	s.fleet.Beat(workCtx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.fleet.RunHeartbeats(stop, workCtx)
	}()
	go func() {
		defer wg.Done()
		s.fleet.RunPeriodic(stop, workCtx, s.reconciler.Run)
	}()
	for i := range s.cfg.Workers.Count {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.workerLoop(stop, workCtx, fmt.Sprintf("%s/%d", s.WorkerName, i))
		}()
	}
	wg.Wait()
}

func (s *Service) workerLoop(stop <-chan struct{}, ctx context.Context, owner string) {
	poll := time.NewTicker(s.cfg.Workers.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-stop:
			return
		default:
		}
		did, err := s.ProcessOne(ctx, owner)
		if err != nil {
			s.log.Error().Err(err).Str("worker", owner).Msg("worker step failed")
		}
		if did {
			continue
		}
		select {
		case <-stop:
			return
		case <-s.wake:
		case <-poll.C:
		}
	}
}

// RunPending processes work until none is ready now. Tests use it to run the
// workers' steps deterministically.
func (s *Service) RunPending(ctx context.Context) (int, error) {
	if err := s.reconciler.Run(ctx); err != nil {
		return 0, err
	}
	n := 0
	for {
		did, err := s.ProcessOne(ctx, s.WorkerName)
		if err != nil {
			return n, err
		}
		if !did {
			return n, nil
		}
		n++
	}
}

// ProcessOne claims one ready work item and runs it. It reports whether
// there was one. A failing item is retried with backoff, and after
// workers.max_attempts it fails for good and its session ends in error. An
// item cut short by shutdown is released for the next worker, uncounted.
func (s *Service) ProcessOne(ctx context.Context, owner string) (bool, error) {
	now := s.clock.Now()
	w, err := s.store.Claim(ctx, owner, now, s.cfg.Workers.Lease)
	if err != nil || w == nil {
		return false, err
	}
	log := s.log.With().Int64("work_id", w.ID).Str("kind", string(w.Kind)).Str("session_id", w.SessionID).
		Str("delivery_id", w.DeliveryID).Int("attempt", w.Attempts).Logger()
	lease := s.cfg.Workers.Lease
	if w.Kind == store.BuildSnapshot {
		// A build takes minutes: hold it for as long as it may run, so no
		// other worker starts it again meanwhile.
		lease = snapshots.BuildLease
		if err := s.store.ExtendLease(ctx, w, now.Add(lease), now); err != nil {
			return true, err
		}
	}
	stepCtx, cancel := context.WithTimeout(log.WithContext(ctx), lease)
	runErr := s.runSafely(stepCtx, w)
	cancel()

	// Bookkeeping must happen even when ctx was cancelled by a drain, or the
	// item would sit under a dead lease until it expires.
	book, cancelBook := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancelBook()
	now = s.clock.Now()
	var wait *postponed
	rateWait, refusal := ghclient.ClassifyError(runErr, now)
	switch {
	case runErr == nil:
		err = s.store.Complete(book, w, now)
	case ctx.Err() != nil:
		log.Info().Err(runErr).Msg("shutting down: work released for the next worker")
		err = s.store.Release(book, w, now)
	case errors.As(runErr, &wait):
		// Not a failure: the work waits its turn, uncounted.
		log.Debug().Str("why", wait.why).Msg("work postponed")
		err = s.store.Postpone(book, w, now, now.Add(wait.after))
	case rateWait > 0:
		// Not the work's fault: wait out the limit, uncounted.
		log.Warn().Err(runErr).Dur("retry_in", rateWait).Msg("rate limited; work waits")
		err = s.store.Postpone(book, w, now, now.Add(rateWait))
	case refusal != nil && (refusal.Final || w.Attempts >= s.cfg.Workers.MaxAttempts):
		log.Error().Err(runErr).Msg("work refused for good")
		s.transitions.GiveUp(log.WithContext(book), w, refusal)
		err = s.store.Fail(book, w, now, runErr.Error())
	case w.Attempts >= s.cfg.Workers.MaxAttempts:
		log.Error().Err(runErr).Msg("work failed for good")
		s.transitions.GiveUp(log.WithContext(book), w, nil)
		err = s.store.Fail(book, w, now, runErr.Error())
	default:
		backoff := backoffFor(s.cfg.Workers.RetryBackoff, w.Attempts)
		log.Warn().Err(runErr).Dur("retry_in", backoff).Msg("work failed; will retry")
		err = s.store.Retry(book, w, now, now.Add(backoff), runErr.Error())
	}
	if errors.Is(err, store.ErrLeaseLost) {
		// Another worker took over after our lease expired; its run counts.
		log.Warn().Msg("lease lost before the work was recorded; another worker owns it")
		return true, nil
	}
	return true, err
}

// runSafely runs one item, turning a panic into an error: one bad item must
// not take the webhook server down with it, or crash-loop it on restart. The
// stack goes to the log, never to GitHub.
func (s *Service) runSafely(ctx context.Context, w *store.Work) (err error) {
	defer func() {
		if r := recover(); r != nil {
			zerolog.Ctx(ctx).Error().Str("panic", fmt.Sprint(r)).Str("stack", string(debug.Stack())).Msg("work panicked")
			err = fmt.Errorf("work %d panicked: %v", w.ID, r)
		}
	}()
	return s.runWork(ctx, w)
}

func (s *Service) runWork(ctx context.Context, w *store.Work) error {
	if handle, ok := s.work[w.Kind]; ok {
		return handle(ctx, w)
	}
	// Unknown kinds come only from a newer replica's schema; failing them
	// leaves them visible rather than silently done.
	return fmt.Errorf("unknown work kind %q", w.Kind)
}

// workHandler runs one work item of its kind.
type workHandler func(ctx context.Context, w *store.Work) error

// workTable is the one place a work kind meets what runs it, built once
// when the Service is wired: an explicit table, never a registry filled
// by init(), in the manner of Atlantis's command runners. worker_test.go
// holds it to every kind the store declares.
func workTable(s *Service) map[store.WorkKind]workHandler {
	return map[store.WorkKind]workHandler{
		store.PrepareSession:    s.prepare,
		store.PostReply:         s.postReply,
		store.RefreshRepoConfig: s.repoConfigs.RefreshFromPush,
		store.RunCommand:        commandHandler(s).Handle,
		store.SyncSession:       syncHandler(s).Handle,
		store.DispatchSession:   s.dispatch,
		store.ReportSession:     reportHandler(s).Handle,
		store.CollectResult:     collectHandler(s).Handle,
		store.BuildSnapshot:     s.snapshots.BuildWork,
		store.ConsiderRepair:    repairHandler(s).Handle,
		store.CollectSnapshots:  s.snapshots.CollectWork,
		store.CheckRevert:       s.fates.CheckReverts,
		store.AdmitTurn:         turnHandler(s).Handle,
		store.DispatchBaseline:  s.baselines.DispatchWork,
		store.ContinueTurns:     (&turns.Continuer{Store: s.store, Wake: s.wakeWorkers, Now: s.clock.Now}).Handle,
	}
}

// turnHandler is the admit_turn handler, handed what it needs of the
// engine (app/turns).
func turnHandler(s *Service) *turns.Handler {
	f := threadFactsOf(s)
	return &turns.Handler{
		Store:        s.store,
		Installation: f.installation, ThreadFacts: f.thread,
		RepoConfig: s.repoConfigs.ForSession, NewSession: sessionFromTrigger,
		BotLogin: s.botLogin, Wake: s.wakeWorkers, Now: s.clock.Now,
		ForkPRAllowed: s.cfg.ForkPRAllowed, CommandWord: s.cfg.CommandWord, AllowedBots: s.cfg.Policy.AllowedBots, Paused: s.cfg.Paused,
	}
}

// reportHandler is the report step's handler, handed what it needs of the
// engine (app/report).
func reportHandler(s *Service) *report.Handler {
	h := &report.Handler{
		Store: s.store, Transitions: s.transitions,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		RevokeTokens: s.readTokens.RevokeAttempt, RepoConfig: s.repoConfigs.ForSession, EnsureCheckRun: s.ensureCheckRun,
		RequesterPRs: s.dash.RequesterPRs, SessionURL: s.dash.SessionURL, BotLogin: s.botLogin, CheckRunName: CheckRunName, Cost: s.cfg.ModelCost,
		Screenshots: s.dash.ScreenshotLinks,
	}
	h.Baselines, h.PollInterval, h.Now, h.StopAttempt = s.cfg.Sessions.Baseline, s.cfg.Workers.PollInterval, s.clock.Now, s.stopAttempt
	h.Postpone = func(after time.Duration, why string) error { return &postponed{after: after, why: why} }
	if s.prov != nil {
		h.Attest, h.Provenance = s.prov.AttestSession, s.prov.Link
	}
	return h
}

// syncHandler is the sync's handler, handed what it needs of the engine
// (app/ghsync).
func syncHandler(s *Service) *ghsync.Handler {
	h := &ghsync.Handler{
		Store:        s.store,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		Now:          s.clock.Now, Thread: func(c *github.Client, sess store.Session) ghwrite.Thread { return threadOf(c, sess, s.botLogin()) }, RunLink: collectHandler(s).RunLink, SignInHint: s.dash.SignInHint,
		CommandWord: s.cfg.CommandWord, CheckRunName: CheckRunName, Cost: s.cfg.ModelCost, SessionURL: s.dash.SessionURL,
	}
	if runs, ok := s.executor.(runner.RunAnnotator); ok {
		h.Runs = runs
	}
	if s.prov != nil {
		h.Provenance = s.prov.Link
	}
	return h
}

// commandHandler is the run_command handler, handed what it needs of the
// engine (app/commands).
func commandHandler(s *Service) *commands.Handler {
	f := threadFactsOf(s)
	return &commands.Handler{
		Store:        s.store,
		Installation: f.installation, ThreadFacts: f.thread,
		StopAttempt: s.stopAttempt, BotLogin: s.botLogin, NewID: newID, Wake: s.wakeWorkers, Now: s.clock.Now,
		ForkPRAllowed: s.cfg.ForkPRAllowed, CommandWord: s.cfg.CommandWord, AllowedBots: s.cfg.Policy.AllowedBots, Paused: s.cfg.Paused,
		UnaskedReasons: []string{reasonNotATrigger, reasonLabelRemoved},
	}
}

// repairHandler is the consider_repair handler, handed what it needs of
// the engine (app/repair).
func repairHandler(s *Service) *repair.Handler {
	return &repair.Handler{
		Store:        s.store,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		RepoConfig:   s.repoConfigs.Load, ScheduleSnapshots: s.snapshots.Schedule, FailingChecks: failingChecksAs(s.Identity),
		Postpone: func(after time.Duration, why string) error { return &postponed{after: after, why: why} },
		NewID:    newID, Wake: s.wakeWorkers, Now: s.clock.Now,
		Paused: s.cfg.Paused, Settings: s.cfg.Repair, Limits: s.cfg.PolicyLimits(), PollInterval: s.cfg.Workers.PollInterval,
	}
}

// failingChecksAs lists the failing checks on sha that the repo's config
// repairs (gather.ListFailingChecks), never those of the App self names
// (asked at each call: the slug may be resolved after the wiring).
func failingChecksAs(self func() handlers.Identity) func(ctx context.Context, c *github.Client, owner, name, sha string, cfg config.Repo) ([]gather.FailingCheck, error) {
	return func(ctx context.Context, c *github.Client, owner, name, sha string, cfg config.Repo) ([]gather.FailingCheck, error) {
		id := self()
		return gather.ListFailingChecks(ctx, c, owner, name, sha, cfg, policy.AppIdentity{ID: id.AppID, Slug: id.AppSlug})
	}
}

// buildkiteLogs reads the job logs repairs link to when the server is
// configured for a Buildkite organization (buildkite.organization, with
// buildkite.api_url and the API token); nil otherwise (decision 0076).
func buildkiteLogs(ctx context.Context, cfg config.Server) *buildkitelog.Reader {
	if cfg.Buildkite.Organization == "" || cfg.Buildkite.APIURL == "" {
		return nil
	}
	token, err := cfg.BuildkiteAPIToken()
	if err != nil || token == "" {
		zerolog.Ctx(ctx).Warn().AnErr("error", err).Msg("Buildkite job logs are not read: no API token")
		return nil
	}
	return &buildkitelog.Reader{APIBase: cfg.Buildkite.APIURL, Org: cfg.Buildkite.Organization, Token: token}
}

// collectHandler is the collect_result handler, handed what it needs of
// the engine (app/collect); reconcile and the sync use it too.
func collectHandler(s *Service) *collect.Handler {
	return &collect.Handler{
		Store: s.store, Transitions: s.transitions, Executor: s.executor,
		RecordResult: s.recordResult, Wake: s.wakeWorkers, CommandWord: s.cfg.CommandWord,
	}
}

// newReconciler is the periodic reconcile, handed what it needs of the
// engine (app/reconcile).
func newReconciler(s *Service) *reconcile.Reconciler {
	return &reconcile.Reconciler{
		Store: s.store, Fleet: s.fleet, Transitions: s.transitions, Executor: s.executor,
		Installation:        func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		QueueSnapshotBuilds: s.snapshots.QueueBuilds, Collect: collectHandler(s).Collect,
		ForeignLocalAttempt: func(a store.Attempt) bool { return foreignLocalAttempt(s.WorkerName, a) }, ReplaceDeadHostAttempt: s.replaceDeadHostAttempt, AdoptRun: s.adoptRun,
		StopAttempt: s.stopAttempt, Wake: s.wakeWorkers, Now: s.clock.Now,
		AttemptsOncePerFleet: s.cfg.Executor.Kind == "buildkite", Interval: s.cfg.Workers.ReconcileInterval,
		Retention: s.cfg.Artifacts.Retention, ReplicaTimeout: s.cfg.Workers.ReplicaTimeout,
		Fates: s.fates.Reconcile, FailLostBaselines: s.baselines.FailLost, FailBaselinesOfDeadReplicas: s.baselines.FailOnDeadReplicas,
	}
}

// postponed is returned by work that must wait its turn; it is retried
// after `after` without counting as a failed attempt.
type postponed struct {
	after time.Duration
	why   string
}

func (p *postponed) Error() string { return "postponed: " + p.why }

// threadFacts are what the command and turn handlers read a thread with:
// the installation's client, and the policy's facts of a trigger's target
// or branch (without what only prepare needs of them).
type threadFacts struct {
	installation func(ctx context.Context, id int64) (*github.Client, error)
	thread       func(ctx context.Context, c *github.Client, t session.Trigger) (policy.Target, policy.Role, error)
}

func threadFactsOf(s *Service) threadFacts {
	return threadFacts{
		installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		thread: func(ctx context.Context, c *github.Client, t session.Trigger) (policy.Target, policy.Role, error) {
			var (
				target policy.Target
				role   policy.Role
				err    error
			)
			if tg := t.Target(); tg.IsBranch() {
				target, role, _, err = branchFacts(ctx, c, t.Repo.Owner, t.Repo.Name, tg.BranchName(), t.Sender.Login, t.Sender.Type)
			} else {
				target, role, _, err = targetFacts(ctx, c, t.Repo.Owner, t.Repo.Name, tg, t.Sender.Login, t.Sender.Type)
			}
			return target, role, err
		},
	}
}
