package local

import (
	"errors"

	"golang.org/x/sys/unix"
)

func supported() error { return nil }

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
