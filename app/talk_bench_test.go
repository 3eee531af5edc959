package app_test

import (
	"context"
	"os"
	"path/filepath"
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
//     restored.
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
			var fresh, steer, cont time.Duration
			for range b.N {
				f, s, n := talkOnce(b, c.agent, c.empty)
				fresh, steer, cont = fresh+f, steer+s, cont+n
			}
			per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(per(fresh), "ms/fresh-start")
			b.ReportMetric(per(steer), "ms/steer-to-model")
			b.ReportMetric(per(cont), "ms/continuation-start")
		})
	}
}

// talkOnce runs one conversation and returns its three times.
func talkOnce(b *testing.B, a realAgent, empty bool) (fresh, steer, cont time.Duration) {
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

	start := time.Now()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkTask})); code != 200 {
		b.Fatal(code)
	}
	h.runWorkers()
	fresh = nextRequest(0).Sub(start)
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
	steer = nextRequest(held).Sub(start)
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
	start = time.Now()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkContinue, sender: "ada", onPR: true, number: first.PRNumber})); code != 200 {
		b.Fatal(code)
	}
	h.runWorkers()
	cont = nextRequest(before).Sub(start)
	onPR, err := h.st.SessionsForTarget(context.Background(), repoID, first.PRNumber, 10)
	if err != nil || len(onPR) != 1 {
		b.Fatalf("the continuation: %+v (%v)", onPR, err)
	}
	h.waitForSessionAttempt(lx, onPR[0].ID)
	h.runWorkers()
	return fresh, steer, cont
}
