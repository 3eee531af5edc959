package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// These tests run the real bwrap; there are no mocks. A small static helper,
// testdata/probe, is built once and bound read-only into each sandbox at
// probeTarget, where it reports what it can see and do.

const probeTarget = "/opt/inspect-probe/probe"

var probePath string // the probe on the host

func TestMain(m *testing.M) {
	if err := Available(); err != nil {
		fmt.Fprintf(os.Stderr, "runner/sandbox tests need a working bubblewrap: %v\nRun .ci/ensure-bubblewrap from the repository root, then test again.\n", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "sandbox-probe-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // the sandbox uid binds it, so it must reach it
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe dir:", err)
		os.Exit(1)
	}
	probePath = filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-o", probePath, "./testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, so it also runs in a bare RootFS
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building testdata/probe: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandboxIDs are the ids sandboxes run as: nobody when the tests run as
// root (as they do here and in CI), else the tests' own.
func sandboxIDs() (uid, gid uint32) {
	if os.Geteuid() == 0 {
		return 65534, 65534
	}
	return uint32(os.Getuid()), uint32(os.Getgid())
}

// newDir is a temporary directory the sandbox uid can reach (t.TempDir's
// parents are 0700).
func newDir(t *testing.T) string {
	t.Helper()
	return sandboxtest.ReachableDir(t)
}

func newWorkspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(newDir(t), "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	uid, gid := sandboxIDs()
	if err := os.Chown(ws, int(uid), int(gid)); err != nil {
		t.Fatal(err)
	}
	return ws
}

func probeMount() Mount {
	return Mount{Source: probePath, Target: probeTarget, ReadOnly: true, File: true}
}

func newSpec(t *testing.T, argv ...string) Spec {
	t.Helper()
	uid, gid := sandboxIDs()
	return Spec{
		Workspace:   newWorkspace(t),
		ExtraMounts: []Mount{probeMount()},
		Argv:        argv,
		Env:         []string{"PATH=/usr/bin:/bin"},
		UID:         uid,
		GID:         gid,
		// The server's defaults (config.DefaultSandbox*): every test here
		// runs under them and the seccomp filter.
		Limits:  contract.SandboxLimits{MemoryBytes: 4 << 30, Pids: 4096, CPUShares: 512, TmpBytes: 2 << 30, WorkspaceBytes: 10 << 30},
		Timeout: time.Minute, // a backstop: no test here should come near it
	}
}

// run runs s with captured output and fails the test if Run errs.
func run(t *testing.T, s Spec) (res Result, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if s.Stdout == nil {
		s.Stdout = &out
	}
	if s.Stderr == nil {
		s.Stderr = &errOut
	}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v", s.Argv, err)
	}
	return res, out.String(), errOut.String()
}

func TestWorkspaceWriteIsVisibleOnTheHostOwnedByTheSandboxUID(t *testing.T) {
	s := newSpec(t, "/bin/sh", "-c", "printf hello > /workspace/out.txt && printf world > relative.txt")
	res, _, stderr := run(t, s)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %q", res.ExitCode, stderr)
	}
	uid, gid := sandboxIDs()
	for name, want := range map[string]string{"out.txt": "hello", "relative.txt": "world"} {
		p := filepath.Join(s.Workspace, name)
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Fatalf("%s on the host: %q, %v; want %q", name, got, err, want)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s owned by %d:%d, want the sandbox's %d:%d", name, st.Uid, st.Gid, uid, gid)
		}
	}
}

