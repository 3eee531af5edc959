package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/ghclient"
)

type probe struct {
	path, method string
	wantStatus   int
	wantBody     string // a substring of the answer
	wantRetry    bool   // a Retry-After header
}

func (p probe) check(t *testing.T, url, phase string) {
	t.Helper()
	req, err := http.NewRequest(p.method, url+p.path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %s %s: %v", phase, p.method, p.path, err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	_, _ = io.Copy(&body, resp.Body) // a short read only shortens the failure message
	if resp.StatusCode != p.wantStatus || !strings.Contains(body.String(), p.wantBody) {
		t.Errorf("%s: %s %s = %d %q, want %d with %q", phase, p.method, p.path, resp.StatusCode, body.String(), p.wantStatus, p.wantBody)
	}
	if got := resp.Header.Get("Retry-After") != ""; got != p.wantRetry {
		t.Errorf("%s: %s %s: Retry-After %q, want one: %v", phase, p.method, p.path, resp.Header.Get("Retry-After"), p.wantRetry)
	}
}

// A liveness probe must not restart a server whose GitHub is briefly
// unreachable (decision 0067): it listens at once, /healthz answers, and
// everything else waits for GET /app, so no webhook is taken before the
// App's slug tells our own events apart.
func TestServerIsLiveButNotReadyUntilGitHubAnswers(t *testing.T) {
	h := newHarness(t, func(c *configServer) { c.Workers.Count = 0 })
	clients, err := ghclient.NewGitHubClients(h.cfg.GitHub.APIURL, h.cfg.GitHub.AppID, []byte(h.cfg.GitHub.PrivateKey), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	// GitHub is unreachable: the first GET /app hangs until released, then
	// answers 502, so the server retries once before it learns the slug.
	h.gh.FailNext("GET", "/app", http.StatusBadGateway)
	asked, answer := h.gh.HoldNext("GET", "/app")
	defer answer()
	quick := app.StartBackoff{Initial: time.Millisecond, Max: time.Millisecond}
	h.svc = app.NewService(app.Options{Config: h.cfg, Store: h.st, GitHub: clients, Clock: h.clock,
		Logger: zerolog.New(h.logs), WorkerName: "test", Version: "test",
		AwaitGitHub: func(ctx context.Context) (string, error) {
			return app.WaitForGitHub(ctx, clients, quick, zerolog.New(h.logs))
		}})
	ctx, stop := context.WithCancel(context.Background())
	url, done := h.serve(ctx)
	h.srv.URL = url
	waitOrFail(t, asked, "the server's GET /app")

	for _, p := range []probe{
		{path: "/healthz", method: "GET", wantStatus: 200, wantBody: "ok"},
		{path: "/readyz", method: "GET", wantStatus: 503, wantBody: "waiting for GitHub"},
		{path: app.WebhookPath, method: "POST", wantStatus: 503, wantBody: "waiting for GitHub", wantRetry: true},
		{path: "/api/github/hook", method: "GET", wantStatus: 503, wantBody: "waiting for GitHub", wantRetry: true},
	} {
		p.check(t, url, "before GET /app answered")
	}
	if code, body := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 503 {
		t.Errorf("a signed webhook before GET /app answered = %d %q, want 503", code, body)
	}
	if got := h.sessions(); len(got) != 0 {
		t.Errorf("a webhook was processed before the App's slug was known: %d sessions", len(got))
	}
	select {
	case <-h.svc.Started():
		t.Fatal("started before GET /app answered")
	default:
	}

	answer()
	waitOrFail(t, h.svc.Started(), "GET /app to answer")
	if id := h.svc.Identity(); id.AppSlug != h.gh.AppSlug() {
		t.Errorf("slug = %q, want GitHub's %q", id.AppSlug, h.gh.AppSlug())
	}
	for _, p := range []probe{
		{path: "/healthz", method: "GET", wantStatus: 200, wantBody: "ok"},
		{path: "/readyz", method: "GET", wantStatus: 200, wantBody: "ready"},
		{path: "/api/github/hook", method: "GET", wantStatus: 405},
	} {
		p.check(t, url, "after GET /app answered")
	}
	if code, body := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Errorf("a signed webhook after GET /app answered = %d %q, want 200", code, body)
	}
	if got := h.sessions(); len(got) != 1 {
		t.Errorf("%d sessions after the webhook, want 1", len(got))
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// Stopped while GitHub is still unreachable, the server ends cleanly: the
// retries belong to its lifecycle.
func TestServerStoppedWhileWaitingForGitHubEnds(t *testing.T) {
	h := newHarness(t)
	clients, err := ghclient.NewGitHubClients(h.cfg.GitHub.APIURL, h.cfg.GitHub.AppID, []byte(h.cfg.GitHub.PrivateKey), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked, answer := h.gh.HoldNext("GET", "/app")
	h.svc = app.NewService(app.Options{Config: h.cfg, Store: h.st, GitHub: clients, Clock: h.clock,
		Logger: zerolog.New(h.logs), WorkerName: "test", Version: "test",
		AwaitGitHub: func(ctx context.Context) (string, error) {
			return app.WaitForGitHub(ctx, clients, app.DefaultStartBackoff, zerolog.New(h.logs))
		}})
	ctx, stop := context.WithCancel(context.Background())
	url, done := h.serve(ctx)
	waitOrFail(t, asked, "the server's GET /app")
	probe{path: "/healthz", method: "GET", wantStatus: 200, wantBody: "ok"}.check(t, url, "waiting")
	stop()
	answer() // the held request ends with its context either way
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want a clean stop", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return when stopped while waiting for GitHub")
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the server still answers after it was stopped")
	}
}
