// Package forward is the small forwarder `inspect runner forward` runs as
// the sandbox's first process, before the agent: it listens on loopback
// inside the sandbox's own network namespace and relays each connection,
// byte for byte, to the egress socket the supervisor binds in. The agent's
// CLI is pointed at the loopback address; the supervisor's side of the
// socket decides what may leave (runner/supervisor's egress), so this side
// needs no rules and holds no credential.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// Options say where to listen and relay to, and what to run.
type Options struct {
	// Listen is a loopback address such as 127.0.0.1:8931.
	Listen string
	// Socket is the egress socket inside the sandbox.
	Socket string
	// Argv is the agent's command; it inherits this process's environment
	// and standard output and error.
	Argv []string
	// Stdin, when set, is a file given to the agent as its standard input
	// (the CLI presets read the prompt there: one argv element is limited
	// to 128 KiB).
	Stdin          string
	Stdout, Stderr io.Writer
	// Expose, when set, is the other way in: a Unix socket the forwarder
	// listens on (ExposeSocket, in a directory the supervisor binds in),
	// each connection relayed to ExposeAddr on the sandbox's loopback. The
	// supervisor reaches a server the agent runs there (`opencode serve`,
	// decision 0084) through it; the sandbox's network namespace has no
	// other way in.
	ExposeSocket, ExposeAddr string
}

// Run relays until the agent exits and returns its exit code (128+signal
// when a signal ended it). SIGTERM and SIGINT are passed on to the agent.
func Run(ctx context.Context, o Options) (int, error) {
	if len(o.Argv) == 0 {
		return 2, errors.New("no agent command after --")
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return 2, fmt.Errorf("--listen %q must be a loopback address and port", o.Listen)
	}
	if (o.ExposeSocket == "") != (o.ExposeAddr == "") {
		return 2, errors.New("--expose needs both a socket and an address: SOCKET=ADDR")
	}
	if o.ExposeAddr != "" {
		host, _, err := net.SplitHostPort(o.ExposeAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return 2, fmt.Errorf("--expose address %q must be a loopback address and port", o.ExposeAddr)
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return 1, fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	var conns sync.WaitGroup
	serve := func(ln net.Listener, network, to string) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed when the agent has exited
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				relay(c, network, to)
			}()
		}
	}
	go serve(ln, "unix", o.Socket)
	defer func() {
		_ = ln.Close() // the accept loop ends with it
		conns.Wait()
	}()
	if o.ExposeSocket != "" {
		in, err := net.Listen("unix", o.ExposeSocket)
		if err != nil {
			return 1, fmt.Errorf("listening on %s: %w", o.ExposeSocket, err)
		}
		// The supervisor may run as another user than the sandbox; the
		// directory the socket is in is what keeps others out.
		if err := os.Chmod(o.ExposeSocket, 0o666); err != nil {
			_ = in.Close() // the chmod's error is the one to report
			return 1, fmt.Errorf("opening %s to the supervisor: %w", o.ExposeSocket, err)
		}
		go serve(in, "tcp", o.ExposeAddr)
		// Deferred after ln's: closed first, so conns.Wait sees no new one.
		defer func() { _ = in.Close() }() // the accept loop ends with it; the socket file goes with the sandbox
	}

	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if o.Stdin != "" {
		f, err := os.Open(o.Stdin)
		if err != nil {
			return 1, fmt.Errorf("opening the agent's input: %w", err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("starting the agent: %w", err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig) // it may have exited already; Wait says
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			ctx = context.Background() // once
		case err := <-done:
			return exitCode(cmd, err), nil
		}
	}
}

func exitCode(cmd *exec.Cmd, err error) int {
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return 1
	}
	return cmd.ProcessState.ExitCode()
}

// relay copies c to a new connection to address to (a Unix socket's path
// or a TCP address) and back, half-closing each way as it ends, so a
// client that closes its write side still reads the answer.
func relay(c net.Conn, network, to string) {
	defer c.Close()
	up, err := net.Dial(network, to)
	if err != nil {
		return // the client sees the connection close; nothing else to tell it
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, c) // errors end the relay; the other side sees EOF
		closeWrite(up)
	}()
	_, _ = io.Copy(c, up)
	// The far side is done: the client gets EOF, and its side is closed
	// too, since a client that keeps its connection for another request
	// (an HTTP keep-alive, the supervisor's through Expose) would keep
	// this relay, and Run, waiting for it.
	closeWrite(c)
	_ = c.Close() // ends the copy above from c
	wg.Wait()
}

// closeWrite half-closes c when it can (TCP and Unix connections can).
func closeWrite(c net.Conn) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite() // the peer sees EOF or a reset; either ends its side
	}
}
