package local

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

func supported() error { return nil }

// diesWithApp asks the kernel to SIGKILL the supervisor when the app dies
// (SIGKILL, OOM), and with it the sandbox (--die-with-parent), so an
// attempt never outlives the replica that other replicas re-dispatch it
// from. The signal follows the OS thread that started the child; the Go
// runtime retires a thread only when a goroutine locked to it exits, which
// none of ours does.
func diesWithApp(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Pdeathsig = syscall.SIGKILL
	return a
}

// waitExitedNoReap blocks until process pid has exited, leaving it a zombie
// for exec.Cmd.Wait to reap.
func waitExitedNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return // exited, or not our child any more (then Wait reports it)
		}
	}
}
