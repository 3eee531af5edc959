package faults_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkIntakeTwoReplicas is the sustained intake of two replicas on
// one PostgreSQL: distinct /inspect commands delivered by the stand-in
// (signed, over loopback) from 16 senders at once, round-robin between the
// replicas, while their workers prepare the sessions. The acknowledgement
// time is the sender's: from the POST to the 2xx. Sessions are not run
// (executor none): this measures intake, not sandboxes.
func BenchmarkIntakeTwoReplicas(b *testing.B) {
	// "preparing": the workers prepare each session as it comes (GitHub
	// calls to the same stand-in, on the same two cores); "intake": no
	// workers, the webhook path alone.
	for _, workers := range []int{4, 0} {
		name := "preparing"
		if workers == 0 {
			name = "intake"
		}
		b.Run(name, func(b *testing.B) { benchIntake(b, workers) })
	}
}

func benchIntake(b *testing.B, workers int) {
	f := newFleet(b, fleetOptions{set: map[string]any{"executor.kind": "none", "workers.count": workers}})
	f.start()
	f.start()
	const senders = 16
	payloads := make([][]byte, b.N)
	for i := range b.N {
		f.issue(1000 + i)
		payloads[i] = f.comment(1000+i, fmt.Sprintf("/inspect task %d", i))
	}
	ctx := context.Background()
	acks := make([]time.Duration, b.N)
	next := make(chan int)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				d := f.gh.Deliver(ctx, "issue_comment", payloads[i])
				acks[i] = time.Since(t0)
				if d.StatusCode != 200 {
					b.Errorf("delivery %d: %d %s", i, d.StatusCode, d.Status)
				}
			}
		}()
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(acks)
	pct := func(p float64) float64 { return float64(acks[int(p*float64(len(acks)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the per-delivery time is the ack, reported above
}
