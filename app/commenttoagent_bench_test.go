package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner"
)

// BenchmarkCommentToAgent measures the critical path from a `/inspect`
// comment on a pull request to the agent's first instruction: the webhook
// delivered, then the app's real workers (four, as by default) prepare and
// dispatch the session, and a stand-in supervisor claims the attempt and
// reads its spec over the real session channel. The GitHub stand-in waits
// the given latency before answering each request, as GitHub does (about
// 100 ms). Reported per comment (medians over the iterations):
//
//   - ms/comment-to-agent: from sending the webhook to holding the spec
//   - roundtrips/dispatch: the requests GitHub had answered when the
//     executor was handed the attempt (token mints included, the workers'
//     redelivery sweep not), whether made one after another or side by
//     side
//
// Run with -benchtime 10x or so: one iteration is one session.
func BenchmarkCommentToAgent(b *testing.B) {
	for _, latency := range []time.Duration{0, 100 * time.Millisecond} {
		b.Run(fmt.Sprintf("github=%dms", latency.Milliseconds()), func(b *testing.B) {
			benchCommentToAgent(b, latency)
		})
	}
}

func benchCommentToAgent(b *testing.B, latency time.Duration) {
	ex := &handingExecutor{started: make(chan handedAttempt, 1)}
	h := newHarnessOn(b, "sqlite", func(c *config.Server) {
		c.Workers.Count = 4 // the default; the harness's 0 leaves them to RunPending
		// Every iteration's session stays running: no cap may hold the next.
		c.Limits.ActivePerRepo, c.Limits.ActivePerUser, c.Limits.ActivePerInstallation, c.Limits.DailyPerRepo = 100000, 100000, 100000, 100000
	})
	h.stop()
	h.exec = ex
	h.start()
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig}, "config")
	ex.gh = h.gh
	h.gh.SetLatency(latency)

	var took, trips []float64
	var firstLog []string
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// A pull request of its own: one active session per thread.
		number := 100 + i
		branch := fmt.Sprintf("bench-%d", i)
		h.gh.CreateBranch(owner, repoName, branch, "main")
		h.gh.CommitFiles(owner, repoName, branch, map[string]string{"notes.md": branch + "\n"}, "wip")
		h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: number, Title: "Fix flaky test", State: "open", User: "mara", HeadRef: branch, BaseRef: "main"})
		body := h.event(commentOpts{body: "/inspect fix the flaky test", onPR: true, number: number})
		h.gh.ResetRequests()
		stop := make(chan struct{})
		var workers sync.WaitGroup
		workers.Add(1)
		go func() {
			defer workers.Done()
			h.svc.RunWorkers(stop, context.Background())
		}()
		b.StartTimer()

		start := time.Now()
		if code, _ := h.deliver("issue_comment", body); code != 200 {
			b.Fatalf("delivery answered %d", code)
		}
		got := <-ex.started
		sv := h.claim(got.attempt)
		spec := sv.spec()
		elapsed := time.Since(start)

		b.StopTimer()
		if !strings.Contains(spec.Instructions, "fix the flaky test") {
			b.Fatalf("the spec's instructions are %q", spec.Instructions)
		}
		took = append(took, float64(elapsed)/float64(time.Millisecond))
		trips = append(trips, float64(len(got.before)))
		if i == 0 {
			firstLog = got.before
		}
		// Let the workers finish what they hold, then run what is left, so
		// the next iteration starts with no work behind it.
		close(stop)
		workers.Wait()
		h.runWorkers()
		b.StartTimer()
	}
	b.StopTimer()
	b.Logf("github=%v: requests before dispatch in the first iteration: %s", latency, strings.Join(firstLog, " | "))
	b.ReportMetric(medianOf(took), "ms/comment-to-agent")
	b.ReportMetric(medianOf(trips), "roundtrips/dispatch")
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// handingExecutor hands each attempt it is asked to start to the
// benchmark, with the GitHub requests answered by then.
type handingExecutor struct {
	gh      *fakegithub.Server
	started chan handedAttempt
}

type handedAttempt struct {
	attempt runner.Attempt
	before  []string // "METHOD path" of each request GitHub had answered
}

func (e *handingExecutor) Start(_ context.Context, l runner.Attempt) (string, error) {
	var before []string
	for _, r := range e.gh.Requests() {
		if strings.HasPrefix(r.Path, "/app/hook/") {
			continue // the workers' redelivery sweep, not the session's
		}
		before = append(before, r.Method+" "+r.Path)
	}
	e.started <- handedAttempt{attempt: l, before: before}
	return "handed-" + l.AttemptID, nil
}

func (e *handingExecutor) State(context.Context, string) (runner.AttemptState, error) {
	return runner.AttemptState{Status: runner.StatusRunning}, nil
}

func (e *handingExecutor) Cancel(context.Context, string) error { return nil }
