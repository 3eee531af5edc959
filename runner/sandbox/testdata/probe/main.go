// Command probe is a test helper for package sandbox. The tests build it once
// (statically, CGO_ENABLED=0) and bind it read-only into the sandbox, where it
// reports what the sandbox lets a process see and do. It is not part of any
// production binary: testdata is invisible to `go build ./...`.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe COMMAND [ARGS...]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "args":
		// Every argument, one per line, Go-quoted, so the test can compare them
		// byte for byte.
		for _, a := range args {
			fmt.Printf("%q\n", a)
		}
	case "dial-tcp":
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			fmt.Println("dial-tcp failed:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("dial-tcp connected")
	case "listen":
		// Listen on args[0], say "ready", and answer one connection with
		// "hello from the listener".
		ln, err := net.Listen("tcp", args[0])
		if err != nil {
			fmt.Println("listen failed:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		c, err := ln.Accept()
		if err != nil {
			fmt.Println("accept failed:", err)
			os.Exit(1)
		}
		fmt.Fprintln(c, "hello from the listener")
		c.Close()
	case "dial-read":
		// Connect to args[0] and print the line it sends.
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			fmt.Println("dial-read failed:", err)
			os.Exit(1)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		fmt.Print(line)
	case "ns":
		// The namespaces this process is in, one "name target" a line.
		for _, n := range args {
			l, err := os.Readlink("/proc/self/ns/" + n)
			if err != nil {
				fmt.Println("ns failed:", err)
				os.Exit(1)
			}
			fmt.Println(n, l)
		}
	case "write-tmp":
		if err := os.WriteFile("/tmp/"+args[0], []byte("x"), 0o644); err != nil {
			fmt.Println("write-tmp failed:", err)
			os.Exit(1)
		}
	case "dial-unix":
		c, err := net.Dial("unix", args[0])
		if err != nil {
			fmt.Println("dial-unix failed:", err)
			os.Exit(1)
		}
		defer c.Close()
		fmt.Fprintln(c, args[1])
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			fmt.Println("dial-unix read failed:", err)
			os.Exit(1)
		}
		fmt.Print(line)
	case "ps":
		// pid<TAB>cmdline for every process this /proc shows.
		ents, err := os.ReadDir("/proc")
		if err != nil {
			fmt.Println("ps failed:", err)
			os.Exit(1)
		}
		var pids []int
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, n)
			}
		}
		sort.Ints(pids)
		for _, p := range pids {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			fmt.Printf("%d\t%s\n", p, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
		}
	case "hang":
		// Blocks until killed; args[0] is a marker the test looks for in
		// /proc/*/cmdline on the host.
		blockUntilKilled()
	case "daemonize":
		// The double fork: start `probe hang MARKER` in its own session and
		// exit at once, so the grandchild is orphaned inside the sandbox.
		c := exec.Command(os.Args[0], "hang", args[0])
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			fmt.Println("daemonize failed:", err)
			os.Exit(1)
		}
	case "spawn":
		// A setsid'd child and a double-forked grandchild, both `hang MARKER`,
		// then "ready"; then wait for the test to close the FIFO args[1] (it
		// looks at the host's processes first), then exit 0 with both
		// background processes still running.
		spawn(args[0])
		fmt.Println("ready")
		f, err := os.Open(args[1])
		if err != nil {
			fmt.Println("spawn: opening the FIFO failed:", err)
			os.Exit(1)
		}
		io.Copy(io.Discard, f)
	case "tree":
		// spawn, then hang as the third process with the marker. (It does not
		// exec itself into `hang`: mid-execve its cmdline can read empty.)
		spawn(args[0])
		fmt.Println("ready")
		blockUntilKilled()
	case "ls":
		ents, err := os.ReadDir(args[0])
		if err != nil {
			fmt.Println("ls failed:", err)
			os.Exit(1)
		}
		for _, e := range ents {
			fmt.Println(e.Name())
		}
	case "cat":
		b, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Println("cat failed:", err)
			os.Exit(1)
		}
		os.Stdout.Write(b)
	case "whoami":
		groups, _ := os.Getgroups()
		host, _ := os.Hostname()
		fmt.Printf("uid=%d gid=%d groups=%v hostname=%s\n", os.Getuid(), os.Getgid(), groups, host)
	case "unshare-user":
		newUserNamespace()
	case "alloc":
		// Allocate args[0] bytes and touch every page, so they are really
		// charged; print "allocated" if that worked.
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			fmt.Println("alloc failed:", err)
			os.Exit(2)
		}
		b := make([]byte, n)
		for i := int64(0); i < n; i += 4096 {
			b[i] = 1
		}
		fmt.Println("allocated", len(b))
	default:
		fmt.Fprintln(os.Stderr, "probe: unknown command", cmd)
		os.Exit(2)
	}
}

// newUserNamespace tries to start a child in a nested user namespace (a Go
// process cannot unshare(CLONE_NEWUSER) itself, being multi-threaded, so it
// asks clone for one).
func spawn(marker string) {
	self := os.Args[0]
	c := exec.Command(self, "hang", marker)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		fmt.Println("spawn failed:", err)
		os.Exit(1)
	}
	if err := exec.Command(self, "daemonize", marker).Run(); err != nil {
		fmt.Println("spawn failed:", err)
		os.Exit(1)
	}
}

func newUserNamespace() {
	c := exec.Command(os.Args[0], "args", "inside-new-userns")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	out, err := c.CombinedOutput()
	if err != nil {
		fmt.Println("unshare-user failed:", err)
		os.Exit(1)
	}
	fmt.Print(string(out))
	fmt.Println("unshare-user succeeded")
}

// blockUntilKilled waits for a signal that never comes, so only SIGKILL ends
// the process. (A bare `select {}` would be a deadlock the Go runtime ends;
// a registered signal keeps the runtime's signal goroutine alive.)
func blockUntilKilled() {
	never := make(chan os.Signal, 1)
	signal.Notify(never, syscall.SIGUSR2)
	<-never
}
