package sandbox

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func startEnvironment(t *testing.T) *Environment {
	t.Helper()
	uid, gid := sandboxIDs()
	env, err := StartEnvironment(context.Background(), uid, gid)
	if err != nil {
		t.Fatalf("StartEnvironment: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return env
}

// nsLines runs the probe's "ns" in s and returns name → namespace.
func nsLines(t *testing.T, s Spec) map[string]string {
	t.Helper()
	s.Argv = []string{probeTarget, "ns", "net", "ipc", "pid", "mnt", "user"}
	res, stdout, stderr := run(t, s)
	if res.ExitCode != 0 {
		t.Fatalf("ns: exit %d: %s %s", res.ExitCode, stdout, stderr)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(l, " ")
		m[k] = v
	}
	return m
}

// nsLinesKept is nsLines for a command that then stays alive until stop,
// which kills it and waits for it.
func nsLinesKept(t *testing.T, s Spec) (map[string]string, func()) {
	t.Helper()
	s.Argv = []string{"sh", "-c", `"$0" ns net ipc pid mnt user && echo kept && exec sleep 300`, probeTarget}
	out, stop := runKept(t, s)
	m := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "kept" {
		k, v, _ := strings.Cut(sc.Text(), " ")
		m[k] = v
	}
	return m, func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// runKept starts s in the background and hands back its standard output
// as it comes; stop kills the command, drains what is left and returns
// Run's error. A test that fails early still ends the command.
func runKept(t *testing.T, s Spec) (out *bufio.Reader, stop func() error) {
	t.Helper()
	pr, pw := io.Pipe()
	s.Stdout = pw
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, s)
		pw.Close()
		done <- err
	}()
	return bufio.NewReader(pr), func() error {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, pr) }() // drained to EOF, which pw.Close gives
		return <-done
	}
}

func TestEnvironmentSharesNetworkAndIPCButNotPIDMountsOrTmp(t *testing.T) {
	env := startEnvironment(t)
	in := newSpec(t)
	in.Within = env
	// The first command stays alive while the second runs: a namespace's
	// inode number is reused once it is freed, so two commands one after
	// the other could show the same number for namespaces of their own.
	a, stopA := nsLinesKept(t, in)
	b := nsLines(t, in)
	stopA()
	alone := nsLines(t, newSpec(t))
	for _, n := range []string{"net", "ipc"} {
		if a[n] == "" || a[n] != b[n] {
			t.Errorf("%s: two commands in one environment see %q and %q, want the same", n, a[n], b[n])
		}
		if a[n] == alone[n] {
			t.Errorf("%s: a command alone shares %q with the environment's", n, a[n])
		}
	}
	for _, n := range []string{"pid", "mnt"} {
		if a[n] == "" || a[n] == b[n] {
			t.Errorf("%s: two commands in one environment share %q, want each its own", n, a[n])
		}
	}

	// Each command still gets its own /tmp.
	w := newSpec(t, probeTarget, "write-tmp", "left-by-the-first")
	w.Within = env
	if res, out, _ := run(t, w); res.ExitCode != 0 {
		t.Fatalf("write-tmp: %d %s", res.ExitCode, out)
	}
	ls := newSpec(t, probeTarget, "ls", "/tmp")
	ls.Within = env
	if _, out, _ := run(t, ls); strings.Contains(out, "left-by-the-first") {
		t.Errorf("a later command's /tmp holds an earlier one's file: %q", out)
	}
}

func TestEnvironmentCommandsShareLoopback(t *testing.T) {
	env := startEnvironment(t)
	const addr = "127.0.0.1:5432" // the host may listen here too: the environment's loopback is its own
	ready := make(chan struct{})
	listener := newSpec(t, probeTarget, "listen", addr)
	listener.Within = env
	listener.Stdout = &onReady{f: func() { close(ready) }}
	var wg sync.WaitGroup
	var lres Result
	var lerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		lres, lerr = Run(context.Background(), listener)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never became ready")
	}
	// A command alone has a loopback of its own, with nothing on it.
	alone := newSpec(t, probeTarget, "dial-read", addr)
	if res, out, _ := run(t, alone); res.ExitCode == 0 {
		t.Errorf("a command outside the environment reached its listener: %q", out)
	}
	dial := newSpec(t, probeTarget, "dial-read", addr)
	dial.Within = env
	res, out, stderr := run(t, dial)
	if res.ExitCode != 0 || !strings.Contains(out, "hello from the listener") {
		t.Errorf("dial within the environment: exit %d %q %q, want the listener's hello", res.ExitCode, out, stderr)
	}
	wg.Wait()
	if lerr != nil || lres.ExitCode != 0 {
		t.Errorf("listener: %+v %v", lres, lerr)
	}
}