func TestEnvironmentIsExactlyTheGivenOne(t *testing.T) {
	t.Setenv("INSPECT_SECRET_CANARY", "xyz")
	env := []string{
		"PATH=/usr/bin:/bin",
		"GREETING=hello world",
		"TRICKY=$(echo pwned); `id` && echo \"$HOME\"\nsecond line",
		"EMPTY=",
	}
	s := newSpec(t, "/usr/bin/env", "-0")
	s.Env = env
	_, stdout, stderr := run(t, s)
	got := strings.Split(strings.TrimSuffix(stdout, "\x00"), "\x00")
	want := append(slices.Clone(env), "PWD=/workspace") // bwrap sets PWD after --chdir
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("environment inside:\n%q\nwant exactly:\n%q\n(stderr %q)", got, want, stderr)
	}

	// --clearenv only clears the command's environment; bwrap's own is
	// readable inside as /proc/1/environ, so Run starts bwrap with none.
	s = newSpec(t, "/bin/sh", "-c", `wc -c < /proc/1/environ; cat /proc/[0-9]*/environ | tr '\0' '\n'`)
	_, stdout, stderr = run(t, s)
	if first, _, _ := strings.Cut(stdout, "\n"); strings.TrimSpace(first) != "0" {
		t.Errorf("/proc/1/environ (bwrap's own environment) has %s bytes, want 0; stderr %q", first, stderr)
	}
	if strings.Contains(stdout, "INSPECT_SECRET_CANARY") || strings.Contains(stdout, "xyz") {
		t.Errorf("the host's INSPECT_SECRET_CANARY leaked into the sandbox:\n%s", stdout)
	}
}

func TestBwrapOptionsAreNotOnItsCommandLine(t *testing.T) {
	s := newSpec(t, "/bin/sh", "-c", `tr '\0' ' ' < /proc/1/cmdline`)
	s.Env = append(s.Env, "VALUE_ONLY_IN_ENV=needle-3141")
	_, stdout, _ := run(t, s)
	if !strings.HasPrefix(stdout, "bwrap --args 3 -- /bin/sh") {
		t.Fatalf("/proc/1/cmdline = %q, want bwrap --args 3 -- /bin/sh …", stdout)
	}
	for _, hidden := range []string{s.Workspace, "needle-3141", probePath, "--setenv"} {
		if strings.Contains(stdout, hidden) {
			t.Errorf("/proc/1/cmdline %q shows %q", stdout, hidden)
		}
	}
}

func TestRootOnlyFilesStayUnreadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test creates root-owned files and proves the uid drop: run it as root (CI does)")
	}
	secret := filepath.Join(newDir(t), "app-private-key.pem")
	if err := os.WriteFile(secret, []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(secret); err != nil || !bytes.Contains(b, []byte("TOPSECRET")) {
		t.Fatalf("control: the host cannot read its own secret: %v", err) // so the test can tell
	}

	// Not mounted: the file, and the host's private places, do not exist.
	s := newSpec(t, "/bin/sh", "-c", `for p in "$1" /root /home /sys /run /var; do test -e "$p" && echo "EXISTS $p"; done; cat "$1"`, "sh", secret)
	res, stdout, stderr := run(t, s)
	if res.ExitCode == 0 || strings.Contains(stdout, "EXISTS") || strings.Contains(stdout, "TOPSECRET") || !strings.Contains(stderr, "No such file or directory") {
		t.Errorf("unmounted root-only file: exit %d, stdout %q, stderr %q; want it absent", res.ExitCode, stdout, stderr)
	}

	// Mounted read-only: it exists, but the dropped uid may not read it (the
	// root trap: bwrap started as root would have read it).
	s = newSpec(t, "/bin/sh", "-c", "test -e /secret && echo present; cat /secret")
	s.ExtraMounts = append(s.ExtraMounts, Mount{Source: secret, Target: "/secret", ReadOnly: true, File: true})
	res, stdout, stderr = run(t, s)
	if !strings.Contains(stdout, "present") || strings.Contains(stdout, "TOPSECRET") || !strings.Contains(stderr, "Permission denied") || res.ExitCode == 0 {
		t.Errorf("mounted root-only file: exit %d, stdout %q, stderr %q; want Permission denied", res.ExitCode, stdout, stderr)
	}
}

