package app_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// BenchmarkRealCLITalk times issue 36's figures with the real CLIs,
// through the app, the local executor and the sandbox, against the
// scripted model (as TestRealCLIsAreSteeredAndContinuedThroughTheApp runs
// them). Each iteration is one conversation:
//
//   - ms/fresh-start: alice's /inspect on the issue (the webhook sent) to
//     the model's first request: the session prepared and dispatched, the
//     sandbox made, the CLI started and asking;
//   - ms/steer-to-model: mara's /inspect on the thread, while the model
//     holds its first answer, to the model's next request (steer
//     "interrupt"): the turn admitted, the supervisor's long poll, the run
//     stopped, the CLI resumed and asking;
//   - ms/continuation-start: ada's /inspect on the pull request it opened
//     to the continuation's first model request: the same as a fresh
//     start, plus the conversation found, its state downloaded and
//     restored;
//   - ms/fresh-launch and ms/continuation-launch: the same comments to
//     the agent's command starting in the sandbox (launchWatch), before
//     the CLI's own start: what Inspect does, without what the CLI does.
//
// OpenCode runs as `opencode serve`, steered through its API (decision
// 0084); the others stop and resume.
//
// With layer-cache=warm the agents' tools image is flattened already (the
// shared test layer cache); with layer-cache=empty the layer cache starts
// empty and is emptied again before the continuation, so both starts pay
// the flattening. Run with -benchtime 1x: one iteration is a minute.
func BenchmarkRealCLITalk(b *testing.B) {
	for _, c := range []struct {
		agent realAgent
		empty bool
	}{{realCodex, false}, {realClaudeCode, false}, {realOpenCode, false}, {realCodex, true}} {
		cache := "warm"
		if c.empty {
			cache = "empty"
		}
		b.Run(c.agent.preset+"/layer-cache="+cache, func(b *testing.B) {
			var sum talkTimes
			for range b.N {
				t := talkOnce(b, c.agent, c.empty)
				sum.fresh, sum.steer, sum.cont = sum.fresh+t.fresh, sum.steer+t.steer, sum.cont+t.cont
				sum.freshLaunch, sum.contLaunch = sum.freshLaunch+t.freshLaunch, sum.contLaunch+t.contLaunch
			}
			per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(per(sum.fresh), "ms/fresh-start")
			b.ReportMetric(per(sum.freshLaunch), "ms/fresh-launch")
			b.ReportMetric(per(sum.steer), "ms/steer-to-model")
			b.ReportMetric(per(sum.cont), "ms/continuation-start")
			b.ReportMetric(per(sum.contLaunch), "ms/continuation-launch")
		})
	}
}

// talkTimes are one conversation's figures; the launches are the comment
// to the agent's command starting in the sandbox (launchWatch).
type talkTimes struct {
	fresh, freshLaunch, steer, cont, contLaunch time.Duration
}

// launchWatch notes when the agent's command starts in a sandbox: the
// forwarder (`inspect runner forward`, the sandbox's first process) whose
// command after "--" is the CLI's, seen in the host's /proc, which shows
// the sandbox's processes too. It looks every 2 ms: a benchmark's
// instrument, its grain well under the figures.
func launchWatch(b *testing.B, cli string) (launched func() time.Time, stop func()) {
	seen := map[string]bool{}
	var at time.Time
	var mu sync.Mutex
	quit, done := make(chan struct{}), make(chan struct{})
	look := func() {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return // a later look sees it
		}
		for _, e := range entries {
			if seen[e.Name()] || e.Name()[0] < '0' || e.Name()[0] > '9' {
				continue
			}
			raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil {
				continue // gone already
			}
			args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
			if b := filepath.Base(args[0]); b != "bwrap" && b != "setpriv" {
				// Those two exec what they start in their own process: the
				// forwarder may be the same pid a look later.
				seen[e.Name()] = true
			}
			i := slices.Index(args, "--")
			if i < 0 || i+1 >= len(args) || !slices.Contains(args, "forward") || !strings.Contains(filepath.Base(args[i+1]), cli) {
				continue
			}
			mu.Lock()
			at = time.Now()
			mu.Unlock()
		}
	}
	look() // what runs already is not a launch
	mu.Lock()
	at = time.Time{}
	mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				mu.Lock()
				found := !at.IsZero()
				mu.Unlock()
				if !found {
					look()
				}
			}
		}
	}()
	return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			if at.IsZero() {
				b.Fatalf("the %s command was never seen starting", cli)
			}
			return at
		}, func() {
			close(quit)
			<-done
		}
}

