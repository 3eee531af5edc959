package servetest_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

const shutdownTimeout = 5 * time.Second

func TestTwoReplicasOneTermedOneKilled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := servetest.Build(t)
	gh := fakegithub.New()
	t.Cleanup(gh.Close) // registered first, so it runs after the replicas are gone
	cfg := servetest.BaseConfig(t, gh, servetest.NewDatabase(t))
	cfg.Set("http.shutdown_timeout", shutdownTimeout) // a time.Duration: YAML writes "5s"

	a := servetest.Start(t, bin, cfg)
	b := servetest.Start(t, bin, cfg)
	if a.URL() == b.URL() {
		t.Fatalf("both replicas at %s", a.URL())
	}
	for _, r := range []*servetest.Replica{a, b} {
		if err := r.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(r.WebhookURL(), "/api/github/hook") {
			t.Errorf("WebhookURL %s", r.WebhookURL())
		}
	}
	if _, err := a.WaitLog(ctx, `"message":"inspect serving"`); err != nil {
		t.Error(err)
	}

	code, took := a.Term()
	if code != 0 {
		t.Errorf("SIGTERM: exit %d, want 0", code)
	}
	if took > shutdownTimeout {
		t.Errorf("SIGTERM: exit took %s, over http.shutdown_timeout %s", took, shutdownTimeout)
	}
	select {
	case <-a.Exited():
	default:
		t.Error("Exited not closed after Term")
	}
	if _, err := a.WaitLog(ctx, "no such line"); err == nil {
		t.Error("WaitLog found a line that was never written")
	}

	// The other replica is unaffected, then dies like a host.
	if err := b.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	url := b.URL()
	b.Kill()
	if code, err := b.Wait(ctx); err != nil || code != -1 {
		t.Errorf("after Kill: exit %d, %v; want -1 (a signal)", code, err)
	}
	if ws, ok := b.ProcessState().Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("after Kill: %v", b.ProcessState())
	}
	if resp, err := http.Get(url + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after Kill", url)
	}
}

func TestLaunchOfABadConfigExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := servetest.Build(t)
	cfg := servetest.Config{YAML: map[string]any{"github": map[string]any{"app_id": 5}}}
	r := servetest.Launch(t, bin, cfg)
	code, err := r.Wait(ctx)
	if err != nil || code != 2 {
		t.Fatalf("exit %d, %v; want 2\n%s", code, err, r.Logs())
	}
	if _, err := r.WaitServing(ctx); err == nil {
		t.Error("WaitServing succeeded for a replica that exited")
	}
	if _, err := r.WaitLog(ctx, "github.webhook_secret"); err != nil {
		t.Error(err)
	}
}

func TestConfigSetMakesSections(t *testing.T) {
	var c servetest.Config
	c.Set("workers.heartbeat", "1s")
	c.Set("workers.replica_timeout", "3s")
	w := c.YAML["workers"].(map[string]any)
	if w["heartbeat"] != "1s" || w["replica_timeout"] != "3s" {
		t.Errorf("workers = %v", w)
	}
}
