package app_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/session"
)

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHealthAndReadiness(t *testing.T) {
	h := newHarness(t)
	if code := get(t, h.srv.URL+"/healthz"); code != 200 {
		t.Errorf("healthz = %d", code)
	}
	if code := get(t, h.srv.URL+"/readyz"); code != 200 {
		t.Errorf("readyz = %d with a working database", code)
	}
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	if code := get(t, h.srv.URL+"/readyz"); code != 503 {
		t.Errorf("readyz = %d with the database gone, want 503", code)
	}
	if code := get(t, h.srv.URL+"/healthz"); code != 200 {
		t.Errorf("healthz = %d: liveness must not depend on the database", code)
	}
	if code := get(t, h.srv.URL+"/api/github/hook"); code != 405 {
		t.Errorf("GET on the webhook = %d, want 405", code)
	}
}

// serve runs the real server loop (HTTP and workers) on a fresh listener.
func (h *harness) serve(ctx context.Context) (url string, done <-chan error) {
	h.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- h.svc.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), errc
}

func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestShutdownDrainsWorkInFlight(t *testing.T) {
	h := newHarness(t, func(c *configServer) { c.Workers.Count = 2 })
	arrived, release := h.gh.HoldNext("POST", "/repos/*/*/issues/comments/*/reactions")
	defer release()
	ctx, sigterm := context.WithCancel(context.Background())
	url, done := h.serve(ctx)
	h.srv.URL = url // deliver through the server under test
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatalf("status %d", code)
	}
	waitOrFail(t, arrived, "the worker's first GitHub call")
	sigterm()
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) while a worker was mid-session", err)
	default:
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if s := h.onlySession(); s.State() != session.Preparing {
		t.Errorf("the in-flight session was not finished during the drain: %s", s.State())
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

func TestShutdownAbandonsWorkAtTheDeadline(t *testing.T) {
	h := newHarness(t, func(c *configServer) {
		c.Workers.Count = 1
		c.HTTP.ShutdownTimeout = 200 * time.Millisecond
	})
	arrived, release := h.gh.HoldNext("POST", "/repos/*/*/issues/comments/*/reactions")
	defer release()
	ctx, sigterm := context.WithCancel(context.Background())
	url, done := h.serve(ctx)
	h.srv.URL = url
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatalf("status %d", code)
	}
	waitOrFail(t, arrived, "the worker's first GitHub call")
	sigterm()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve ignored its drain deadline")
	}
	release()
	// The cut-short work is released, uncounted: the next start finishes
	// it at once, without waiting for a lease to expire.
	if s := h.onlySession(); s.State() != session.Queued {
		t.Fatalf("state = %s, want queued for the next start", s.State())
	}
	h.stop()
	h.start()
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Preparing {
		t.Errorf("after restart: %s\n%s", s.State(), h.logs)
	}
	h.expectOneReply(issueNumber)
	if !strings.Contains(h.logs.String(), "draining") {
		t.Error("shutdown was not logged")
	}
}
