package app_test

import (
	"testing"
	"time"
)

// BenchmarkContinuationStart is the control plane's part of a
// continuation's start: from the `/inspect` on a pull request whose
// session ended to the continuation's attempt handed to the executor
// (webhook, preparation, the conversation found, the spec with its
// history, dispatch), beside a fresh session's. The sandbox's own start
// (the snapshot restored, the agent's state restored) comes on top; with
// the real executor it is in BENCHMARKS.md.
func BenchmarkContinuationStart(b *testing.B) {
	var fresh, cont time.Duration
	for i := 0; i < b.N; i++ {
		t := b
		h, ex := newSessionHarness(t)
		withRealPR(t, h)
		start := time.Now()
		sv, spec := startOnPR(t, h, ex, "/inspect first")
		fresh += time.Since(start)
		sv.upload(spec, 0, fixedCalc)
		h.runWorkers()
		h.clock.Advance(time.Minute)
		start = time.Now()
		h.say(t, "ada", "/inspect and then more")
		if len(ex.launches) != 2 {
			b.Fatalf("the continuation was not dispatched: %d launches", len(ex.launches))
		}
		cont += time.Since(start)
	}
	b.ReportMetric(float64(fresh.Milliseconds())/float64(b.N), "ms/fresh-start")
	b.ReportMetric(float64(cont.Milliseconds())/float64(b.N), "ms/continuation-start")
}
