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
)

// LimitExceeded says which limit a command ran into, and its value.
type LimitExceeded struct {
	Limit string
	Value int64
}

// String names the limit and its value, for a reply: "memory limit
// (512 MiB)".
func (l LimitExceeded) String() string {
	if l.Limit == LimitPids {
		return fmt.Sprintf("process limit (%d processes and threads)", l.Value)
	}
	what := l.Limit
	if l.Limit == LimitWorkspace {
		what = "workspace disk"
	}
	return fmt.Sprintf("%s limit (%s)", what, contract.FormatBytes(l.Value))
}

// checkLimits refuses limits no cgroup or bwrap can take.
func checkLimits(l contract.SandboxLimits) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"MemoryBytes", l.MemoryBytes}, {"Pids", l.Pids}, {"CPUShares", l.CPUShares}, {"TmpBytes", l.TmpBytes}, {"WorkspaceBytes", l.WorkspaceBytes}} {
		if f.v < 0 {
			return fmt.Errorf("sandbox: Limits.%s is negative (%d)", f.name, f.v)
		}
	}
	if l.CPUShares != 0 && (l.CPUShares < 2 || l.CPUShares > 262144) {
		return fmt.Errorf("sandbox: Limits.CPUShares %d is outside 2..262144", l.CPUShares)
	}
	return nil
}
