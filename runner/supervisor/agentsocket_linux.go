package supervisor

import (
	"context"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// dialAgentSocket connects to the Unix socket name in dir, a directory the
// sandbox writes (AgentSocketDir on the host). The sandbox could have put
// a link in the socket's place, pointing at any socket of the host's: the
// name is opened with O_PATH|O_NOFOLLOW, must be a socket itself, and is
// connected to through the descriptor (/proc/self/fd/N), so no path of the
// sandbox's choosing is followed.
func dialAgentSocket(ctx context.Context, dir, name string) (net.Conn, error) {
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the agent's socket directory: %w", err)
	}
	defer func() { _ = unix.Close(dfd) }() // an O_PATH descriptor; nothing to flush
	fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the agent's socket: %w", err)
	}
	defer func() { _ = unix.Close(fd) }() // the connection does not need it once made
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("reading the agent's socket: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("the agent's socket %s is not a socket (mode %#o)", name, st.Mode&unix.S_IFMT)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d", fd))
}
