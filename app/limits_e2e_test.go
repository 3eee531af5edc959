package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/examples"
)

// Issue 19's acceptance, end to end on the local executor: a session whose
// agent spawns up to 10,000 processes against a limit of 64 ends error
// with reason limit_exceeded and a reply naming the limit and its value;
// the app stays healthy, and the next session on the same issue runs to a
// change.
func TestRealSessionOverASandboxLimitEndsNamingItAndTheNextRuns(t *testing.T) {
	lx := newLocalExecutor(t,
		"--limit-pids", "64", "--limit-memory-bytes", "1073741824", "--limit-tmp-bytes", "268435456", "--limit-workspace-bytes", "1073741824")
	h := newHarness(t)
	h.runOn(lx)

	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"spawn.sh":            "i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait\n",
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"spawn.sh\"]\n",
	}, "an agent that spawns")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect spawn"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	first := h.onlySession()
	if first.Outcome != store.Errored || first.Reason != "limit_exceeded" {
		t.Fatalf("session = %s/%s (%s): %s\n%s", first.State, first.Outcome, first.Reason, first.Detail, h.logs)
	}
	if !strings.Contains(first.Detail, "limit of 64 processes and threads") {
		t.Errorf("the reply does not name the limit and its value: %q", first.Detail)
	}

	// The next session, on the sample repository, runs to a change.
	h.gh.CommitFiles(owner, repoName, "main", examples.SampleRepo(), "the sample repository")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	if next.AttemptID == "" {
		t.Fatalf("no second session started: %+v\n%s", h.sessions(), h.logs)
	}
	a, err := h.st.GetAttempt(context.Background(), next.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if st, err := lx.Wait(ctx, a.ExternalID); err != nil || st.ExitCode != 0 {
		t.Fatalf("inspect runner: %+v %v\n%s", st, err, h.logs)
	}
	h.runWorkers()
	next, err = h.st.GetSession(context.Background(), next.ID)
	if err != nil {
		t.Fatal(err)
	}
	if next.Outcome != store.Changed {
		t.Fatalf("the next session = %s/%s: %s\n%s", next.State, next.Outcome, next.Detail, h.logs)
	}
}
