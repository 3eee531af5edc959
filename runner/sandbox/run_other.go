//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/contract"
)

var errUnsupported = fmt.Errorf("sandbox: bubblewrap sandboxes need Linux: %w", errors.ErrUnsupported)

// Available reports that sandboxes cannot run on this system.
func Available() error { return errUnsupported }

// Run cannot run a sandbox on this system.
func Run(ctx context.Context, s Spec) (Result, error) { return Result{}, errUnsupported }

// Environment is a session's shared namespaces; this system has none.
type Environment struct{}

// StartEnvironment cannot start one on this system.
func StartEnvironment(ctx context.Context, uid, gid uint32) (*Environment, error) {
	return nil, errUnsupported
}

// Close does nothing here.
func (e *Environment) Close() error { return nil }

// Budget is a session's parent cgroup; this system has none.
type Budget struct{}

// NewBudget cannot make one on this system.
func NewBudget(lim contract.SandboxLimits) (*Budget, error) { return nil, errUnsupported }

// Close does nothing here.
func (b *Budget) Close() error { return nil }

// SweepBudgets has nothing to sweep on this system.
func SweepBudgets(started time.Time) ([]string, error) { return nil, nil }