// talkOnce runs one conversation and returns its times.
func talkOnce(b *testing.B, a realAgent, empty bool) (tt talkTimes) {
	layers := sandboxtest.ToolsLayerCache(b, "..")
	if empty {
		layers = filepath.Join(sandboxtest.ReachableDir(b), "layers")
		if err := os.Mkdir(layers, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	h, lx, model := newTalkHarness(b, a, layers)
	hold, holding := make(chan struct{}), make(chan struct{})
	b.Cleanup(func() { close(hold) })
	model.Script(
		fakemodel.Turn{Hold: hold, Holding: holding, Message: talkHeld},
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"}},
		fakemodel.Turn{Message: talkDone},
	)
	// nextRequest is when the model got request n (0-based), waiting for
	// it; the request's own arrival time is the figure, not the poll's.
	nextRequest := func(n int) time.Time {
		b.Helper()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(5 * time.Minute)
		for {
			if reqs := model.Requests(); len(reqs) > n {
				return reqs[n].At
			}
			select {
			case <-tick.C:
			case <-deadline:
				b.Fatalf("the model never got request %d\n%s", n, h.logs)
			}
		}
	}

	cli := map[string]string{"codex": "codex", "claude-code": "claude", "opencode": "opencode"}[a.preset]
	launched, stopWatch := launchWatch(b, cli)
	start := time.Now()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkTask})); code != 200 {
		b.Fatal(code)
	}
	h.runWorkers()
	tt.fresh = nextRequest(0).Sub(start)
	stopWatch()
	tt.freshLaunch = launched().Sub(start)
	first := h.onlySession()
	select {
	case <-holding:
	case <-time.After(5 * time.Minute):
		b.Fatalf("the CLI never asked for its first answer\n%s", h.logs)
	}
	held := len(model.Requests())

	start = time.Now()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkSteer, sender: "mara"})); code != 200 {
		b.Fatal(code)
	}
	h.runWorkers()
	tt.steer = nextRequest(held).Sub(start)
	h.waitForSessionAttempt(lx, first.ID)
	h.runWorkers()
	first, err := h.st.GetSession(context.Background(), first.ID)
	if err != nil || first.PRNumber == 0 {
		b.Fatalf("the first session: %s (%v)\n%s", first.Outcome, err, h.logs)
	}

	if empty {
		entries, err := os.ReadDir(layers)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(layers, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
	}
	model.Script(fakemodel.Turn{Message: "Nothing more to do."})
	before := len(model.Requests())
	h.clock.Advance(time.Minute)
	launched, stopWatch = launchWatch(b, cli)
	start = time.Now()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkContinue, sender: "ada", onPR: true, number: first.PRNumber})); code != 200 {
		b.Fatal(code)
	}
	h.runWorkers()
	tt.cont = nextRequest(before).Sub(start)
	stopWatch()
	tt.contLaunch = launched().Sub(start)
	onPR, err := h.st.SessionsForTarget(context.Background(), repoID, first.PRNumber, 10)
	if err != nil || len(onPR) != 1 {
		b.Fatalf("the continuation: %+v (%v)", onPR, err)
	}
	h.waitForSessionAttempt(lx, onPR[0].ID)
	h.runWorkers()
	return tt
}
