package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const installHint = "install Debian's bubblewrap package (in this repository: run .ci/ensure-bubblewrap)"

// probeID is the uid and gid Available probes as when it runs as root:
// nobody, since root itself would not show whether unprivileged user
// namespaces work.
const probeID = 65534

// The descriptors bwrap gets besides stdio (exec.Cmd.ExtraFiles start at 3).
const (
	argsFD = "3" // bwrap's options, NUL-separated (--args)
	infoFD = "4" // bwrap writes {"child-pid": N} here once it has cloned (--info-fd)
	// seccompFD is the syscall filter (--seccomp), which bwrap installs
	// last, just before it execs the command.
	seccompFD = "5"
)

func lookBwrap() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("sandbox: bwrap not found on PATH: %s", installHint)
	}
	return p, nil
}

// credential is what bwrap is started as: nil (itself) for an unprivileged
// supervisor, or UID/GID with no supplementary groups for root.
func credential(uid, gid uint32) (*syscall.Credential, error) {
	if os.Geteuid() == 0 {
		if uid == 0 || gid == 0 {
			return nil, fmt.Errorf("sandbox: refusing to run the sandbox as uid %d gid %d: bwrap started by root maps the sandbox to host root (the root trap); use a dedicated unprivileged uid and gid", uid, gid)
		}
		return &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}, nil
	}
	if uid != uint32(os.Getuid()) || gid != uint32(os.Getgid()) {
		return nil, fmt.Errorf("sandbox: an unprivileged supervisor runs the sandbox as itself (uid %d gid %d), not as uid %d gid %d", os.Getuid(), os.Getgid(), uid, gid)
	}
	return nil, nil
}

// Available reports whether sandboxes can run here: bwrap is on PATH, the
// kernel has pidfds, and bwrap can create its namespaces as an unprivileged
// user (this user, or nobody when running as root). The error says what is
// missing.
func Available() error {
	bwrap, err := lookBwrap()
	if err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("sandbox: pidfd_open: %w (Linux 5.3 or newer is needed to track the sandbox)", err)
	}
	unix.Close(fd)

	uid, gid := os.Getuid(), os.Getgid()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		uid, gid = probeID, probeID
		cred = &syscall.Credential{Uid: probeID, Gid: probeID, Groups: []uint32{}}
	}
	rootOpts, _, err := rootOptions(hostRoot, hostToolchain, nil)
	if err != nil {
		return err
	}
	args := append(append([]string(nil), baseOptions...), rootOpts...)
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--ro-bind", bwrap, bwrap, "--", bwrap, "--version")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Env, cmd.Dir = []string{}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sandbox: %s cannot start a sandbox as uid %d gid %d: %v: %s (unprivileged user namespaces must be allowed: see sysctls user.max_user_namespaces, kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns)",
			bwrap, uid, gid, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Run runs s.Argv in a new sandbox and returns when it has ended and no