func TestIdentityIsTheUnprivilegedUIDWithNoExtraGroups(t *testing.T) {
	_, stdout, _ := run(t, newSpec(t, probeTarget, "whoami"))
	uid, gid := sandboxIDs()
	want := fmt.Sprintf("uid=%d gid=%d groups=[] hostname=%s", uid, gid, Hostname) // root's supplementary groups are dropped
	if os.Geteuid() != 0 {
		want = fmt.Sprintf("uid=%d gid=%d", uid, gid) // an unprivileged run keeps its own groups
	}
	if !strings.HasPrefix(strings.TrimSpace(stdout), want) {
		t.Errorf("inside: %q, want %q", stdout, want)
	}
}

func TestProcShowsOnlyTheSandbox(t *testing.T) {
	_, stdout, _ := run(t, newSpec(t, probeTarget, "ps"))
	pids := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		pid, cmd, ok := strings.Cut(line, "\t")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			t.Fatalf("bad ps line %q in %q", line, stdout)
		}
		pids[n] = cmd
	}
	if len(pids) != 2 || !strings.HasPrefix(pids[1], "bwrap ") || pids[2] != probeTarget+" ps" {
		t.Errorf("/proc inside shows %v; want only bwrap's init (1) and the command (2)", pids)
	}
	for _, host := range []int{os.Getpid(), os.Getppid()} {
		if _, ok := pids[host]; ok {
			t.Errorf("host pid %d is visible inside", host)
		}
	}
}

func TestNetworkIsLoopbackOnlyButTheMountedSocketAnswers(t *testing.T) {
	// A TCP listener on the host's loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted sync.WaitGroup
	var mu sync.Mutex
	conns := 0
	accepted.Add(1)
	go func() {
		defer accepted.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns++
			mu.Unlock()
			c.Close()
		}
	}()
	addr := ln.Addr().String()

	out, err := exec.Command(probePath, "dial-tcp", addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "connected") {
		t.Fatalf("control: the probe cannot reach %s from the host: %v %s", addr, err, out) // so the test can tell
	}
	res, stdout, _ := run(t, newSpec(t, probeTarget, "dial-tcp", addr))
	if res.ExitCode == 0 || !strings.Contains(stdout, "dial-tcp failed") {
		t.Errorf("TCP to the host's %s from inside: exit %d, %q; want it refused", addr, res.ExitCode, stdout)
	}
	ln.Close()
	accepted.Wait()
	if conns != 1 {
		t.Errorf("the host listener accepted %d connections, want 1 (the control's)", conns)
	}

	// A Unix socket bound in as a file reaches a server outside.
	sock := filepath.Join(newDir(t), "egress.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	if err := os.Chmod(sock, 0o777); err != nil { // connect(2) needs write permission for the sandbox uid
		t.Fatal(err)
	}
	var served sync.WaitGroup
	served.Add(1)
	go func() {
		defer served.Done()
		c, err := uln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "pong: %s", line)
	}()
	s := newSpec(t, probeTarget, "dial-unix", "/run/inspect.sock", "ping")
	s.ExtraMounts = append(s.ExtraMounts, Mount{Source: sock, Target: "/run/inspect.sock", File: true})
	res, stdout, stderr := run(t, s)
	if res.ExitCode != 0 || stdout != "pong: ping\n" {
		t.Errorf("the mounted socket: exit %d, stdout %q, stderr %q; want pong: ping", res.ExitCode, stdout, stderr)
	}
	uln.Close()
	served.Wait()
}

// processesWith lists host processes that have marker as an argument.
func processesWith(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil { // gone meanwhile
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if slices.Contains(args, marker) {
			found = append(found, e.Name()+": "+strings.Join(args, " "))
		}
	}
	return found
}

// probesWith lists the processes among found that are the probe itself (not
// bwrap, whose argv also carries the marker).
func probesWith(found []string) []string {
	var probes []string
	for _, f := range found {
		if strings.Contains(f, ": "+probeTarget+" ") {
			probes = append(probes, f)
		}
	}
	return probes
}

