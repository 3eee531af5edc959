package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// The counts /metrics reads, on both drivers: sessions grouped by state,
// outcome and trigger; the sandboxes held (sessions dispatched or running,
// builds under way); each snapshot's build time; the delivery id read with
// claimed work; and the ended-session hook, told once per session, after
// the commit.
func TestMetricsCounts(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var mu sync.Mutex
		var ended []store.Session
		s.OnSessionEnded(func(x store.Session) {
			mu.Lock()
			defer mu.Unlock()
			ended = append(ended, x)
		})
		for i, id := range []string{"a", "b", "c"} {
			acc := acceptance("d-"+id, int64(100+i), id)
			if id == "b" {
				*acc.Session = store.Fixture(session.Running, *acc.Session)
			}
			if res, err := s.Accept(ctx, acc); err != nil || res != store.Accepted {
				t.Fatalf("accept %s: %v %v", id, res, err)
			}
		}
		done := func(x *store.Session) error { return x.End(session.Changed, "", "") }
		if _, err := s.MutateSession(ctx, "c", t0.Add(90*time.Second), done); err != nil {
			t.Fatal(err)
		}
		// Mutating a done session again ends nothing.
		if _, err := s.MutateSession(ctx, "c", t0.Add(2*time.Minute), func(x *store.Session) error { x.Detail = "later"; return nil }); err != nil {
			t.Fatal(err)
		}
		counts, err := s.SessionCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, c := range counts {
			got[strings.Join([]string{c.State, c.Outcome, c.Trigger}, "/")] = c.N
		}
		if len(got) != 3 || got["queued//comment"] != 1 || got["running//comment"] != 1 || got["done/changed/comment"] != 1 {
			t.Errorf("session counts = %v", got)
		}
		mu.Lock()
		if len(ended) != 1 || ended[0].ID != "c" || !ended[0].EndedAt.Equal(t0.Add(90*time.Second)) {
			t.Errorf("ended = %+v, want c once, at its end", ended)
		}
		mu.Unlock()

		w, err := s.Claim(ctx, "w", t0.Add(time.Hour), time.Minute)
		if err != nil || w == nil || w.SessionID == "" || w.DeliveryID != "d-"+w.SessionID {
			t.Fatalf("claimed %+v (%v), want its session's delivery id", w, err)
		}

		if err := s.WantSnapshots(ctx, 7, "acme/widgets", 1, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.StartSnapshotBuild(ctx, 7, t0.Add(20*time.Minute), t0); err != nil {
			t.Fatal(err)
		}
		running, err := s.SandboxesRunning(ctx, t0.Add(time.Minute))
		if err != nil || running["session"] != 1 || running["snapshot"] != 1 {
			t.Errorf("sandboxes while building = %v %v", running, err)
		}
		if built, err := s.SnapshotsBuilt(ctx); err != nil || len(built) != 0 {
			t.Errorf("built before any build = %+v %v", built, err)
		}
		if err := s.FinishSnapshotBuild(ctx, 7, store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("a", 64)}, t0.Add(3*time.Minute)); err != nil {
			t.Fatal(err)
		}
		running, err = s.SandboxesRunning(ctx, t0.Add(4*time.Minute))
		if err != nil || running["snapshot"] != 0 {
			t.Errorf("sandboxes after the build = %v %v", running, err)
		}
		built, err := s.SnapshotsBuilt(ctx)
		if err != nil || len(built) != 1 || built[0].Repo != "acme/widgets" || !built[0].BuiltAt.Equal(t0.Add(3*time.Minute)) {
			t.Errorf("built = %+v %v", built, err)
		}
	})
}
