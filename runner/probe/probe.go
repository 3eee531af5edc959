// Package probe is `inspect runner probe-tcp`, the readiness check of a
// service whose ready is a TCP port: the supervisor runs it in the
// session's environment, since only a process inside sees that loopback
// (the supervisor's own 127.0.0.1 is the host's).
package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Interval is how often TCP tries to connect.
const Interval = 50 * time.Millisecond

// TCP connects to 127.0.0.1:port until a connection is accepted (nil) or
// ctx ends (its error, with the last dial's).
func TCP(ctx context.Context, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is not from 1 to 65535", port)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var d net.Dialer
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = c.Close() // a connection accepted is the answer; nothing is sent
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}
