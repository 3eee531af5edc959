package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// Of many replicas asking at once, one runs a periodic job per interval;
// the job is due again only when the interval has passed.
func TestClaimTickOnePerIntervalAcrossReplicas(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for round, at := range []time.Time{t0, t0.Add(30 * time.Second), t0.Add(time.Minute), t0.Add(61 * time.Second)} {
			var won atomic.Int32
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.ClaimTick(ctx, "reconcile_targets", fmt.Sprintf("replica-%d", i), at, time.Minute)
					if err != nil {
						t.Errorf("ClaimTick: %v", err)
					}
					if ok {
						won.Add(1)
					}
				}()
			}
			wg.Wait()
			want := []int32{1, 0, 1, 0}[round]
			if got := won.Load(); got != want {
				t.Errorf("round %d at %s: %d replicas ran the job, want %d", round, at.Sub(t0), got, want)
			}
		}
		// Another job has its own schedule.
		if ok, err := s.ClaimTick(ctx, "redelivery_sweep", "replica-0", t0.Add(61*time.Second), time.Minute); err != nil || !ok {
			t.Errorf("first ask of another job = %v, %v; want due", ok, err)
		}
	})
}

func TestHeartbeatsTellLiveReplicasFromDeadOnes(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, r := range []string{"a", "b"} {
			if err := s.Heartbeat(ctx, r, t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Heartbeat(ctx, "a", t0.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		since := t0.Add(10 * time.Second)
		if n, err := s.LiveReplicas(ctx, since); n != 1 || err != nil {
			t.Errorf("LiveReplicas = %d, %v; want a alone", n, err)
		}
		if n, err := s.LiveReplicas(ctx, t0.Add(-time.Second)); n != 2 || err != nil {
			t.Errorf("LiveReplicas since before both beat = %d, %v; want 2", n, err)
		}
		for name, want := range map[string]bool{"a": true, "b": false, "never": false} {
			if got, err := s.ReplicaAlive(ctx, name, since); err != nil || got != want {
				t.Errorf("ReplicaAlive(%s) = %v, %v; want %v", name, got, err, want)
			}
		}
		if err := s.Leave(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if alive, _ := s.ReplicaAlive(ctx, "a", since); alive {
			t.Error("a replica that left still reads as alive")
		}
		if err := s.PruneReplicas(ctx, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if alive, _ := s.ReplicaAlive(ctx, "b", t0.Add(-time.Hour)); alive {
			t.Error("a pruned replica still has a row")
		}
	})
}

func TestRedeliveryCountsPerGUID(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for range 3 {
			if err := s.RecordRedelivery(ctx, "guid-1", t0); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.Redeliveries(ctx, "guid-1"); err != nil || n != 3 {
			t.Errorf("Redeliveries(guid-1) = %d, %v; want 3", n, err)
		}
		if n, err := s.Redeliveries(ctx, "guid-2"); err != nil || n != 0 {
			t.Errorf("Redeliveries(guid-2) = %d, %v; want 0", n, err)
		}
		if err := s.PruneRedeliveries(ctx, t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.Redeliveries(ctx, "guid-1"); n != 0 {
			t.Errorf("after pruning, Redeliveries(guid-1) = %d", n)
		}
		if known, err := s.DeliveryKnown(ctx, "d-1"); err != nil || known {
			t.Errorf("DeliveryKnown before accepting = %v, %v", known, err)
		}
		if _, err := s.Accept(ctx, acceptance("d-1", 77, "s1")); err != nil {
			t.Fatal(err)
		}
		if known, err := s.DeliveryKnown(ctx, "d-1"); err != nil || !known {
			t.Errorf("DeliveryKnown after accepting = %v, %v", known, err)
		}
	})
}