// onReady is a stdout writer that calls f once, from Run's copying
// goroutine, when the output holds "ready\n". Run waits for that goroutine
// before it returns, so what f records is safe to read afterwards.
type onReady struct {
	buf  bytes.Buffer
	done bool
	f    func()
}

func (w *onReady) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), "ready\n") {
		w.done = true
		w.f()
	}
	return len(p), nil
}

func uniqueMarker(t *testing.T) string {
	return fmt.Sprintf("inspect-sandbox-test-%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
}

func TestTimeoutKillsTheWholeTree(t *testing.T) {
	marker := uniqueMarker(t)
	var before []string
	s := newSpec(t, probeTarget, "tree", marker)
	s.Timeout = 3 * time.Second // what is tested: "tree" never ends by itself
	s.Stdout = &onReady{f: func() { before = processesWith(marker) }}
	res, _, stderr := run(t, s)

	if !res.TimedOut || res.Cancelled || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v, want TimedOut, exit -1, SIGKILL (stderr %q)", res, stderr)
	}
	if res.Duration < s.Timeout {
		t.Errorf("ended after %v, before the %v timeout", res.Duration, s.Timeout)
	}
	if probes := probesWith(before); len(probes) < 3 {
		t.Fatalf("before the timeout the host saw %d probe processes with the marker, want 3 (command, setsid child, double-forked grandchild): %q", len(probes), before)
	}
	// Run returned, so the sandbox's init has exited, which the kernel allows
	// only once every process in its namespace is gone: no wait is needed.
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("left running after Run returned: %q", left)
	}
}

func TestCancelKillsTheWholeTree(t *testing.T) {
	marker := uniqueMarker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var before []string
	s := newSpec(t, probeTarget, "tree", marker)
	s.Timeout = 0 // only ctx can end it
	s.Stdout = &onReady{f: func() { before = processesWith(marker); cancel() }}
	res, err := Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v, want Cancelled, exit -1, SIGKILL", res)
	}
	if probes := probesWith(before); len(probes) < 3 {
		t.Fatalf("before cancelling the host saw %d probe processes with the marker, want 3: %q", len(probes), before)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("left running after Run returned: %q", left)
	}
}

func TestNormalExitLeavesNoBackgroundProcess(t *testing.T) {
	marker := uniqueMarker(t)
	var before []string
	s := newSpec(t, probeTarget, "spawn", marker, "/workspace/go")
	// The probe exits once this FIFO is closed, so the test can look at the
	// host's processes while the background ones are surely running.
	fifo := filepath.Join(s.Workspace, "go")
	must(t, syscall.Mkfifo(fifo, 0o666))
	uid, gid := sandboxIDs()
	must(t, os.Chown(fifo, int(uid), int(gid)))
	s.Stdout = &onReady{f: func() {
		before = processesWith(marker)
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // blocks until the probe opens it
		if err == nil {
			f.Close()
		}
	}}
	res, _, stderr := run(t, s)
	if res.ExitCode != 0 || res.TimedOut || res.Signal != "" {
		t.Errorf("result %+v, want a clean exit 0 (stderr %q)", res, stderr)
	}
	if probes := probesWith(before); len(probes) < 2 {
		t.Fatalf("while it ran the host saw %d background probes with the marker, want 2: %q", len(probes), before)
	}
	if left := processesWith(marker); len(left) > 0 {
		t.Errorf("left running after Run returned: %q", left)
	}
}

func TestExitCodeAndSignalAreReported(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		signal string
	}{
		{"exit 0", 0, ""},
		{"exit 7", 7, ""},
		{"kill -SEGV $$", 128 + int(syscall.SIGSEGV), "SIGSEGV"},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM), "SIGTERM"},
	} {
		res, _, stderr := run(t, newSpec(t, "/bin/sh", "-c", tc.script))
		if res.ExitCode != tc.code || res.Signal != tc.signal || res.TimedOut || res.Cancelled {
			t.Errorf("%q: %+v, want exit %d signal %q (stderr %q)", tc.script, res, tc.code, tc.signal, stderr)
		}
	}
}

