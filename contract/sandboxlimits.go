package contract

// SandboxLimits cap what one sandboxed command, with everything it starts, may
// use (decision 0031). A zero field means no limit of that kind.
//
// Memory, Pids and CPUShares are enforced by a cgroup of the command's own
// when the host lets the supervisor make one: cgroup v2, or the v1 memory,
// pids and cpu controllers where that is what the host has. Without one
// (an unprivileged supervisor on a host with no delegated cgroup), Pids
// falls back to RLIMIT_NPROC, which counts every process of the sandbox
// uid on the host, and Memory and CPUShares are not enforced. Memory is
// never capped with RLIMIT_AS: Node, V8, Chromium and `go test -race`
// reserve far more address space than they use.
type SandboxLimits struct {
	// MemoryBytes caps RAM, page cache and tmpfs pages (/tmp) together.
	// Over it the kernel's OOM killer ends a process of the sandbox, and
	// Run then ends the rest.
	MemoryBytes int64
	// Pids caps processes and threads at once; fork and clone fail with
	// EAGAIN beyond it.
	Pids int64
	// CPUShares is the command's CPU weight against the host's other
	// work, in cgroup v1 cpu.shares units (1024 is an ordinary process's).
	// It shares the CPU out under contention; it is not a quota.
	CPUShares int64
	// TmpBytes is the size of the /tmp tmpfs; writes beyond it fail with
	// ENOSPC.
	TmpBytes int64
	// WorkspaceBytes caps the disk used under /workspace (files, counted
	// by allocated blocks). A watch measures it about once a second (less
	// often when a walk of the workspace takes long: the walks take at most
	// a twentieth of a core) and at the end, so a fast writer can overshoot
	// it by what it writes in between before it is stopped.
	WorkspaceBytes int64
	// SessionMemoryBytes and SessionPids cap a session's commands and
	// services together, beside each one's own limits above (decision
	// 0058): the supervisor makes one parent cgroup per attempt
	// (sandbox.Budget) that holds every command's and service's cgroup.
	// sandbox.Run ignores them; it takes the Budget in Spec.Budget.
	SessionMemoryBytes int64
	SessionPids        int64
}
