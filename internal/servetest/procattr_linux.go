package servetest

import "syscall"

// sysProcAttr puts the replica in its own process group, so Kill can take
// its children with it, and has the kernel kill it should the test binary
// die (a -timeout panic runs no cleanup). The kernel ties Pdeathsig to the
// thread that forked, which the Go runtime keeps for the process's life
// unless a goroutine exits while locked to it (runtime.LockOSThread), which
// a test starting replicas should not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
