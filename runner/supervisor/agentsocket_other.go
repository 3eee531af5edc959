//go:build !linux

package supervisor

import (
	"context"
	"errors"
	"net"
)

// dialAgentSocket needs Linux's O_PATH descriptors, as the sandbox needs
// Linux (runner/sandbox).
func dialAgentSocket(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the agent's socket is reached on Linux only")
}
