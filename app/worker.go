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

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghsync"
	"github.com/inspecthq/inspect/app/report"
	"github.com/inspecthq/inspect/app/snapshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner"
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
		s.fleet.RunPeriodic(stop, workCtx, s.reconcile)
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
	if err := s.reconcile(ctx); err != nil {
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
		store.RunCommand:        s.runCommand,
		store.SyncSession:       syncHandler(s).Handle,
		store.DispatchSession:   s.dispatch,
		store.ReportSession:     reportHandler(s).Handle,
		store.CollectResult:     s.collectResult,
		store.BuildSnapshot:     s.snapshots.BuildWork,
		store.ConsiderRepair:    s.considerRepair,
		store.CollectSnapshots:  s.snapshots.CollectWork,
	}
}

// reportHandler is the report step's handler, handed what it needs of the
// engine (app/report).
func reportHandler(s *Service) *report.Handler {
	return &report.Handler{
		Store: s.store, Transitions: s.transitions,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		RevokeTokens: s.readTokens.RevokeAttempt, RepoConfig: s.repoConfigs.ForSession, EnsureCheckRun: s.ensureCheckRun,
		RequesterPRs: s.dash.RequesterPRs, SessionURL: s.dash.SessionURL, BotLogin: s.botLogin, CheckRunName: CheckRunName,
	}
}

// syncHandler is the sync's handler, handed what it needs of the engine
// (app/ghsync).
func syncHandler(s *Service) *ghsync.Handler {
	h := &ghsync.Handler{
		Store:        s.store,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
		Now:          s.clock.Now, Thread: s.thread, RunLink: s.runOf, SignInHint: s.dash.SignInHint,
		CommandWord: s.cfg.CommandWord, CheckRunName: CheckRunName,
	}
	if runs, ok := s.executor.(runner.RunAnnotator); ok {
		h.Runs = runs
	}
	return h
}

// postponed is returned by work that must wait its turn; it is retried
// after `after` without counting as a failed attempt.
type postponed struct {
	after time.Duration
	why   string
}

func (p *postponed) Error() string { return "postponed: " + p.why }
