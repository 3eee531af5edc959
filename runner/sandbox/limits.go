package sandbox

import (
	"fmt"

	"github.com/inspecthq/inspect/contract"
)

// Names of the limits, as LimitExceeded.Limit gives them.
const (
	LimitMemory    = "memory"
	LimitPids      = "pids"
	LimitWorkspace = "workspace_disk"
	// The session's limits (decision 0058): every command and service of
	// one session together, reached by this command's share.
	LimitSessionMemory = "session_memory"
	LimitSessionPids   = "session_pids"
)

// LimitExceeded says which limit a command ran into, and its value.
type LimitExceeded struct {
	Limit string
	Value int64
}

// String names the limit and its value, for a reply: "memory limit
// (512 MiB)".
func (l LimitExceeded) String() string {
	switch l.Limit {
	case LimitSessionMemory:
		return fmt.Sprintf("session's memory limit (session_memory_bytes, %s)", contract.FormatBytes(l.Value))
	case LimitSessionPids:
		return fmt.Sprintf("session's process limit (session_pids, %d processes and threads)", l.Value)
	}
	if l.Limit == LimitPids {
		return fmt.Sprintf("process limit (%d processes and threads)", l.Value)
	}
	what := l.Limit
	if l.Limit == LimitWorkspace {
		what = "workspace disk"
	}
	return fmt.Sprintf("%s limit (%s)", what, contract.FormatBytes(l.Value))
}

// Owned names the limit with its owner, for a reason: "the sandbox's
// memory limit (512 MiB)" for a command's own, "the session's memory
// limit (session_memory_bytes, 8 GiB)" for the one its session's commands
// and services share.
func (l LimitExceeded) Owned() string {
	if l.Session() {
		return "the " + l.String()
	}
	return "the sandbox's " + l.String()
}

// Session says the limit is the session's, not the command's own.
func (l LimitExceeded) Session() bool {
	return l.Limit == LimitSessionMemory || l.Limit == LimitSessionPids
}

// checkLimits refuses limits no cgroup or bwrap can take.
func checkLimits(l contract.SandboxLimits) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"MemoryBytes", l.MemoryBytes}, {"Pids", l.Pids}, {"CPUShares", l.CPUShares}, {"TmpBytes", l.TmpBytes}, {"WorkspaceBytes", l.WorkspaceBytes}, {"SessionMemoryBytes", l.SessionMemoryBytes}, {"SessionPids", l.SessionPids}} {
		if f.v < 0 {
			return fmt.Errorf("sandbox: Limits.%s is negative (%d)", f.name, f.v)
		}
	}
	if l.CPUShares != 0 && (l.CPUShares < 2 || l.CPUShares > 262144) {
		return fmt.Errorf("sandbox: Limits.CPUShares %d is outside 2..262144", l.CPUShares)
	}
	return nil
}
