package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/runner/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// An agent that spawns up to 10,000 processes against a limit of 64 ends
// its attempt limit_exceeded, naming the limit and its value; the next
// attempt, under the same limits, runs to ok.
func TestAgentOverThePidsLimitEndsLimitExceededAndTheNextAttemptRuns(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		"spawn.sh": "i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait\n",
		"ok.sh":    "echo fine > answer.txt\n",
	})
	limits := sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64, CPUShares: 512, TmpBytes: 64 << 20, WorkspaceBytes: 256 << 20}

	spec := ch.Spec("sess-lim", "sess-lim-a1", sha, []string{"sh", "spawn.sh"})
	h := newHarness(t, ch, spec)
	h.cfg.Limits = limits
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeLimitExceeded {
		t.Fatalf("outcome %s (%s), want limit_exceeded", ev.Outcome, ev.Reason)
	}
	if ev.Limit == nil || *ev.Limit != (contract.LimitHit{Name: contract.LimitPids, Value: 64, Command: "agent"}) {
		t.Fatalf("limit %+v", ev.Limit)
	}
	if !strings.Contains(ev.Reason, "process limit (64 processes and threads)") {
		t.Errorf("reason %q does not name the limit and its value", ev.Reason)
	}

	next := ch.Spec("sess-lim2", "sess-lim2-a1", sha, []string{"sh", "ok.sh"},
		command("check", time.Minute, "test", "-s", "answer.txt"))
	h2 := newHarness(t, ch, next)
	h2.cfg.Limits = limits
	ev2 := h2.result(t, h2.run(t, context.Background())).Evidence
	if ev2.Outcome != contract.OutcomeOK || ev2.Limit != nil {
		t.Fatalf("the next attempt: %s (%s) limit %+v", ev2.Outcome, ev2.Reason, ev2.Limit)
	}
}
