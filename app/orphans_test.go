package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/inspecthq/inspect/session"
)

// listingExecutor is a scriptedExecutor that also lists its running
// supervisors, as the local executor does.
type listingExecutor struct{ *scriptedExecutor }

func (e listingExecutor) Running(context.Context) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for i, l := range e.launches {
		if id := fmt.Sprintf("scripted-%d", i+1); !e.exited[id] && !slices.Contains(e.cancelled, id) {
			out[id] = l.AttemptID
		}
	}
	return out
}

// A supervisor still running here for an attempt the store has ended by
// another path (another replica took the session over while this one
// could not beat) is stopped, once it has had the time to finish on its
// own; one whose attempt is still wanted is left alone.
func TestReconcileStopsSupervisorsWhoseAttemptEnded(t *testing.T) {
	ex := &scriptedExecutor{}
	h := newHarness(t)
	h.stop()
	h.exec = listingExecutor{ex}
	h.start()
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig}, "config")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.State() != session.Dispatched {
		t.Fatalf("state = %s (%s)\n%s", sess.State(), sess.Detail, h.logs)
	}
	h.runWorkers()
	if len(ex.cancelled) != 0 {
		t.Fatalf("a wanted supervisor was stopped: %v", ex.cancelled)
	}
	// Another replica ended the attempt.
	if err := h.st.EndAttempt(context.Background(), sess.AttemptID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	h.runWorkers()
	if len(ex.cancelled) != 0 {
		t.Fatalf("stopped at once, before it could finish by itself: %v", ex.cancelled)
	}
	h.clock.Advance(3 * time.Minute)
	h.runWorkers()
	if !slices.Equal(ex.cancelled, []string{"scripted-1"}) {
		t.Errorf("cancelled = %v, want the orphaned scripted-1", ex.cancelled)
	}
}
