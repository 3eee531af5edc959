// Package metrics is Inspect's Prometheus instrumentation: one registry,
// created by the server and handed to the parts it measures (never the
// client library's global default), and the operator-only /metrics handler
// over it. docs/metrics.md lists the series.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the registry. A nil *Metrics records nothing (parts built
// without one, in tests).
//
// Metrics holds the registry and the series the app records as things
// happen; what the store knows (sessions by state, queue depth, sandboxes,
// snapshot age) is read at scrape time by a StoreCollector.
type Metrics struct {
	reg *prometheus.Registry

	webhooks        *prometheus.CounterVec
	webhookSeconds  *prometheus.HistogramVec
	sessionSeconds  *prometheus.HistogramVec
	agentStart      prometheus.Histogram
	apiRequests     *prometheus.CounterVec
	apiErrors       *prometheus.CounterVec
	apiRemaining    *prometheus.GaugeVec
	egressRequests  *prometheus.CounterVec
	egressBytes     *prometheus.CounterVec
	modelTokens     *prometheus.CounterVec
	modelCached     *prometheus.CounterVec
	snapshotSeconds *prometheus.HistogramVec
	fateEvents      *prometheus.CounterVec
}

// Services whose outbound calls are counted (the service label).
const (
	GitHub    = "github"
	Buildkite = "buildkite"
)

// Egress kinds (the kind label).
const (
	EgressModel    = "model"
	EgressRegistry = "registry"
)

// New creates a registry with Inspect's series and the Go runtime's.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.webhooks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_webhooks_total", Help: "Webhook deliveries received, by event and result.",
	}, []string{"event", "result"})
	m.webhookSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "inspect_webhook_duration_seconds", Help: "Time to answer a webhook delivery, by event.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"event"})
	m.sessionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "inspect_session_duration_seconds", Help: "Sessions' time from creation to done, by outcome and trigger.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
	}, []string{"outcome", "trigger"})
	m.agentStart = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "inspect_session_agent_start_seconds", Help: "Time from a session's creation to its attempt's supervisor claiming it (the sandbox is up, the agent starts).",
		Buckets: []float64{.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
	})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_api_requests_total", Help: "HTTP requests to GitHub and Buildkite, by service and status code (\"error\": no response).",
	}, []string{"service", "code"})
	m.apiErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_api_errors_total", Help: "Requests to GitHub and Buildkite that failed: no response, 5xx, or rate limited.",
	}, []string{"service"})
	m.apiRemaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "inspect_api_rate_limit_remaining", Help: "Requests left in the rate-limit window, as the service's last response said, by service and resource.",
	}, []string{"service", "resource"})
	m.egressRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_egress_requests_total", Help: "Sandbox egress requests through the session channel, by kind and status code.",
	}, []string{"kind", "code"})
	m.egressBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_egress_bytes_total", Help: "Sandbox egress bytes through the session channel, by kind and direction (in: to the sandbox).",
	}, []string{"kind", "direction"})
	m.modelTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_model_tokens_total", Help: "Model tokens used through the model proxy, by model and direction (input, output).",
	}, []string{"model", "direction"})
	m.modelCached = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_model_cached_tokens_total", Help: "Of the model input tokens, those the provider's prompt cache read and wrote, by model and cache (read, write).",
	}, []string{"model", "cache"})
	m.snapshotSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "inspect_snapshot_build_duration_seconds", Help: "Snapshot builds' duration, by result (ok, failed).",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600},
	}, []string{"result"})
	m.fateEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "inspect_pr_fate_events_total", Help: "Changes to the fates of PRs Inspect opened, by kind, trigger, agent preset and model.",
	}, []string{"kind", "trigger", "preset", "model"})
	for _, c := range []prometheus.Collector{m.fateEvents, m.webhooks, m.webhookSeconds, m.sessionSeconds, m.agentStart,
		m.apiRequests, m.apiErrors, m.apiRemaining, m.egressRequests, m.egressBytes, m.modelTokens, m.modelCached, m.snapshotSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	// Zero series for what may not have happened yet, so dashboards and
	// alerts see 0 rather than no data.
	for _, svc := range []string{GitHub, Buildkite} {
		m.apiErrors.WithLabelValues(svc)
	}
	for _, k := range []string{EgressModel, EgressRegistry} {
		m.egressBytes.WithLabelValues(k, "in")
		m.egressBytes.WithLabelValues(k, "out")
	}
	return m
}

// Register adds a collector (a StoreCollector) to the registry.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }

// Unregister removes the collector with c's series, if registered.
func (m *Metrics) Unregister(c prometheus.Collector) { m.reg.Unregister(c) }

// Handler serves the registry in the Prometheus exposition formats. A
// collector that fails (the store does not answer) leaves its series out
// and the rest is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: m.reg})
}

// Webhook records one delivery's answer.
func (m *Metrics) Webhook(event string, status int, took time.Duration) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(event, WebhookResult(status)).Inc()
	m.webhookSeconds.WithLabelValues(event).Observe(took.Seconds())
}

// WebhookResult names a webhook answer's status for the result label.
func WebhookResult(status int) string {
	switch {
	case status >= 200 && status < 300:
		return "accepted"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "unauthorized"
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return "shed"
	case status >= 400 && status < 500:
		return "rejected"
	default:
		return "error"
	}
}

// SessionEnded records a session's time from creation to done.
func (m *Metrics) SessionEnded(outcome, trigger string, took time.Duration) {
	if m == nil {
		return
	}
	m.sessionSeconds.WithLabelValues(outcome, trigger).Observe(took.Seconds())
}

// AgentStarted records the time from a session's creation to its
// attempt's claim.
func (m *Metrics) AgentStarted(took time.Duration) {
	if m == nil {
		return
	}
	m.agentStart.Observe(took.Seconds())
}

// Tokens are one model request's tokens as the provider reported them:
// CacheRead and CacheWrite are parts of Input.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite int64
}

// ModelTokens counts a model request's tokens: its input and output, and
// apart, the parts of its input its provider's prompt cache read and
// wrote (a separate counter, so that summing directions counts each
// token once).
func (m *Metrics) ModelTokens(model string, t Tokens) {
	if m == nil {
		return
	}
	for _, c := range []struct {
		vec   *prometheus.CounterVec
		label string
		n     int64
	}{
		{m.modelTokens, "input", t.Input},
		{m.modelTokens, "output", t.Output},
		{m.modelCached, "read", t.CacheRead},
		{m.modelCached, "write", t.CacheWrite},
	} {
		if c.n > 0 {
			c.vec.WithLabelValues(model, c.label).Add(float64(c.n))
		}
	}
}

// SnapshotBuilt records a snapshot build's duration.
func (m *Metrics) SnapshotBuilt(ok bool, took time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.snapshotSeconds.WithLabelValues(result).Observe(took.Seconds())
}
