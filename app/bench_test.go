package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

const benchSenders = 16

type noopHandler struct{}

func (noopHandler) Handles() []string { return []string{"issue_comment"} }
func (noopHandler) Handle(context.Context, string, string, []byte) error {
	return nil
}

type loadResult struct {
	acked      int
	p50, p99   time.Duration
	throughput float64
}

// sendLoad sends n signed deliveries from benchSenders goroutines and
// measures each acknowledgement.
func sendLoad(b *testing.B, url string, bodies [][]byte, prefix string) loadResult {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchSenders}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	lat := make([]time.Duration, len(bodies))
	var acked atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range benchSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(bodies[i])) // URL is ours and valid
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issue_comment")
				req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", prefix, i))
				req.Header.Set("X-Hub-Signature-256", sign(bodies[i], secret))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body) // drain for connection reuse
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if resp.StatusCode == http.StatusOK {
					acked.Add(1)
				} else {
					b.Errorf("delivery %d: status %d", i, resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return loadResult{
		acked:      int(acked.Load()),
		p50:        lat[len(lat)/2],
		p99:        lat[len(lat)*99/100],
		throughput: float64(len(bodies)) / elapsed.Seconds(),
	}
}

// BenchmarkWebhookAck compares the durable acknowledgement path (signature,
// decision, group-committed fsync'd SQLite write) with go-githubapp's bare
// dispatcher and a no-op handler, in the same run, over 16 senders.
func BenchmarkWebhookAck(b *testing.B) {
	n := max(b.N, 200)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = commentEvent(b, commentOpts{body: "/inspect fix the flaky test", onPR: true, commentID: int64(1_000_000 + i)})
	}

	bare := httptest.NewServer(githubapp.NewEventDispatcher([]githubapp.EventHandler{noopHandler{}}, secret))
	defer bare.Close()

	dbPath := filepath.Join(b.TempDir(), "bench.db")
	st, err := store.Open(context.Background(), "sqlite", dbPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.GitHub.AppID, cfg.GitHub.AppSlug, cfg.GitHub.PrivateKey, cfg.GitHub.WebhookSecret = 1, "inspect-app", "unused", secret
	cfg.Workers.Count = 0
	svc := app.NewService(app.Options{Config: cfg, Store: st, Logger: zerolog.Nop()})
	durable := httptest.NewServer(svc.Handler())
	defer durable.Close()

	b.ResetTimer()
	bareRes := sendLoad(b, bare.URL+app.WebhookPath, bodies, "bare")
	durRes := sendLoad(b, durable.URL+app.WebhookPath, bodies, "durable")
	b.StopTimer()

	// Every acknowledged delivery must be on disk: reopen the file and count.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	reopened, err := store.Open(context.Background(), "sqlite", dbPath)
	if err != nil {
		b.Fatal(err)
	}
	defer reopened.Close()
	stored, err := reopened.CountSessions(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if stored != durRes.acked {
		b.Fatalf("acknowledged %d deliveries but %d are on disk", durRes.acked, stored)
	}

	b.ReportMetric(float64(durRes.p50.Microseconds())/1000, "durable-p50-ms")
	b.ReportMetric(float64(durRes.p99.Microseconds())/1000, "durable-p99-ms")
	b.ReportMetric(durRes.throughput, "durable-req/s")
	b.ReportMetric(float64(bareRes.p50.Microseconds())/1000, "bare-p50-ms")
	b.ReportMetric(float64(bareRes.p99.Microseconds())/1000, "bare-p99-ms")
	b.ReportMetric(bareRes.throughput, "bare-req/s")
	b.ReportMetric(durRes.throughput/bareRes.throughput, "ratio")
}

// BenchmarkIgnoredCheckRun measures the webhook path for another app's
// check run that the repo does not repair, which every busy repo sends many
// times per commit: signature, decode, the cached config (memoised, parsed
// once), and a 200 that stores nothing.
func BenchmarkIgnoredCheckRun(b *testing.B) {
	st, err := store.Open(context.Background(), "sqlite", filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	repoCfg := agentConfig + "repair:\n  enabled: true\n  checks: [\"ci/*\"]\n" + strings.Repeat("# a long config file\n", 100)
	if err := st.PutRepoConfig(context.Background(), store.RepoConfigEntry{RepoID: repoID, FullName: owner + "/" + repoName,
		Status: store.ConfigFile, Content: repoCfg, FetchedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.GitHub.AppID, cfg.GitHub.AppSlug, cfg.GitHub.PrivateKey, cfg.GitHub.WebhookSecret = 1, "inspect-app", "unused", secret
	cfg.Workers.Count = 0
	svc := app.NewService(app.Options{Config: cfg, Store: st, Logger: zerolog.Nop()})
	handler := svc.Handler()
	body := checkRunEvent(b, checkRunOpts{name: "lint", conclusion: "failure", sha: headSHA, runID: 1, pr: prNumber})
	signature := sign(body, secret)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := httptest.NewRequest(http.MethodPost, app.WebhookPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "check_run")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d", i))
		req.Header.Set("X-Hub-Signature-256", signature)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	if seen, err := st.DeliverySeen(context.Background(), "bench-0"); err != nil || seen {
		b.Fatalf("an ignored check run was stored (%v, %v)", seen, err)
	}
}