func TestRootIDsAreRefusedBeforeRunning(t *testing.T) {
	s := newSpec(t, "/bin/sh", "-c", "touch /workspace/ran")
	if os.Geteuid() == 0 {
		for _, ids := range [][2]uint32{{0, 0}, {0, 65534}, {65534, 0}} {
			s.UID, s.GID = ids[0], ids[1]
			_, err := Run(context.Background(), s)
			if err == nil || !strings.Contains(err.Error(), "root trap") {
				t.Errorf("uid %d gid %d as root: err %v, want a refusal naming the root trap", s.UID, s.GID, err)
			}
		}
	} else {
		s.UID = uint32(os.Getuid()) + 1
		if _, err := Run(context.Background(), s); err == nil {
			t.Errorf("an unprivileged run switched to uid %d", s.UID)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran anyway (%v)", err)
	}
}

func TestUntrustedTextStaysLiteral(t *testing.T) {
	hostile := []string{"$(rm -rf /)", "; echo pwned", "`id`", "a b", "--setenv", "--bind", "/ /", "'\"", "line\nbreak", ""}
	s := newSpec(t, append([]string{probeTarget, "args"}, hostile...)...)
	s.Env = append(s.Env, "HOSTILE=$(rm -rf /); echo pwned", "--ro-bind=/ /")

	args, err := s.Args()
	if err != nil {
		t.Fatal(err)
	}
	sep := slices.Index(args, "--")
	if sep < 0 || !slices.Equal(args[sep+1:], s.Argv) {
		t.Fatalf("Args() = %q: want Argv verbatim after the first --", args)
	}
	for _, triple := range [][]string{{"--setenv", "HOSTILE", "$(rm -rf /); echo pwned"}, {"--setenv", "--ro-bind", "/ /"}} {
		found := false
		for i := 0; i+3 <= sep; i++ {
			found = found || slices.Equal(args[i:i+3], triple)
		}
		if !found {
			t.Errorf("Args() lacks %q as three elements: %q", triple, args[:sep])
		}
	}

	res, stdout, stderr := run(t, s)
	var want strings.Builder
	for _, h := range hostile {
		fmt.Fprintf(&want, "%q\n", h)
	}
	if res.ExitCode != 0 || stdout != want.String() {
		t.Errorf("the command saw (exit %d, stderr %q):\n%s\nwant:\n%s", res.ExitCode, stderr, stdout, want.String())
	}
}

func TestRootIsReadOnlyAndHoldsOnlyWhatIsBound(t *testing.T) {
	s := newSpec(t, "/bin/sh", "-c", `for p in /usr/x /etc/x /x /opt/x; do touch $p 2>/dev/null && echo "WROTE $p"; done; touch /tmp/x && echo tmp-ok; ls -A /`)
	_, stdout, stderr := run(t, s)
	if strings.Contains(stdout, "WROTE") || !strings.Contains(stdout, "tmp-ok") {
		t.Errorf("writes: %q (stderr %q); want only /tmp writable", stdout, stderr)
	}
	allowed := map[string]bool{"bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true, "usr": true,
		"etc": true, "opt": true /* the probe */, "proc": true, "dev": true, "tmp": true, "workspace": true}
	_, listing, _ := strings.Cut(stdout, "tmp-ok\n")
	for _, name := range strings.Fields(listing) {
		if !allowed[name] {
			t.Errorf("/%s exists inside; / is %q", name, strings.Fields(listing))
		}
	}
}

func TestNestedUserNamespacesAreRefused(t *testing.T) {
	if out, err := exec.Command(probePath, "unshare-user").CombinedOutput(); err != nil || !strings.Contains(string(out), "succeeded") {
		t.Fatalf("control: the probe cannot create a user namespace on the host: %v %s", err, out) // so the test can tell
	}
	res, stdout, _ := run(t, newSpec(t, probeTarget, "unshare-user"))
	if res.ExitCode == 0 || !strings.Contains(stdout, "unshare-user failed") {
		t.Errorf("inside: exit %d, %q; want the nested user namespace refused", res.ExitCode, stdout)
	}
}

func TestRootFSReplacesTheHostToolchain(t *testing.T) {
	root := newDir(t)
	for _, d := range []string{"bin", "etc", "home/dev", "proc", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	probe, err := os.ReadFile(probePath)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(root, "bin", "probe"), probe, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("image-user:x:1000:1000::/home/dev:/bin/probe\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "run", "image-leftover"), nil, 0o644))
	must(t, os.Symlink("usr/lib", filepath.Join(root, "lib")))

	s := newSpec(t, "/bin/probe", "ls", "/")
	s.RootFS = root
	s.ExtraMounts = nil
	_, stdout, stderr := run(t, s)
	if got, want := strings.Fields(stdout), []string{"bin", "dev", "etc", "home", "lib", "proc", "tmp", "workspace"}; !slices.Equal(got, want) {
		t.Errorf("/ with RootFS: %q, want %q (stderr %q)", got, want, stderr)
	}
	s.Argv = []string{"/bin/probe", "cat", "/etc/passwd"}
	if _, stdout, _ = run(t, s); !strings.HasPrefix(stdout, "image-user:") {
		t.Errorf("/etc/passwd with RootFS: %q, want the image's", stdout)
	}

	// A mount point inside a read-only image directory cannot be created.
	s.ExtraMounts = []Mount{{Source: probePath, Target: "/bin/not-in-image", ReadOnly: true, File: true}}
	if _, err := s.Args(); err == nil || !strings.Contains(err.Error(), "must already exist") {
		t.Errorf("mount onto a missing path in a read-only image dir: %v, want a clear error", err)
	}
	s.ExtraMounts = []Mount{{Source: probePath, Target: "/bin/probe", ReadOnly: true, File: true}}
	if _, err := s.Args(); err != nil {
		t.Errorf("mount onto an existing path in the image: %v", err)
	}
}

// A mount that may make its mount point (the tools image at
// /opt/inspect/tools) gets one under an image's own /opt, whose entries
// all stay there, read-only; the mount is read-only too.
func TestAMountMakesItsPointUnderAnImagesDirectory(t *testing.T) {
	root := newDir(t)
	for _, d := range []string{"bin", "opt/vendor"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	probe, err := os.ReadFile(probePath)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(root, "bin", "probe"), probe, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "opt", "vendor", "sdk"), []byte("the image's\n"), 0o644))
	must(t, os.Symlink("vendor", filepath.Join(root, "opt", "current")))
	tools := newDir(t)
	must(t, os.WriteFile(filepath.Join(tools, "marker"), []byte("the tools'\n"), 0o644))
	must(t, os.Chmod(tools, 0o777)) // writable by anyone on the host: the bind still is not

	s := newSpec(t, "/bin/probe", "ls", "/opt")
	s.RootFS = root
	s.ExtraMounts = []Mount{{Source: tools, Target: "/opt/inspect/tools", ReadOnly: true}}
	if _, err := s.Args(); err == nil || !strings.Contains(err.Error(), "must already exist") {
		t.Fatalf("without MakeMountPoint: %v, want a clear error", err)
	}
	s.ExtraMounts[0].MakeMountPoint = true
	if _, stdout, stderr := run(t, s); !slices.Equal(strings.Fields(stdout), []string{"current", "inspect", "vendor"}) {
		t.Errorf("/opt = %q (stderr %q)", stdout, stderr)
	}
	for file, want := range map[string]string{"/opt/vendor/sdk": "the image's\n", "/opt/current/sdk": "the image's\n", "/opt/inspect/tools/marker": "the tools'\n"} {
		s.Argv = []string{"/bin/probe", "cat", file}
		if _, stdout, _ := run(t, s); stdout != want {
			t.Errorf("%s = %q, want %q", file, stdout, want)
		}
	}
	s.Argv = []string{"/bin/probe", "cat", "/proc/self/mountinfo"}
	_, mounts, _ := run(t, s)
	ro := false
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/opt/inspect/tools" {
			ro = strings.HasPrefix(f[5], "ro")
		}
	}
	if !ro {
		t.Errorf("/opt/inspect/tools is not mounted read-only:\n%s", mounts)
	}
}