func TestEnvironmentCommandsRunAsTheSandboxUIDWithNoGroups(t *testing.T) {
	env := startEnvironment(t)
	uid, gid := sandboxIDs()
	marker := uniqueMarker(t)
	var status string
	s := newSpec(t, probeTarget, "tree", marker)
	s.Within = env
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Stdout = &onReady{f: func() {
		// The host's view of the command's processes: the sandbox's ids,
		// never root's, and no supplementary group.
		for _, p := range processesWith(marker) {
			pid, _, _ := strings.Cut(p, ":")
			b, err := os.ReadFile("/proc/" + pid + "/status")
			if err == nil {
				status += string(b)
			}
		}
		cancel()
	}}
	res, err := Run(ctx, s)
	if err != nil || !res.Cancelled {
		t.Fatalf("Run: %+v %v", res, err)
	}
	if status == "" {
		t.Fatal("no process of the command was seen on the host")
	}
	ids := strconv.Itoa(int(uid))
	gids := strconv.Itoa(int(gid))
	for _, l := range strings.Split(status, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 0:
		case f[0] == "Uid:" && (len(f) != 5 || f[1] != ids || f[2] != ids || f[3] != ids || f[4] != ids):
			t.Errorf("host uids %q, want all %s", l, ids)
		case f[0] == "Gid:" && (len(f) != 5 || f[1] != gids || f[2] != gids || f[3] != gids || f[4] != gids):
			t.Errorf("host gids %q, want all %s", l, gids)
		case f[0] == "Groups:" && len(f) != 1:
			t.Errorf("host supplementary groups %q, want none", l)
		}
	}
	// Cancelled: the tree is gone, as for a command alone.
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("left running after Run returned: %q", left)
	}
}

func TestEnvironmentCloseEndsTheHolder(t *testing.T) {
	uid, gid := sandboxIDs()
	env, err := StartEnvironment(context.Background(), uid, gid)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(env.pid, 0)
	if err != nil {
		t.Fatalf("pidfd of the holder: %v", err)
	}
	defer unix.Close(fd)
	if err := env.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close returned only after the holder's init exited, so its pidfd
	// reads as exited at once, with no wait (a zombie until the host's
	// init reaps it, as bwrap leaves it).
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 0); err != nil || n != 1 {
		t.Errorf("the holder has not exited after Close (poll: %d %v)", n, err)
	}
	if err := env.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	s := newSpec(t, probeTarget, "whoami")
	s.Within = env
	if _, err := Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "environment has ended") {
		t.Errorf("Run within a closed environment: %v, want an error saying it ended", err)
	}
}

// StartEnvironment returns only once the holder's user namespace maps the
// sandbox's ids: bwrap reports its child's pid before it writes the maps,
// and a command joining before then could not take those ids.
func TestEnvironmentIsCompleteWhenStartReturns(t *testing.T) {
	uid, gid := sandboxIDs()
	for range 5 {
		env, err := StartEnvironment(context.Background(), uid, gid)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			file string
			id   uint32
		}{{"uid_map", uid}, {"gid_map", gid}} {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(env.pid) + "/" + m.file)
			f := strings.Fields(string(b))
			if err != nil || len(f) != 3 || f[1] != strconv.Itoa(int(m.id)) {
				t.Errorf("%s of the holder right after the start: %q %v, want %d mapped", m.file, b, err, m.id)
			}
		}
		s := newSpec(t, probeTarget, "whoami")
		s.Within = env
		if res, out, stderr := run(t, s); res.ExitCode != 0 || !strings.Contains(out, "uid="+strconv.Itoa(int(uid))) {
			t.Errorf("a command right after the start: exit %d %q %q", res.ExitCode, out, stderr)
		}
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