// process of it is left. Cancelling ctx kills the sandbox (Result.Cancelled);
// so does Spec.Timeout (Result.TimedOut). The error is for a sandbox that
// could not be run or tracked (a bad Spec, bwrap missing, a failed start);
// a command that fails, times out or is cancelled is reported in Result only.
//
// Run keeps its goroutine on one OS thread until the sandbox is gone:
// bwrap's --die-with-parent fires when the thread that started it exits,
// and a Go thread can exit under a goroutine that locked it and returned.
func Run(ctx context.Context, s Spec) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	bwrap, err := lookBwrap()
	if err != nil {
		return Result{}, err
	}
	cred, err := credential(s.UID, s.GID)
	if err != nil {
		return Result{}, err
	}
	opts, err := s.options()
	if err != nil {
		return Result{}, err
	}
	if err := checkArgv(s.Argv); err != nil {
		return Result{}, err
	}

	// bwrap reads its arguments from a pipe, and so waits for them until
	// the limiter has put it in the command's cgroup: nothing of the
	// sandbox runs outside it, even for a moment.
	argsData, err := nulBytes(append(opts, "--info-fd", infoFD, "--seccomp", seccompFD))
	if err != nil {
		return Result{}, err
	}
	argsFile, argsW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer argsFile.Close()
	defer argsW.Close()
	lim, err := newLimiter(s.Limits, filepath.Clean(s.Workspace), s.Budget)
	if err != nil {
		return Result{}, err
	}
	lim.report, lim.since = s.Watch, s.WatchSince
	// The limiter's cgroups go once every process in them has been reaped
	// (below); this is for the returns before the sandbox starts.
	removed := false
	defer func() {
		if !removed {
			_ = lim.remove() // nothing ran in them; a leftover empty cgroup is harmless
		}
	}()
	filter, err := seccompFile()
	if err != nil {
		return Result{}, err
	}
	defer filter.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer infoR.Close()
	defer infoW.Close()
	out, err := newOutputs(s.Stdout, s.Stderr)
	if err != nil {
		return Result{}, err
	}
	defer out.closeChildEnds()

	path, args := bwrap, append([]string{"bwrap", "--args", argsFD, "--"}, s.Argv...)
	if s.Within != nil {
		// bwrap runs inside the environment's namespaces: nsenter puts it
		// there, as the sandbox's ids (Environment explains why nsenter
		// starts as root).
		if path, args, cred, err = s.Within.enter(args); err != nil {
			return Result{}, err
		}
	}
	cmd := &exec.Cmd{
		Path:       path,
		Args:       args,
		Env:        []string{}, // the sandbox can read bwrap's own /proc/1/environ
		Dir:        "/",
		Stdout:     out.childOut,
		Stderr:     out.childErr,
		ExtraFiles: []*os.File{argsFile, infoW, filter},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true, // out of the supervisor's process group (terminal signals)
			Credential: cred,
		},
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		out.closeChildEnds()
		out.wait()
		return Result{}, fmt.Errorf("sandbox: starting bwrap: %w", err)
	}
	// Only bwrap holds these now, so reads see EOF once it (and the sandbox)
	// is gone.
	out.closeChildEnds()
	infoW.Close()
	argsFile.Close()
	filter.Close()
	if err := lim.place(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill() // it has run nothing yet: it still waits for its arguments
		_ = cmd.Wait()         // the placement error is the one to report
		out.wait()
		return Result{}, err
	}
	// A write error means bwrap ended before it read them; its exit
	// status, below, says why.
	_, _ = argsW.Write(argsData)
	argsW.Close()
	lim.watch()

	infoCh := make(chan int, 1)
	go func() {
		var info struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.NewDecoder(infoR).Decode(&info); err != nil {
			info.ChildPid = 0 // bwrap ended before it cloned the sandbox
		}
		infoCh <- info.ChildPid
	}()
	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}

	init := initProcess{fd: -1}
	defer init.close()
	var (
		res     Result
		waitErr error
		exited  bool
		errs    []error
		// killedForLimit: Run ended the sandbox because the watch found
		// it over a limit.
		killedForLimit bool
	)
	// kill ends the sandbox synchronously: it needs the init's pidfd, which
	// bwrap reports right after clone() and before it lets the sandbox run
	// anything, so waiting for it here is short and bounded.
	kill := func() {
		if infoCh != nil {
			select {
			case pid := <-infoCh:
				infoCh = nil
				errs = append(errs, init.open(pid))
			case waitErr = <-waitCh:
				exited = true
			}
		}
		errs = append(errs, init.kill())
		if !exited {
			_ = cmd.Process.Kill() // bwrap exits by itself once its child is gone; this is for a stuck one
			waitErr = <-waitCh
			exited = true
		}
	}
	stop, grace, resignal, killedAfterGrace := s.Stop, (<-chan time.Time)(nil), (<-chan time.Time)(nil), false
	initPid, stopPending := 0, false
	var (
		graceTimer     *time.Timer
		resignalTicker *time.Ticker
	)
	defer func() {
		if graceTimer != nil {
			graceTimer.Stop()
			resignalTicker.Stop()
		}
	}()
	// stopGently signals the command's processes and starts the grace.
	stopGently := func() {
		g := s.StopGrace
		if g <= 0 {
			g = DefaultStopGrace
		}
		signalDescendants(initPid, unix.SIGTERM)
		graceTimer = time.NewTimer(g)
		grace = graceTimer.C
		// A process started after the walk (the sandbox was just
		// starting its command) is signalled at the next one.
		resignalTicker = time.NewTicker(stopResignal)
		resignal = resignalTicker.C
	}
	for !exited {
		select {
		case <-stop:
			stop, res.Stopped = nil, true
			if initPid == 0 {
				// The sandbox's init is not known yet, though its command
				// may already run (bwrap reports it after starting it):
				// the gentle stop begins once it is.
				stopPending = true
				continue
			}
			stopGently()
		case <-resignal:
			signalDescendants(initPid, unix.SIGTERM)
		case <-grace:
			grace, killedAfterGrace = nil, true
			kill()
		case pid := <-infoCh:
			infoCh = nil
			initPid = pid
			lim.initPid.Store(int64(pid))
			err := init.open(pid)
			if err == nil && s.Within != nil && init.fd >= 0 {
				err = s.Within.checkJoined(pid)
			}
			if err != nil {
				errs = append(errs, err)
				kill() // untracked or misplaced, so end it now rather than lose it
			} else if stopPending {
				stopGently()
			}
		case waitErr = <-waitCh:
			exited = true
		case <-timeout:
			res.TimedOut = true
			kill()
		case <-ctx.Done():
			res.Cancelled = true
			kill()
		case ex := <-lim.hit:
			res.Limit = &ex
			killedForLimit = true
			kill()
		}
	}
	// bwrap returns as soon as the command exits, while the sandbox's init
	// may still be waiting for background children: end those too.
	if infoCh != nil {
		errs = append(errs, init.open(<-infoCh))
	}
	errs = append(errs, init.kill())
	out.wait()
	res.Duration = time.Since(start)
	lim.stopWatch()
	if res.Limit == nil {
		res.Limit = lim.found
	}
	removed = true
	errs = append(errs, lim.remove())

	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		errs = append(errs, fmt.Errorf("sandbox: waiting for bwrap: %w", waitErr))
	}
	if cmd.ProcessState == nil {
		return res, errors.Join(errs...)
	}
	switch ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); {
	case res.TimedOut || res.Cancelled || killedForLimit || killedAfterGrace:
		res.ExitCode, res.Signal = -1, "SIGKILL"
	case !ok:
		res.ExitCode = cmd.ProcessState.ExitCode()
	case ws.Signaled(): // bwrap itself was killed, not by Run
		res.ExitCode, res.Signal = -1, signalName(int(ws.Signal()))
	default:
		res.ExitCode = ws.ExitStatus()
		if n := res.ExitCode - 128; n > 0 && n <= 64 {
			res.Signal = signalName(n)
		}
	}
	return res, errors.Join(errs...)
}

