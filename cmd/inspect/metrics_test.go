package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
	"github.com/inspecthq/inspect/runner"
)

// The Buildkite executor serve builds counts its requests in the server's
// registry: each try under the retries, a 429 as an error, and the
// headroom Buildkite's rate limiter reports.
func TestBuildkiteExecutorCountsItsCalls(t *testing.T) {
	bk := fakebuildkite.New(t)
	cfg := config.Defaults()
	cfg.Buildkite.APIURL, cfg.Buildkite.APIToken, cfg.Buildkite.Organization = bk.URL(), bk.Token(), "acme"
	m := metrics.New()
	exec, err := buildkiteExecutor(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	bk.FailNext(http.MethodGet, "/v2/organizations/*/pipelines/*/builds/*", http.StatusTooManyRequests, "0")
	st, err := exec.State(context.Background(), "https://buildkite.com/acme/inspect-session/builds/7")
	if err != nil || st.Status != runner.StatusLost {
		t.Fatalf("State = %+v %v, want lost (no such build)", st, err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{
		`inspect_api_requests_total{code="429",service="buildkite"} 1`,
		`inspect_api_requests_total{code="404",service="buildkite"} 1`,
		`inspect_api_errors_total{service="buildkite"} 1`,
		`inspect_api_rate_limit_remaining{resource="default",service="buildkite"} 0`,
	} {
		if !strings.Contains(rec.Body.String(), want+"\n") {
			t.Errorf("no %q in:\n%s", want, rec.Body.String())
		}
	}
}
