package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Environment is one session's shared network and IPC namespaces: a
// long-lived holder sandbox owns them (with the user namespace they belong
// to) and only waits, and each command run Within it joins them with
// util-linux's nsenter before its own bwrap starts. See decision 0025.
//
// bubblewrap 0.8 can join a user or PID namespace (--userns, --pidns) but
// not a network namespace, hence nsenter. nsenter 2.38 enters the IPC and
// network namespaces before the user namespace, which an unprivileged
// caller cannot do (it has no rights over them until it is in the user
// namespace that owns them); so an Environment needs a root supervisor. nsenter starts as root with no
// supplementary groups, enters the three namespaces and sets the sandbox's
// uid and gid (the same ids inside, as the holder maps them) before it
// execs bwrap: bwrap never runs as host root (the root trap), and a
// process of the sandbox cannot trace the brief root nsenter (a different
// uid).
type Environment struct {
	uid, gid uint32
	nsenter  string
	// pid is the holder's init, netNS its network namespace's identity:
	// every command's init must show the same one.
	pid   int
	netNS nsID
	// netFD keeps the holder's network namespace file open (close-on-exec,
	// so no child inherits it), which pins the identity netNS names.
	netFD *os.File

	cmd  *exec.Cmd // the holder's bwrap
	init initProcess
	// done is closed when the holder's bwrap has exited; waitErr is then
	// its error. The keeper goroutine that started it (on a locked thread,
	// for --die-with-parent) waits for it and ends only then.
	done    chan struct{}
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

// nsID identifies a namespace: the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

func nsOf(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{dev: st.Dev, ino: st.Ino}, nil
}

func lookNsenter() (string, error) {
	p, err := exec.LookPath("nsenter")
	if err != nil {
		return "", errors.New("sandbox: nsenter not found on PATH: install util-linux (a shared session environment needs it)")
	}
	return p, nil
}

// StartEnvironment starts a holder sandbox as uid and gid and returns the
// environment its namespaces make. Close ends it; ctx only bounds the
// start. It needs a root supervisor (see Environment).
func StartEnvironment(ctx context.Context, uid, gid uint32) (*Environment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("sandbox: a shared session environment needs a root supervisor (nsenter 2.38 cannot join a network namespace as an unprivileged user)")
	}
	bwrap, err := lookBwrap()
	if err != nil {
		return nil, err
	}
	nsenter, err := lookNsenter()
	if err != nil {
		return nil, err
	}
	cred, err := credential(uid, gid)
	if err != nil {
		return nil, err
	}
	rootOpts, _, err := rootOptions(hostRoot, hostToolchain, nil)
	if err != nil {
		return nil, err
	}
	opts := append(append(append([]string(nil), holderOptions...), rootOpts...), "--info-fd", infoFD)
	argsFile, err := nulSeparated(opts)
	if err != nil {
		return nil, err
	}
	defer argsFile.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer infoR.Close()
	defer infoW.Close()

	// The holder says "ready" once it runs: bwrap reports its child's pid
	// right after clone(), before it has written the user namespace's uid
	// and gid maps, and nsenter cannot set ids a namespace does not map.
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	defer readyR.Close()
	defer readyW.Close()

	e := &Environment{uid: uid, gid: gid, nsenter: nsenter, init: initProcess{fd: -1}, done: make(chan struct{})}
	cmd := &exec.Cmd{
		Path:       bwrap,
		Args:       append([]string{"bwrap", "--args", argsFD, "--"}, holderArgv...),
		Env:        []string{},
		Dir:        "/",
		Stdout:     readyW,
		ExtraFiles: []*os.File{argsFile, infoW},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Credential: cred,
		},
	}
	e.cmd = cmd
	started := make(chan error, 1)
	go e.keep(cmd, started)
	if err := <-started; err != nil {
		return nil, fmt.Errorf("sandbox: starting the environment's holder: %w", err)
	}
	infoW.Close() // only bwrap holds it now: EOF once it is gone
	readyW.Close()
	argsFile.Close()

	pid, err := readChildPid(ctx, infoR, e.done)
	if err == nil {
		err = e.init.open(pid)
	}
	if err == nil {
		err = readReady(ctx, readyR)
	}
	if err == nil && e.init.fd < 0 {
		err = errors.New("the holder ended as it started")
	}
	if err == nil {
		e.pid = pid
		e.netFD, err = os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	}
	if err == nil {
		e.netNS, err = nsOf(e.netFD.Name())
	}
	if err == nil && !e.alive() {
		err = errors.New("the holder ended as it started") // the namespace files may have been a stranger's
	}
	if err != nil {
		_ = e.Close() // the start's error is the one to report
		return nil, fmt.Errorf("sandbox: starting the environment's holder: %w", err)
	}
	return e, nil
}