// initProcess is the sandbox's PID 1 (bwrap's reaper), held by a pidfd so
// that it can be killed, and waited for, without any risk of pid reuse.
type initProcess struct{ fd int }

func (p *initProcess) open(pid int) error {
	if pid <= 0 {
		return nil
	}
	// bwrap reports the pid right after clone(), and Run opens it at once:
	// the pid names the sandbox's init until that process has died and been
	// reaped, so a stranger could only be hit if the sandbox ran, ended and
	// the kernel's pid space wrapped around in between.
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return nil // already gone with its whole namespace
	case err != nil:
		return fmt.Errorf("sandbox: pidfd_open of the sandbox init (pid %d): %w", pid, err)
	}
	p.fd = fd
	return nil
}

// kill sends SIGKILL to the init and waits until it has exited. The kernel
// lets a PID namespace's init exit only after every other process in the
// namespace has been killed and reaped, so afterwards none is left.
func (p *initProcess) kill() error {
	if p.fd < 0 {
		return nil
	}
	defer p.close()
	if err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("sandbox: killing the sandbox init: %w", err)
	}
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox: waiting for the sandbox init: %w", err)
		}
		if n > 0 {
			return nil
		}
	}
}

func (p *initProcess) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// nulBytes is args as bwrap's --args reads them: each ended by a NUL.
func nulBytes(args []string) ([]byte, error) {
	var b strings.Builder
	for _, a := range args {
		if strings.ContainsRune(a, 0) { // would split into two arguments
			return nil, fmt.Errorf("sandbox: argument %q contains a NUL byte", a)
		}
		b.WriteString(a)
		b.WriteByte(0)
	}
	return []byte(b.String()), nil
}

