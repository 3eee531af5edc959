//go:build !linux

package local

import (
	"errors"
	"fmt"
	"syscall"
)

// The supervisor's sandbox needs Linux, and so does the executor that
// starts it (it waits for exits without reaping, with waitid).
func supported() error {
	return fmt.Errorf("local executor: needs Linux: %w", errors.ErrUnsupported)
}

func waitExitedNoReap(int) {}

func diesWithApp(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
