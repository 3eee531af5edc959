package sandbox

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// The acceptance experiments of issue 19: each is bounded by its own
// construction (10,000 processes, 1 GiB of memory, 1 GiB written), runs
// against small limits, ends with the limit named, and the next command
// under the same limits runs normally.

// smallLimits are far below what each experiment would take.
var smallLimits = contract.SandboxLimits{
	MemoryBytes:    128 << 20,
	Pids:           64,
	CPUShares:      256,
	TmpBytes:       16 << 20,
	WorkspaceBytes: 32 << 20,
}

func runLimited(t *testing.T, argv ...string) (Result, string, string) {
	t.Helper()
	s := newSpec(t, argv...)
	s.Limits = smallLimits
	return run(t, s)
}

// nextRuns shows that a command after an experiment runs as usual.
func nextRuns(t *testing.T) {
	t.Helper()
	res, stdout, stderr := runLimited(t, "sh", "-c", "echo next")
	if res.ExitCode != 0 || res.Limit != nil || strings.TrimSpace(stdout) != "next" {
		t.Fatalf("the next command: %+v, stdout %q, stderr %q", res, stdout, stderr)
	}
}

func wantLimit(t *testing.T, res Result, limit string, value int64) {
	t.Helper()
	if res.Limit == nil {
		t.Fatalf("no limit reported: %+v", res)
	}
	if res.Limit.Limit != limit || res.Limit.Value != value {
		t.Fatalf("limit %+v, want %s at %d", *res.Limit, limit, value)
	}
}

func TestProcessSpawnerEndsAtThePidsLimit(t *testing.T) {
	// Up to 10,000 sleepers at once; the limit is 64.
	res, _, stderr := runLimited(t, "sh", "-c", `i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait`)
	wantLimit(t, res, LimitPids, 64)
	if res.TimedOut {
		t.Fatalf("the spawner ran until the timeout: %+v (%s)", res, stderr)
	}
	nextRuns(t)
}

func TestOneGiBAllocationEndsAtTheMemoryLimit(t *testing.T) {
	res, stdout, _ := runLimited(t, probeTarget, "alloc", "1073741824")
	wantLimit(t, res, LimitMemory, 128<<20)
	if strings.Contains(stdout, "allocated") {
		t.Fatalf("the allocation succeeded under a 128 MiB limit: %q", stdout)
	}
	nextRuns(t)
}

func TestOneGiBWriteEndsAtTheWorkspaceLimit(t *testing.T) {
	res, _, _ := runLimited(t, "dd", "if=/dev/zero", "of=/workspace/big", "bs=1M", "count=1024")
	wantLimit(t, res, LimitWorkspace, 32<<20)
	nextRuns(t)
}

func TestTmpIsTheConfiguredSize(t *testing.T) {
	res, _, stderr := runLimited(t, "dd", "if=/dev/zero", "of=/tmp/big", "bs=1M", "count=64")
	if res.ExitCode == 0 || !strings.Contains(stderr, "No space left on device") {
		t.Fatalf("64 MiB into a 16 MiB /tmp: %+v, stderr %q", res, stderr)
	}
	nextRuns(t)
}

func TestLimitNamesItsValue(t *testing.T) {
	for l, want := range map[LimitExceeded]string{
		{Limit: LimitMemory, Value: 512 << 20}:  "memory limit (512 MiB)",
		{Limit: LimitPids, Value: 1024}:         "process limit (1024 processes and threads)",
		{Limit: LimitWorkspace, Value: 8 << 30}: "workspace disk limit (8 GiB)",
	} {
		if got := l.String(); got != want {
			t.Errorf("%+v: %q, want %q", l, got, want)
		}
	}
}

// A command that goes over a limit and then carries on is stopped by the
// watch, well before its timeout, rather than found over it at the end.
func TestTheWatchStopsACommandThatCarriesOnOverALimit(t *testing.T) {
	s := newSpec(t, "sh", "-c", "dd if=/dev/zero of=/workspace/big bs=1M count=64 2>/dev/null && exec sleep 300")
	s.Limits = smallLimits
	s.Timeout = 2 * time.Minute
	res, _, stderr := run(t, s)
	wantLimit(t, res, LimitWorkspace, 32<<20)
	if res.TimedOut || res.Signal != "SIGKILL" || res.Duration > time.Minute {
		t.Fatalf("the command was not stopped by the watch: %+v (%s)", res, stderr)
	}
	nextRuns(t)
}

// Two sessions share the sandbox uid but not each other's files: a
// sandbox sees only what is bound into it, so another workspace's host
// path does not exist inside, while it runs too.
func TestAnotherWorkspaceIsInvisibleInTheSandbox(t *testing.T) {
	other := newWorkspace(t)
	keeper := newSpec(t, "sh", "-c", "echo mine > /workspace/secret && echo ready && exec sleep 300")
	keeper.Workspace = other
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // a test that fails early still ends the command
	pr, pw := io.Pipe()
	keeper.Stdout = pw
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, keeper)
		pw.Close()
		done <- err
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if line != "ready\n" {
		cancel()
		t.Fatalf("the other session's command said %q", line)
	}
	res, stdout, stderr := run(t, newSpec(t, "sh", "-c", `cat "$0/secret" || ls -d "$0" || echo invisible`, other))
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || strings.Contains(stdout, "mine") || !strings.Contains(stdout, "invisible") {
		t.Fatalf("another session's workspace from inside: %+v %q %q", res, stdout, stderr)
	}
}