func TestSpecValidation(t *testing.T) {
	good := func() Spec {
		return Spec{Workspace: newDir(t), Argv: []string{"/bin/true"}, UID: 65534, GID: 65534}
	}
	if _, err := good().Args(); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	file := filepath.Join(newDir(t), "f")
	must(t, os.WriteFile(file, nil, 0o644))
	for name, mutate := range map[string]func(*Spec){
		"no workspace":            func(s *Spec) { s.Workspace = "" },
		"relative workspace":      func(s *Spec) { s.Workspace = "ws" },
		"workspace is a file":     func(s *Spec) { s.Workspace = file },
		"missing RootFS":          func(s *Spec) { s.RootFS = "/does/not/exist" },
		"empty argv":              func(s *Spec) { s.Argv = nil },
		"NUL in argv":             func(s *Spec) { s.Argv = []string{"/bin/echo", "a\x00b"} },
		"env without =":           func(s *Spec) { s.Env = []string{"JUSTAKEY"} },
		"env with empty key":      func(s *Spec) { s.Env = []string{"=v"} },
		"NUL in env":              func(s *Spec) { s.Env = []string{"K=a\x00--bind"} },
		"etc escape":              func(s *Spec) { s.EtcFiles = []string{"../root/.ssh/id_rsa"} },
		"mount relative source":   func(s *Spec) { s.ExtraMounts = []Mount{{Source: "f", Target: "/f", File: true}} },
		"mount missing source":    func(s *Spec) { s.ExtraMounts = []Mount{{Source: "/does/not/exist", Target: "/x"}} },
		"mount dir as file":       func(s *Spec) { s.ExtraMounts = []Mount{{Source: "/usr", Target: "/x", File: true}} },
		"mount file as dir":       func(s *Spec) { s.ExtraMounts = []Mount{{Source: file, Target: "/x"}} },
		"mount onto /":            func(s *Spec) { s.ExtraMounts = []Mount{{Source: "/usr", Target: "/"}} },
		"mount unclean target":    func(s *Spec) { s.ExtraMounts = []Mount{{Source: file, Target: "/a/../proc/x", File: true}} },
		"mount into /proc":        func(s *Spec) { s.ExtraMounts = []Mount{{Source: file, Target: "/proc/x", File: true}} },
		"mount over /workspace":   func(s *Spec) { s.ExtraMounts = []Mount{{Source: "/usr", Target: "/workspace"}} },
		"mount into /workspace":   func(s *Spec) { s.ExtraMounts = []Mount{{Source: file, Target: "/workspace/x", File: true}} },
		"mount over /tmp":         func(s *Spec) { s.ExtraMounts = []Mount{{Source: "/usr", Target: "/tmp"}} },
		"mount missing under usr": func(s *Spec) { s.ExtraMounts = []Mount{{Source: file, Target: "/usr/no-such-dir/x", File: true}} },
	} {
		s := good()
		mutate(&s)
		if args, err := s.Args(); err == nil {
			t.Errorf("%s: no error; Args() = %q", name, args)
		}
	}
}

func TestOutputWriterErrorsDoNotBlockTheSandbox(t *testing.T) {
	// 1 MiB of output into a writer that fails at once: the pipe must still
	// be drained, or the command would block on it until the timeout.
	s := newSpec(t, "/bin/sh", "-c", "head -c 1048576 /dev/zero; echo done >&2")
	s.Stdout = failingWriter{}
	var errOut bytes.Buffer
	s.Stderr = &errOut
	res, err := Run(context.Background(), s)
	if err != nil || res.ExitCode != 0 || res.TimedOut || errOut.String() != "done\n" {
		t.Errorf("result %+v, err %v, stderr %q; want a clean exit", res, err, errOut.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
