package servetest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/servetest"
)

// serve asks GitHub who the App is before it takes webhooks, retrying with
// backoff (1s, 2s, ...) while GitHub fails: it is ready only once GitHub
// answered.
func TestServeWaitsForGitHubBeforeItListens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := servetest.Build(t)
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.FailNext("GET", "/app", 502)
	gh.FailNext("GET", "/app", 503)
	r := servetest.Start(t, bin, servetest.BaseConfig(t, gh, servetest.NewDatabase(t)))
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, req := range gh.RequestsMatching("GET", "/app") {
		if req.Path == "/app" {
			statuses = append(statuses, req.Status)
		}
	}
	if len(statuses) != 3 || statuses[0] != 502 || statuses[1] != 503 || statuses[2] != 200 {
		t.Errorf("GET /app answered %v, want 502, 503, 200", statuses)
	}
	lines := r.LogLines()
	lastRetry, serving := -1, -1
	for i, l := range lines {
		if strings.Contains(l, "GitHub did not answer at start") {
			lastRetry = i
		}
		if strings.Contains(l, `"message":"inspect serving"`) && serving < 0 {
			serving = i
		}
	}
	if lastRetry < 0 || serving < lastRetry {
		t.Errorf("want the retries logged before serving (retry line %d, serving line %d):\n%s", lastRetry, serving, r.Logs())
	}
}

// A key GitHub refuses (401) is not waited out.
func TestServeStopsAtOnceWhenGitHubRefusesTheKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := servetest.Build(t)
	gh, other := fakegithub.New(), fakegithub.New()
	t.Cleanup(gh.Close)
	t.Cleanup(other.Close)
	cfg := servetest.BaseConfig(t, gh, servetest.NewDatabase(t))
	wrong := filepath.Join(t.TempDir(), "other-key.pem")
	if err := os.WriteFile(wrong, other.AppPrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Set("github.private_key_path", wrong)
	r := servetest.Launch(t, bin, cfg)
	code, err := r.Wait(ctx)
	if err != nil || code != 1 {
		t.Fatalf("exit %d, %v; want 1\n%s", code, err, r.Logs())
	}
	if _, err := r.WaitLog(ctx, "check github.app_id, github.private_key and github.api_url"); err != nil {
		t.Error(err)
	}
}