// keep starts the holder on a thread of its own and waits for it: bwrap's
// --die-with-parent fires when the thread that started it exits, and this
// one exits only after the holder has.
func (e *Environment) keep(cmd *exec.Cmd, started chan<- error) {
	runtime.LockOSThread()
	defer close(e.done)
	if err := cmd.Start(); err != nil {
		started <- err
		runtime.UnlockOSThread() // nothing was started from it
		return
	}
	started <- nil
	e.waitErr = cmd.Wait()
	// The thread stays locked and exits with this goroutine: the holder
	// it started is gone.
}

// readChildPid reads bwrap's --info-fd report, or fails when bwrap ends
// first or ctx does.
func readChildPid(ctx context.Context, r *os.File, done <-chan struct{}) (int, error) {
	ch := make(chan int, 1)
	go func() {
		var info struct {
			ChildPid int `json:"child-pid"`
		}
		if err := json.NewDecoder(r).Decode(&info); err != nil {
			info.ChildPid = 0 // bwrap ended before it cloned
		}
		ch <- info.ChildPid
	}()
	select {
	case pid := <-ch:
		if pid <= 0 {
			return 0, errors.New("bwrap ended before it started the holder")
		}
		return pid, nil
	case <-ctx.Done():
		return 0, ctx.Err() // the reader ends with EOF once Close has killed bwrap
	}
}

// readReady waits for the holder's "ready" line, or fails when it ends
// first (EOF) or ctx does (Close then ends the reader with EOF).
func readReady(ctx context.Context, r *os.File) error {
	ch := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err == nil && line != holderReady+"\n" {
			err = fmt.Errorf("the holder said %q, not %q", line, holderReady)
		}
		ch <- err
	}()
	select {
	case err := <-ch:
		if err != nil {
			return fmt.Errorf("the holder never said it was ready: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// alive reports whether the holder is still running.
func (e *Environment) alive() bool {
	if e.init.fd < 0 {
		return false
	}
	err := unix.PidfdSendSignal(e.init.fd, 0, nil, 0)
	return err == nil
}

// Close kills the holder (by its init's pidfd) and waits until it and its
// bwrap have exited. The commands run within it are not in its PID
// namespace: each is ended by its own Run. Close is idempotent.
func (e *Environment) Close() error {
	e.closeOnce.Do(func() {
		e.closeErr = e.init.kill()
		// bwrap exits by itself once the holder is gone; this is for one
		// killed before it cloned (or stuck). Killing an exited process
		// only reports that it finished.
		_ = e.cmd.Process.Kill()
		<-e.done
		if e.netFD != nil {
			_ = e.netFD.Close() // read-only namespace handle; nothing to flush
		}
		var exitErr *exec.ExitError
		if e.waitErr != nil && !errors.As(e.waitErr, &exitErr) {
			e.closeErr = errors.Join(e.closeErr, fmt.Errorf("sandbox: waiting for the environment's holder: %w", e.waitErr))
		}
	})
	return e.closeErr
}

// enter is the command (path and argv) that runs bwrap's argv inside the
// environment's namespaces, and the credentials to start it with: nsenter
// as root without supplementary groups, dropping to the sandbox's ids.
func (e *Environment) enter(bwrapArgv []string) (string, []string, *syscall.Credential, error) {
	if !e.alive() {
		return "", nil, nil, errors.New("sandbox: the session's environment has ended")
	}
	ns := "/proc/" + strconv.Itoa(e.pid) + "/ns/"
	argv := []string{"nsenter",
		"--user=" + ns + "user", "--net=" + ns + "net", "--ipc=" + ns + "ipc",
		"--setuid=" + strconv.FormatUint(uint64(e.uid), 10),
		"--setgid=" + strconv.FormatUint(uint64(e.gid), 10),
		"--"}
	bwrap, err := lookBwrap()
	if err != nil {
		return "", nil, nil, err
	}
	argv = append(append(argv, bwrap), bwrapArgv[1:]...)
	return e.nsenter, argv, &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}, nil
}

// checkJoined reports an error unless the sandbox init pid is in the
// environment's network namespace: the pid nsenter entered by could, in
// principle, have been reused by a stranger had the holder died in between.
func (e *Environment) checkJoined(pid int) error {
	id, err := nsOf("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if errors.Is(err, os.ErrNotExist) {
		return nil // already ended and reaped: there is nothing left to misplace
	}
	if err != nil {
		return fmt.Errorf("sandbox: reading the command's network namespace: %w", err)
	}
	if id != e.netNS {
		return errors.New("sandbox: the command is not in the session environment's network namespace")
	}
	return nil
}
