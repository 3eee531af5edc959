package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/servetest"
	"github.com/inspecthq/inspect/session"
)

// After a real session (the stand-in command agent in the sandbox, calling
// the model through the proxy) and a snapshot build, /metrics parses with
// the Prometheus text parser and has each named series with a value that
// session and build make plausible.
func TestMetricsAfterASession(t *testing.T) {
	h, model, lx := newModelHarness(t, 0)
	model.Script(fakemodel.Turn{Message: "hello from the model", Usage: fakemodel.Usage{InputTokens: 1200, OutputTokens: 34}})
	agent := `set -u
curl -sS -H 'Content-Type: application/json' -d '{"model":"scripted-1","input":"hi","stream":true}' http://127.0.0.1:8931/v1/providers/scripted/responses > /dev/null
echo "asked the model" > "$INSPECT_ANSWER_FILE"
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "an agent that calls the model")
	sess := h.runSandboxSession(lx, "/inspect say hello")
	if sess.State() != session.Done || sess.Outcome != session.NoChange {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}

	// A snapshot build on this host, on the same registry: the service is
	// built again with a builder, and the repo put on the schedule as its
	// config's snapshot section would.
	h.stop()
	fb := &fakeBuilds{}
	h.snapshotBuilder = fb.build
	h.start()
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n" +
		"snapshot:\n  setup: [{name: deps, run: [\"true\"]}]\n"}, "snapshots on")
	if err := h.st.WantSnapshots(context.Background(), repoID, owner+"/"+repoName, installationID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.runWorkers()
	if n := len(fb.all()); n != 1 {
		t.Fatalf("snapshot builds = %d, want 1\n%s", n, h.logs)
	}
	h.clock.Advance(90 * time.Second)

	fams := scrapeMetrics(t, h)
	type want struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		what   string
	}
	atLeast := func(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
	exactly := func(n float64) func(float64) bool { return func(v float64) bool { return v == n } }
	within := func(lo, hi float64) func(float64) bool { return func(v float64) bool { return v >= lo && v <= hi } }
	for _, w := range []want{
		{"inspect_webhooks_total", map[string]string{"event": "issue_comment", "result": "accepted"}, exactly(1), "one comment delivered"},
		{"inspect_webhook_duration_seconds", map[string]string{"event": "issue_comment"}, exactly(1), "one latency observed"},
		{"inspect_sessions", map[string]string{"state": "done", "outcome": "no_change", "trigger": "comment"}, exactly(1), "the one session, done"},
		{"inspect_session_duration_seconds", map[string]string{"outcome": "no_change", "trigger": "comment"}, exactly(1), "one session ended"},
		{"inspect_session_agent_start_seconds", nil, exactly(1), "one attempt claimed"},
		{"inspect_api_requests_total", map[string]string{"service": "github", "code": "200"}, atLeast(5), "the session's reads of GitHub"},
		{"inspect_api_requests_total", map[string]string{"service": "github", "code": "201"}, atLeast(2), "the token mints, the reply"},
		{"inspect_api_errors_total", map[string]string{"service": "github"}, exactly(0), "GitHub never failed"},
		{"inspect_api_errors_total", map[string]string{"service": "buildkite"}, exactly(0), "no Buildkite here"},
		{"inspect_api_rate_limit_remaining", map[string]string{"service": "github", "resource": "core"}, within(4000, 4999), "the installation's budget, a little spent"},
		{"inspect_egress_requests_total", map[string]string{"kind": "model", "code": "200"}, exactly(1), "the agent's one model call"},
		{"inspect_egress_bytes_total", map[string]string{"kind": "model", "direction": "out"}, exactly(49), "the request body, 49 bytes of JSON"},
		{"inspect_egress_bytes_total", map[string]string{"kind": "model", "direction": "in"}, atLeast(20), "the streamed answer"},
		{"inspect_egress_bytes_total", map[string]string{"kind": "registry", "direction": "in"}, exactly(0), "no registry egress"},
		{"inspect_model_tokens_total", map[string]string{"model": "scripted-1", "direction": "input"}, exactly(1200), "the provider's usage"},
		{"inspect_model_tokens_total", map[string]string{"model": "scripted-1", "direction": "output"}, exactly(34), "the provider's usage"},
		{"inspect_snapshot_build_duration_seconds", map[string]string{"result": "ok"}, exactly(1), "one build"},
		{"inspect_snapshot_age_seconds", map[string]string{"repo": owner + "/" + repoName}, within(90, 91), "built 90 s ago on the clock"},
		{"inspect_work_items", map[string]string{"state": "pending"}, within(0, 20), "the queue depth"},
		{"inspect_sandboxes_running", map[string]string{"kind": "session"}, exactly(0), "the session's sandbox is gone"},
		{"inspect_sandboxes_running", map[string]string{"kind": "snapshot"}, exactly(0), "the build is over"},
	} {
		v, ok := seriesValue(fams, w.name, w.labels)
		if !ok {
			t.Errorf("%s%v: no such series (%s)", w.name, w.labels, w.what)
			continue
		}
		if !w.ok(v) {
			t.Errorf("%s%v = %v: implausible (%s)", w.name, w.labels, v, w.what)
		}
	}
	if t.Failed() {
		t.Logf("scraped families: %v", familyNames(fams))
	}
}

// scrapeMetrics GETs /metrics from the service's metrics handler (the one
// metrics.listen serves) and parses it as Prometheus scrapes it.
func scrapeMetrics(t *testing.T, h *harness) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h.svc.MetricsHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics answered %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// seriesValue finds the series of family name whose labels include want:
// a counter's or gauge's value, a histogram's sample count.
func seriesValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func familyNames(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for n := range fams {
		if strings.HasPrefix(n, "inspect_") {
			out = append(out, n)
		}
	}
	return out
}

// /metrics is served on its own listener by the real server loop, and not
// on the webhook listener; the drain stops it with the rest.
func TestMetricsAreOnTheirOwnListener(t *testing.T) {
	h := newHarness(t)
	h.stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.metricsListener = ln
	h.start()
	metricsURL := "http://" + ln.Addr().String() + "/metrics"
	ctx, sigterm := context.WithCancel(context.Background())
	url, done := h.serve(ctx)
	h.srv.URL = url
	if code, _ := h.deliver("ping", []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)); code != 200 {
		t.Fatalf("ping = %d", code)
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `inspect_webhooks_total{event="ping",result="accepted"} 1`) {
		t.Errorf("metrics listener: %d %v\n%s", resp.StatusCode, err, body)
	}
	if code := get(t, url+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the webhook listener = %d, want 404", code)
	}
	sigterm()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get(metricsURL); err == nil {
		t.Error("the metrics listener still answers after the drain")
	}
}

// The real `inspect serve` with metrics.listen: the serving line names the
// metrics address; there /metrics parses, and counts the webhook just
// delivered and the GitHub calls of the start-up (GET /app, through the
// transport cmd/inspect wires); the webhook listener has no /metrics.
func TestServeBinaryServesMetricsOnItsOwnListener(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := inspectBinary(t)
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	cfg := servetest.BaseConfig(t, gh, servetest.NewDatabase(t))
	cfg.Set("metrics.listen", "127.0.0.1:0")
	// No slug: the server asks GitHub (GET /app) at start-up.
	cfg.Set("github.app_slug", "")
	r := servetest.Start(t, bin, cfg)
	line, err := r.WaitLog(ctx, `"message":"inspect serving"`)
	if err != nil {
		t.Fatal(err)
	}
	var serving struct{ Listen, Metrics string }
	if err := json.Unmarshal([]byte(line), &serving); err != nil || serving.Metrics == "" || serving.Metrics == serving.Listen {
		t.Fatalf("serving line %q: %v", line, err)
	}
	body := []byte(`{"zen":"Design for failure.","hook_id":1}`)
	req, err := http.NewRequest(http.MethodPost, r.WebhookURL(), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "ping")
	req.Header.Set("X-GitHub-Delivery", "metrics-ping-1")
	req.Header.Set("X-Hub-Signature-256", sign(body, servetest.WebhookSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("ping = %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + serving.Metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := seriesValue(fams, "inspect_webhooks_total", map[string]string{"event": "ping", "result": "accepted"}); !ok || v != 1 {
		t.Errorf("ping deliveries = %v %v, want 1", v, ok)
	}
	if v, ok := seriesValue(fams, "inspect_api_requests_total", map[string]string{"service": "github", "code": "200"}); !ok || v < 1 {
		t.Errorf("GitHub calls = %v %v, want the start-up's GET /app", v, ok)
	}
	if v, ok := seriesValue(fams, "inspect_work_items", map[string]string{"state": "pending"}); !ok || v < 0 {
		t.Errorf("queue depth = %v %v", v, ok)
	}
	if code := get(t, r.URL()+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the webhook listener = %d, want 404", code)
	}
}
