package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/metrics"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	return rec.Body.String()
}

func wantLines(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, l+"\n") {
			t.Errorf("no line %q in:\n%s", l, body)
		}
	}
}

// The transport counts each answer by code, counts failures (no answer,
// 5xx, 429, a 403 with the limit spent), and keeps the headroom GitHub
// (X-RateLimit-*) or Buildkite (RateLimit-*) last reported; a malformed
// header is ignored, an unknown resource is "other".
func TestTransportCountsCallsErrorsAndHeadroom(t *testing.T) {
	answers := map[string]func(w http.ResponseWriter){
		"/ok": func(w http.ResponseWriter) {
			w.Header().Set("X-RateLimit-Remaining", "4321")
			w.Header().Set("X-RateLimit-Resource", "core")
		},
		"/search": func(w http.ResponseWriter) {
			w.Header().Set("X-RateLimit-Remaining", "29")
			w.Header().Set("X-RateLimit-Resource", "made-up{injected}")
		},
		"/spent": func(w http.ResponseWriter) {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Resource", "core")
			w.WriteHeader(http.StatusForbidden)
		},
		"/forbidden": func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) },
		"/down":      func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) },
		"/bk": func(w http.ResponseWriter) {
			w.Header().Set("RateLimit-Remaining", "199")
			w.WriteHeader(http.StatusTooManyRequests)
		},
		"/garbage": func(w http.ResponseWriter) { w.Header().Set("RateLimit-Remaining", "lots") },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { answers[r.URL.Path](w) }))
	defer srv.Close()
	m := metrics.New()
	gh := &http.Client{Transport: m.Transport(metrics.GitHub, nil)}
	bk := &http.Client{Transport: m.Transport(metrics.Buildkite, nil)}
	get := func(c *http.Client, path string) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // only the counts matter
		resp.Body.Close()
	}
	for _, p := range []string{"/ok", "/ok", "/search", "/spent", "/forbidden", "/down"} {
		get(gh, p)
	}
	get(bk, "/bk")
	get(bk, "/garbage")
	if _, err := gh.Get("http://127.0.0.1:1/refused"); err == nil {
		t.Fatal("a closed port answered")
	}
	wantLines(t, scrape(t, m),
		`inspect_api_requests_total{code="200",service="github"} 3`,
		`inspect_api_requests_total{code="403",service="github"} 2`,
		`inspect_api_requests_total{code="502",service="github"} 1`,
		`inspect_api_requests_total{code="error",service="github"} 1`,
		`inspect_api_requests_total{code="429",service="buildkite"} 1`,
		`inspect_api_requests_total{code="200",service="buildkite"} 1`,
		// the spent 403, the 502, the refused connection; not the plain 403
		`inspect_api_errors_total{service="github"} 3`,
		`inspect_api_errors_total{service="buildkite"} 1`,
		`inspect_api_rate_limit_remaining{resource="core",service="github"} 0`,
		`inspect_api_rate_limit_remaining{resource="other",service="github"} 29`,
		`inspect_api_rate_limit_remaining{resource="default",service="buildkite"} 199`,
	)
}

// Webhook answers map to a small set of results.
func TestWebhookResults(t *testing.T) {
	for status, want := range map[int]string{200: "accepted", 202: "accepted", 401: "unauthorized", 403: "unauthorized",
		400: "rejected", 413: "rejected", 429: "shed", 503: "shed", 500: "error"} {
		if got := metrics.WebhookResult(status); got != want {
			t.Errorf("WebhookResult(%d) = %q, want %q", status, got, want)
		}
	}
	m := metrics.New()
	m.Webhook("issue_comment", 200, 30*time.Millisecond)
	m.Webhook("issue_comment", 401, time.Millisecond)
	wantLines(t, scrape(t, m),
		`inspect_webhooks_total{event="issue_comment",result="accepted"} 1`,
		`inspect_webhooks_total{event="issue_comment",result="unauthorized"} 1`,
		`inspect_webhook_duration_seconds_count{event="issue_comment"} 2`,
		`inspect_webhook_duration_seconds_bucket{event="issue_comment",le="0.025"} 1`,
	)
}

