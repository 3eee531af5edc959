package faults_test

import (
	"context"
	"testing"
	"time"
)

// SIGTERM with sessions running on the replica: it stops claiming, hands
// its sessions back to the fleet (stopping their sandboxes), and exits 0
// within http.shutdown_timeout. The other replica runs them to the end;
// a handback does not use up a session's one re-dispatch.
func TestGracefulShutdownHandsBackAndExitsInTime(t *testing.T) {
	const sessions = 3
	const bound = 10 * time.Second
	f := newFleet(t, fleetOptions{agent: []string{"sh", "-c", "sleep 8"}, set: map[string]any{"http.shutdown_timeout": bound.String()}})
	stopping := f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for n := 1; n <= sessions; n++ {
		f.issue(n)
		if d := f.gh.Deliver(ctx, "issue_comment", f.comment(n, "/inspect take your time")); d.StatusCode != 200 {
			t.Fatalf("delivery %d: %d %s", n, d.StatusCode, d.Status)
		}
	}
	// Running means the supervisor claimed its attempt: the agent sleeps.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for running := 0; running < sessions; {
		running = 0
		for _, s := range f.sessions() {
			if s.State == "running" {
				running++
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("sessions never all ran\n%s", f.logTails())
		case <-tick.C:
		}
	}
	f.start()
	code, took := stopping.Term()
	if code != 0 || took > bound+2*time.Second {
		t.Errorf("SIGTERM: exit %d after %s, want 0 within %s\n%s", code, took, bound, f.logTails())
	}
	f.retarget()
	all := f.waitDone(sessions, 2*time.Minute)
	for _, s := range all {
		if s.Outcome != "no_change" || s.Redispatches != 0 {
			t.Errorf("session %s on #%d: %s/%s with %d re-dispatches, want no_change and none", s.ID, s.Number, s.Outcome, s.Reason, s.Redispatches)
		}
	}
	for n := 1; n <= sessions; n++ {
		if c := botComments(f.gh, n); len(c) != 1 {
			t.Errorf("#%d has %d bot comments, want 1", n, len(c))
		}
	}
}
