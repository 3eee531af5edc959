package sandbox

import (
	"bufio"
	"context"
	"io"
	"os"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Decision 0058: a session's commands and services share one budget, a
// parent cgroup, beside each one's own limits. Each experiment here runs
// a holder (a service's stand-in) and a second command in one budget, each
// under its own limit, together over the session's; the second ends naming
// the session's limit, not its own.

// newBudget makes a budget with the session limits given and closes it at
// the end of the test, checking that nothing of it is left.
func newBudget(t *testing.T, memoryBytes, pids int64) *Budget {
	t.Helper()
	if hostCgroupMode() == cgroupNone {
		t.Fatalf("this host gives the tests no cgroup (run them as root on a host with cgroup v1 memory and pids, or v2)")
	}
	b, err := NewBudget(contract.SandboxLimits{SessionMemoryBytes: memoryBytes, SessionPids: pids})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.dirs) == 0 {
		t.Fatalf("the budget made no cgroup")
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing the budget: %v", err)
		}
		for c, dir := range b.dirs {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the session's %s cgroup %s is still there (%v)", c, dir, err)
			}
		}
	})
	return b
}

// hold runs s in the background until it prints a line ("ready"), and
// returns once it has; the test's end stops it and waits for it.
func hold(t *testing.T, s Spec) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s.Stdout = pw
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, s)
		pw.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the holder: %v", err)
		}
	})
	line, _ := bufio.NewReader(pr).ReadString('\n') // EOF (it ended) reads as ""
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if line != "ready\n" {
		t.Fatalf("the holder said %q before it was ready", line)
	}
}

// perCommand are each command's own limits in these experiments: above
// what either takes alone.
var perCommand = contract.SandboxLimits{MemoryBytes: 128 << 20, Pids: 64}

func TestCommandsTogetherOverTheSessionLimitEndNamingIt(t *testing.T) {
	// The holder keeps 32 MiB (tail holds all its input until its
	// output is read, and sleep never reads it).
	holdMemory := `head -c 33554432 /dev/zero | tail -c 33554432 | { head -c 1 >/dev/null; echo ready; exec sleep 300; }`
	holdPids := `i=0; while [ $i -lt 30 ]; do sleep 300 & i=$((i+1)); done; echo ready; wait`
	for _, tc := range []struct {
		name                string
		sessionMem, sessPid int64
		holder              string
		argv                []string
		want                LimitExceeded
	}{
		// 32 MiB held and 96 MiB allocated, each under 128 MiB, together
		// over 96 MiB. The allocator is then the larger, so the OOM killer
		// picks it.
		{"memory", 96 << 20, 0, holdMemory, []string{probeTarget, "alloc", "100663296"}, LimitExceeded{Limit: LimitSessionMemory, Value: 96 << 20}},
		// 30 sleepers held and 60 more asked for, each under 64, together
		// over 64: the variant the review did not try.
		{"pids", 0, 64, holdPids, []string{"sh", "-c", `i=0; while [ $i -lt 60 ]; do sleep 300 & i=$((i+1)); done; wait`}, LimitExceeded{Limit: LimitSessionPids, Value: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBudget(t, tc.sessionMem, tc.sessPid)
			holder := newSpec(t, "sh", "-c", tc.holder)
			holder.Limits, holder.Budget = perCommand, b
			hold(t, holder)

			s := newSpec(t, tc.argv...)
			s.Limits, s.Budget = perCommand, b
			res, stdout, stderr := run(t, s)
			if res.Limit == nil || *res.Limit != tc.want {
				t.Fatalf("limit %+v, want %+v (%+v, stdout %q, stderr %q)", res.Limit, tc.want, res, stdout, stderr)
			}
		})
	}
}

// Within a budget with room to spare, a command over its own limit is
// still named by its own limit.
func TestACommandOverItsOwnLimitInABudgetNamesItsOwn(t *testing.T) {
	b := newBudget(t, 1<<30, 1024)
	for _, tc := range []struct {
		argv []string
		want LimitExceeded
	}{
		{[]string{probeTarget, "alloc", "268435456"}, LimitExceeded{Limit: LimitMemory, Value: 128 << 20}},
		{[]string{"sh", "-c", `i=0; while [ $i -lt 200 ]; do sleep 300 & i=$((i+1)); done; wait`}, LimitExceeded{Limit: LimitPids, Value: 64}},
	} {
		s := newSpec(t, tc.argv...)
		s.Limits, s.Budget = perCommand, b
		res, stdout, stderr := run(t, s)
		if res.Limit == nil || *res.Limit != tc.want {
			t.Fatalf("%s: limit %+v, want %+v (%+v, stdout %q, stderr %q)", tc.argv[len(tc.argv)-1], res.Limit, tc.want, res, stdout, stderr)
		}
	}
}

func TestSessionLimitsNameTheirKey(t *testing.T) {
	for l, want := range map[LimitExceeded]string{
		{Limit: LimitSessionMemory, Value: 8 << 30}: "the session's memory limit (session_memory_bytes, 8 GiB)",
		{Limit: LimitSessionPids, Value: 8192}:      "the session's process limit (session_pids, 8192 processes and threads)",
		{Limit: LimitMemory, Value: 4 << 30}:        "the sandbox's memory limit (4 GiB)",
	} {
		if got := l.Owned(); got != want {
			t.Errorf("%+v: %q, want %q", l, got, want)
		}
	}
}