// Egress is counted by kind and status, bytes each way, through a
// handler that streams (the writer still flushes).
// A request's prompt-cache reads and writes are counted apart from its
// input, which already holds them (decision 0053).
func TestModelTokensCountCacheReadsAndWritesApart(t *testing.T) {
	m := metrics.New()
	m.ModelTokens("claude-x", metrics.Tokens{Input: 49203, Output: 250, CacheRead: 48000, CacheWrite: 1200})
	m.ModelTokens("claude-x", metrics.Tokens{Input: 10, Output: 5})
	wantLines(t, scrape(t, m),
		`inspect_model_tokens_total{direction="input",model="claude-x"} 49213`,
		`inspect_model_tokens_total{direction="output",model="claude-x"} 255`,
		`inspect_model_cached_tokens_total{cache="read",model="claude-x"} 48000`,
		`inspect_model_cached_tokens_total{cache="write",model="claude-x"} 1200`,
	)
}

func TestEgressCountsRequestsAndBytes(t *testing.T) {
	m := metrics.New()
	h := m.Egress(metrics.EgressModel, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body) // a short read only shortens the count the test checks
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append([]byte("echo:"), body...))
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("the counting writer does not flush: %v", err)
		}
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // as above
	resp.Body.Close()
	wantLines(t, scrape(t, m),
		`inspect_egress_requests_total{code="200",kind="model"} 1`,
		`inspect_egress_bytes_total{direction="out",kind="model"} 13`,
		`inspect_egress_bytes_total{direction="in",kind="model"} 18`,
		`inspect_egress_bytes_total{direction="in",kind="registry"} 0`,
	)
}

type fakeSource struct {
	failSessions bool
}

func (f fakeSource) SessionCounts(context.Context) ([]metrics.SessionCount, error) {
	if f.failSessions {
		return nil, errors.New("database is down")
	}
	return []metrics.SessionCount{{State: "done", Outcome: "changed", Trigger: "comment", N: 3}, {State: "running", Trigger: "label", N: 1}}, nil
}

func (fakeSource) WorkCounts(context.Context) (map[string]int, error) {
	return map[string]int{"done": 40}, nil
}

func (fakeSource) SandboxesRunning(context.Context, time.Time) (map[string]int, error) {
	return map[string]int{"session": 1}, nil
}

func (fakeSource) SnapshotsBuilt(context.Context) ([]metrics.SnapshotBuilt, error) {
	return []metrics.SnapshotBuilt{{Repo: "o/r", BuiltAt: time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)}}, nil
}

// The store's counts are read at scrape time; the queue depth and the
// sandboxes are there at 0; a failing query leaves its family out and the
// rest is served.
func TestStoreCollector(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
	m := metrics.New()
	if err := m.Register(metrics.StoreCollector{Source: fakeSource{}, Now: now}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, scrape(t, m),
		`inspect_sessions{outcome="changed",state="done",trigger="comment"} 3`,
		`inspect_sessions{outcome="",state="running",trigger="label"} 1`,
		`inspect_work_items{state="pending"} 0`,
		`inspect_work_items{state="done"} 40`,
		`inspect_sandboxes_running{kind="session"} 1`,
		`inspect_sandboxes_running{kind="snapshot"} 0`,
		`inspect_snapshot_age_seconds{repo="o/r"} 3600`,
	)

	m = metrics.New()
	if err := m.Register(metrics.StoreCollector{Source: fakeSource{failSessions: true}, Now: now}); err != nil {
		t.Fatal(err)
	}
	body := scrape(t, m)
	if strings.Contains(body, "inspect_sessions{") {
		t.Errorf("sessions served from a failed query:\n%s", body)
	}
	wantLines(t, body, `inspect_work_items{state="done"} 40`, `inspect_snapshot_age_seconds{repo="o/r"} 3600`)
}

// A nil *Metrics records nothing and wraps nothing.
func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	m.Webhook("push", 200, time.Second)
	m.SessionEnded("changed", "comment", time.Minute)
	m.AgentStarted(time.Second)
	m.ModelTokens("x", metrics.Tokens{Input: 1, Output: 2, CacheRead: 1})
	m.SnapshotBuilt(true, time.Minute)
	if rt := m.Transport(metrics.GitHub, http.DefaultTransport); rt != http.DefaultTransport {
		t.Error("a nil registry wrapped the transport")
	}
}
