package app

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/runner"
)

// WebhookPath is where GitHub delivers webhooks.
const WebhookPath = githubapp.DefaultWebhookRoute

// Handler returns the app's HTTP routes: the webhook, the session channel,
// the Buildkite hook, the dashboard (when web.public_url is set), the
// provenance keys (when provenance is configured), /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	eventHandlers := []githubapp.EventHandler{
		&handlers.IssueComment{Sink: s, Fates: s.fates, CommandWord: s.cfg.CommandWord, Self: s.Identity},
		&handlers.PullRequestReviewComment{Sink: s, Fates: s.fates, CommandWord: s.cfg.CommandWord, Self: s.Identity},
		&handlers.PullRequest{Fates: s.fates, Self: s.Identity},
		&handlers.Installation{Fates: s.fates},
		&handlers.Issues{Sink: s, Self: s.Identity},
		&handlers.CheckRun{Sink: s, Self: s.Identity},
		&handlers.CheckSuite{Sink: s, Self: s.Identity},
		&handlers.Status{Sink: s, Self: s.Identity},
		&handlers.Push{Sink: s, Fates: s.fates},
		handlers.Ping{},
		&handlers.AppAuthorization{Forget: s.dash},
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+WebhookPath, countWebhooks(s.metrics, &handlers.GitHubWebhook{
		Secrets: s.cfg.WebhookSecrets(), Handlers: eventHandlers, MaxBodyBytes: s.cfg.HTTP.MaxBodyBytes,
		MaxInflight: int64(s.cfg.HTTP.MaxInflightWebhooks), Inflight: &s.inflightWebhooks, Log: s.log,
	}))
	sessionChannel(s).Routes(mux)
	s.dash.Routes(mux)
	if s.prov != nil {
		mux.Handle("GET "+provenance.KeysPath, s.prov.Keys.KeysHandler())
	}
	if s.cfg.Buildkite.WebhookToken != "" {
		mux.Handle("POST "+BuildkiteHookPath, &handlers.BuildkiteHook{Secret: s.cfg.Buildkite.WebhookToken, Sink: buildSink{s}, Now: s.clock.Now, Log: s.log})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n") // a failed write to a gone client needs no handling
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			s.log.Warn().Err(err).Msg("not ready: database does not answer")
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n") // as above
	})
	return mux
}

// Serve runs the HTTP server and the workers until ctx is cancelled (SIGTERM),
// then drains: the listener stops taking requests, in-flight requests finish,
// workers stop claiming and finish what they hold, all within
// http.shutdown_timeout.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.gate.wrap(s.Handler()),
		ReadHeaderTimeout: s.cfg.HTTP.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.HTTP.ReadTimeout,
		WriteTimeout:      s.cfg.HTTP.WriteTimeout,
		IdleTimeout:       s.cfg.HTTP.IdleTimeout,
	}
	stopMetrics := serveMetrics(s.metricsLn, s.MetricsHandler(), s.cfg.HTTP, s.log)
	// Listening at once: a liveness probe sees /healthz while GitHub is
	// still unreachable; webhooks and workers wait for the App's slug.
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if err := s.gate.learn(ctx, &s.self, s.log); err != nil {
		// Nothing was taken yet: no work to drain, no fleet to leave.
		closeCtx, cancel := context.WithTimeout(context.Background(), s.cfg.HTTP.ShutdownTimeout)
		defer cancel()
		if shutErr := srv.Shutdown(closeCtx); shutErr != nil {
			s.log.Warn().Err(shutErr).Msg("requests still running at the drain deadline")
		}
		stopMetrics(closeCtx)
		<-serveErr // http.ErrServerClosed, or why the listener failed first
		if ctx.Err() != nil {
			return nil // stopped while waiting: a clean stop
		}
		return err
	}
	serving := s.log.Info().Str("listen", ln.Addr().String()).Str("app", s.Identity().AppSlug)
	if s.metricsLn != nil {
		serving = serving.Str("metrics", s.metricsLn.Addr().String())
	}
	serving.Msg("inspect serving")
	stopWorkers := make(chan struct{})
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		s.RunWorkers(stopWorkers, workCtx)
	}()

	var err error
	served := false
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		served = true
	}
	s.log.Info().Msg("draining")
	// Workers stop claiming at once and finish what they hold, while the
	// HTTP server finishes its requests, both within the same deadline.
	close(stopWorkers)
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.HTTP.ShutdownTimeout)
	defer cancel()
	// Before the attempts are stopped: their sessions are given to the
	// fleet, so the stop reads as a handback, not as the sessions' end.
	s.handBack(drainCtx)
	if closer, ok := s.executor.(runner.Closer); ok {
		// Running attempts are stopped while the channel still answers, so
		// their supervisors can upload partial evidence (the local
		// executor's children would not outlive this process anyway).
		if err := closer.Close(drainCtx); err != nil {
			s.log.Warn().Err(err).Msg("attempts still running at the drain deadline")
		}
	}
	if shutErr := srv.Shutdown(drainCtx); shutErr != nil {
		s.log.Warn().Err(shutErr).Msg("requests still running at the drain deadline")
	}
	stopMetrics(drainCtx)
	select {
	case <-workersDone:
	case <-drainCtx.Done():
		// Work still held is cut short and released (uncounted), so the
		// next start or another replica picks it up at once.
		cancelWork()
		<-workersDone
	}
	if !served {
		err = <-serveErr
	}
	// Gone cleanly: nobody has to wait out this replica's heartbeat. Its
	// own short deadline: the drain's may be spent by now.
	leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLeave()
	if leaveErr := s.fleet.Leave(leaveCtx); leaveErr != nil {
		s.log.Warn().Err(leaveErr).Msg("could not record leaving the fleet")
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
