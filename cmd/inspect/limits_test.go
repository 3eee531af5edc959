package main

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// The server's executor.limits and sandbox ids reach each local
// supervisor through `inspect runner`'s flags, value for value.
func TestRunnerLimitArgsCarryTheServersLimits(t *testing.T) {
	x := config.Defaults().Executor
	x.SandboxUID, x.SandboxGID = 70000, 70001
	args := runnerLimitArgs(x)

	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var got contract.SandboxLimits
	limitFlags(fs, &got, contract.SandboxLimits{})
	uid := fs.Int("sandbox-uid", -1, "")
	gid := fs.Int("sandbox-gid", -1, "")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	if got != defaultLimits() || *uid != 70000 || *gid != 70001 {
		t.Fatalf("limits %+v uid %d gid %d from %q", got, *uid, *gid, args)
	}
	if want := (contract.SandboxLimits{MemoryBytes: 4 << 30, Pids: 4096, CPUShares: 512, TmpBytes: 2 << 30, WorkspaceBytes: 10 << 30, SessionMemoryBytes: 8 << 30, SessionPids: 8192}); got != want {
		t.Errorf("the defaults are %+v, want %+v (docs/configuration.md states them)", got, want)
	}
	x.SandboxUID, x.SandboxGID = 0, 0
	if args := runnerLimitArgs(x); slices.Contains(args, "--sandbox-uid") {
		t.Errorf("no sandbox_uid configured, yet %q", args)
	}
}