// nulSeparated returns an anonymous in-memory file holding args for bwrap's
// --args, positioned at its start.
func nulSeparated(args []string) (*os.File, error) {
	data, err := nulBytes(args)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bwrap-args")
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: writing bwrap's arguments: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return f, nil
}

// outputs are the pipes the sandbox writes to. The sandbox never gets the
// caller's own descriptors (a log file it could seek in or truncate).
type outputs struct {
	childOut, childErr *os.File
	copies             sync.WaitGroup
}

func newOutputs(stdout, stderr io.Writer) (*outputs, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	o := &outputs{}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	o.childOut, o.childErr = w, w
	o.copy(stdout, r)
	if !sameWriter(stdout, stderr) { // one writer gets one pipe, so writes never interleave mid-call
		r, w, err := os.Pipe()
		if err != nil {
			o.closeChildEnds()
			o.wait()
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		o.childErr = w
		o.copy(stderr, r)
	}
	return o, nil
}

func (o *outputs) copy(w io.Writer, r *os.File) {
	o.copies.Add(1)
	go func() {
		defer o.copies.Done()
		defer r.Close()
		if _, err := io.Copy(w, r); err != nil {
			_, _ = io.Copy(io.Discard, r) // keep draining so the sandbox never blocks on a full pipe
		}
	}()
}

func (o *outputs) closeChildEnds() {
	o.childOut.Close() // closing twice is harmless: os.File reports ErrClosed
	o.childErr.Close()
}

func (o *outputs) wait() { o.copies.Wait() }

func sameWriter(a, b io.Writer) (same bool) {
	defer func() { _ = recover() }() // an uncomparable writer type panics
	return a == b
}

func signalName(n int) string {
	if name := unix.SignalName(syscall.Signal(n)); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", n)
}

// stopResignal is how often a stopped sandbox's processes are signalled
// again during the grace.
const stopResignal = 100 * time.Millisecond

// signalDescendants sends sig to every process below pid (the sandbox's
// init, which is left alone: it only reaps), found through /proc's parent
// links. A process that has gone meanwhile is skipped; one started after
// the walk is caught by the next walk, or the kill that follows the grace.
func signalDescendants(pid int, sig unix.Signal) {
	children := processChildren()
	for _, p := range below(children, pid) {
		_ = unix.Kill(p, sig) // gone already, or not ours to signal: the kill after the grace ends it
	}
}

// descendants are the processes below pid, by /proc's parent links.
func descendants(pid int) []int { return below(processChildren(), pid) }

// below walks children from pid, breadth first, pid itself left out.
func below(children map[int][]int, pid int) []int {
	var out []int
	queue := append([]int(nil), children[pid]...)
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p]...)
		out = append(out, p)
	}
	return out
}

// processChildren maps each process on the host to its children, from
// /proc's parent links (empty when /proc cannot be read).
func processChildren() map[int][]int {
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return children
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// The command name is in parentheses and may hold anything; the
		// parent's pid is the second field after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	return children
}
