//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
)

var errUnsupported = fmt.Errorf("sandbox: bubblewrap sandboxes need Linux: %w", errors.ErrUnsupported)

// Available reports that sandboxes cannot run on this system.
func Available() error { return errUnsupported }

// Run cannot run a sandbox on this system.
func Run(ctx context.Context, s Spec) (Result, error) { return Result{}, errUnsupported }
