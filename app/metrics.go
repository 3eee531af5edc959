package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/fates"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

// The wiring of app/metrics: the store's counts read at scrape time, the
// session-duration and agent-start histograms, webhook intake, and the
// operator-only listener (metrics.listen, decision 0036).

// newMetrics returns o's registry, or one of the service's own, with the
// store's counts registered on it and the store telling it of sessions
// that end.
func newMetrics(o Options, s *Service) *metrics.Metrics {
	m := o.Metrics
	if m == nil {
		m = metrics.New()
	}
	if o.Store == nil {
		return m
	}
	// A service built again over the same registry (a restart) reads its
	// own store, not the closed one before it.
	m.Unregister(metrics.StoreCollector{})
	if err := m.Register(metrics.StoreCollector{Source: storeSource{o.Store}, Now: s.clock.Now}); err != nil {
		s.log.Error().Err(err).Msg("the store's counts are not in the metrics")
	}
	o.Store.OnSessionEnded(func(x store.Session) {
		m.SessionEnded(string(x.Outcome), x.TriggerKind.StoredName(), x.EndedAt.Sub(x.CreatedAt))
	})
	return m
}

// newFates is the recorder of PRs' fates, counting into the service's
// metrics, whose gauges read the rollup at scrape time.
func newFates(s *Service) *fates.Recorder {
	r := &fates.Recorder{Store: s.store, Now: s.clock.Now, AppSlug: func() string { return s.Identity().AppSlug },
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) }}
	if s.store == nil {
		return r
	}
	count, err := fates.RegisterMetrics(s.metrics, s.store)
	if err != nil {
		s.log.Error().Err(err).Msg("the outcomes are not in the metrics")
	}
	r.Count = count
	return r
}

// Metrics is the service's registry, for transports built outside it.
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// MetricsHandler serves /metrics (on the metrics listener only).
func (s *Service) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.Handler())
	return mux
}

// observeAgentStart records in m, once an attempt is claimed at now, the
// time since its session was created.
func observeAgentStart(ctx context.Context, st *store.Store, m *metrics.Metrics, now time.Time, a store.Attempt) {
	if a.Kind == "snapshot" || a.SessionID == "" {
		return
	}
	sess, err := st.GetSession(ctx, a.SessionID)
	if err != nil {
		// Only the metric misses this one; the claim stands.
		zerolog.Ctx(ctx).Debug().Err(err).Str("session_id", a.SessionID).Msg("no session for the agent-start metric")
		return
	}
	m.AgentStarted(now.Sub(sess.CreatedAt))
}

// webhookEvents are the events whose name is a label value; any other
// name, which a sender chooses, is counted as "other".
var webhookEvents = map[string]bool{
	"issue_comment": true, "pull_request_review_comment": true, "issues": true, "check_run": true,
	"check_suite": true, "status": true, "push": true, "ping": true, "pull_request": true, "pull_request_review": true,
	"installation": true, "installation_repositories": true, "github_app_authorization": true,
}

// countWebhooks records in m each delivery's event, answer and latency.
func countWebhooks(m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Wall time, not the service's clock: latency is the host's.
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		event := r.Header.Get("X-GitHub-Event")
		if !webhookEvents[event] {
			event = "other"
		}
		m.Webhook(event, sw.status, time.Since(start))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// serveMetrics serves h (/metrics) on the metrics listener ln, when there
// is one, until stop is called; its server has the main one's timeouts.
func serveMetrics(ln net.Listener, h http.Handler, timeouts config.HTTP, log zerolog.Logger) (stop func(ctx context.Context)) {
	if ln == nil {
		return func(context.Context) {}
	}
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: timeouts.ReadHeaderTimeout,
		ReadTimeout: timeouts.ReadTimeout, WriteTimeout: timeouts.WriteTimeout, IdleTimeout: timeouts.IdleTimeout,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("the metrics listener stopped")
		}
	}()
	log.Info().Str("listen", ln.Addr().String()).Msg("serving metrics")
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn().Err(err).Msg("metrics requests still running at the drain deadline")
		}
		<-done
	}
}

// storeSource is the store as metrics.Source.
type storeSource struct{ st *store.Store }

func (s storeSource) SessionCounts(ctx context.Context) ([]metrics.SessionCount, error) {
	got, err := s.st.SessionCounts(ctx)
	out := make([]metrics.SessionCount, len(got))
	for i, c := range got {
		out[i] = metrics.SessionCount(c)
	}
	return out, err
}

func (s storeSource) WorkCounts(ctx context.Context) (map[string]int, error) {
	return s.st.WorkCounts(ctx)
}

func (s storeSource) SandboxesRunning(ctx context.Context, now time.Time) (map[string]int, error) {
	return s.st.SandboxesRunning(ctx, now)
}

func (s storeSource) SnapshotsBuilt(ctx context.Context) ([]metrics.SnapshotBuilt, error) {
	got, err := s.st.SnapshotsBuilt(ctx)
	out := make([]metrics.SnapshotBuilt, len(got))
	for i, b := range got {
		out[i] = metrics.SnapshotBuilt(b)
	}
	return out, err
}
