//go:build !linux

package servetest

import "syscall"

// sysProcAttr puts the replica in its own process group, so Kill can take
// its children with it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
