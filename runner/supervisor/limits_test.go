package supervisor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// Issue 19's experiments as whole attempts, each bounded by its own
// construction and run against small limits: an agent that spawns up to
// 10,000 processes, one that holds 1 GiB in memory, one that writes 1 GiB
// into the workspace. Each attempt ends limit_exceeded, naming the limit
// and its value, and the next attempt under the same limits runs to ok.
func TestAgentsOverALimitEndLimitExceededAndTheNextAttemptRuns(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		"spawn.sh": "i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait\n",
		// The shell holds the whole command substitution in memory.
		"alloc.sh": "x=$(head -c 1073741824 /dev/zero | tr '\\0' a); echo ${#x}\n",
		"write.sh": "dd if=/dev/zero of=big bs=1M count=1024\n",
		"ok.sh":    "echo fine > answer.txt\n",
	})
	limits := contract.SandboxLimits{MemoryBytes: 256 << 20, Pids: 64, CPUShares: 512, TmpBytes: 64 << 20, WorkspaceBytes: 128 << 20}

	for i, tc := range []struct {
		script string
		want   contract.LimitHit
		words  string
	}{
		{"spawn.sh", contract.LimitHit{Name: contract.LimitPids, Value: 64, Command: "agent"}, "process limit (64 processes and threads)"},
		{"alloc.sh", contract.LimitHit{Name: contract.LimitMemory, Value: 256 << 20, Command: "agent"}, "memory limit (256 MiB)"},
		{"write.sh", contract.LimitHit{Name: contract.LimitWorkspace, Value: 128 << 20, Command: "agent"}, "workspace disk limit (128 MiB)"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			id := fmt.Sprintf("sess-lim%d", i)
			h := newHarness(t, ch, ch.Spec(id, id+"-a1", sha, []string{"sh", tc.script}))
			h.cfg.Limits = limits
			u := h.result(t, h.run(t, context.Background()))
			ev := u.Evidence
			if u.Manifest != nil {
				t.Errorf("a run stopped over a limit sent a change of %d files", len(u.Manifest.Files))
			}
			if ev.Outcome != contract.OutcomeLimitExceeded {
				t.Fatalf("outcome %s (%s), want limit_exceeded", ev.Outcome, ev.Reason)
			}
			if ev.Limit == nil || *ev.Limit != tc.want {
				t.Fatalf("limit %+v, want %+v", ev.Limit, tc.want)
			}
			if !strings.Contains(ev.Reason, tc.words) {
				t.Errorf("reason %q does not name the limit and its value (%q)", ev.Reason, tc.words)
			}

			next := ch.Spec(id+"-next", id+"-next-a1", sha, []string{"sh", "ok.sh"},
				command("check", time.Minute, "test", "-s", "answer.txt"))
			h2 := newHarness(t, ch, next)
			h2.cfg.Limits = limits
			ev2 := h2.result(t, h2.run(t, context.Background())).Evidence
			if ev2.Outcome != contract.OutcomeOK || ev2.Limit != nil {
				t.Fatalf("the next attempt: %s (%s) limit %+v", ev2.Outcome, ev2.Reason, ev2.Limit)
			}
		})
	}
}

// A service that runs into a limit ends the session as a failed service,
// and the reason (which the app's reply shows) names the limit and its
// value.
func TestAServiceOverALimitEndsTheSessionNamingTheLimit(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"README.md": "hi\n", "agent/idle.sh": "#!/bin/sh\ntrue\n"})
	spec := ch.Spec("sess-svclim", "sess-svclim-a1", sha, []string{"sh", "agent/idle.sh"}, command("waits", time.Minute, "sleep", "600"))
	// Ready as soon as it runs, then it spawns past the pids limit.
	spec.Services = []contract.Service{{
		Name:         "spawner",
		Argv:         []string{"sh", "-c", `echo up > /workspace/.up; sleep 1; i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait`},
		Ready:        contract.ServiceReady{Argv: []string{"test", "-e", "/workspace/.up"}},
		ReadyTimeout: contract.Duration(30 * time.Second),
	}}
	h := newHarness(t, ch, spec)
	h.cfg.Limits = contract.SandboxLimits{Pids: 64}
	ev := h.result(t, h.run(t, context.Background())).Evidence
	// Before or after it was found ready: the limit is named either way.
	want := "(stopped: it ran into the sandbox's process limit (64 processes and threads))"
	if ev.Outcome != contract.OutcomeError || !strings.HasPrefix(ev.Reason, "the service spawner exited ") || !strings.Contains(ev.Reason, want) {
		t.Fatalf("outcome %s: %q", ev.Outcome, ev.Reason)
	}
}
