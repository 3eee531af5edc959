// Package local is the embedded default executor: it runs `inspect runner`
// (the supervisor) as a child process of the app, on the app's own host, one
// per attempt, with a cap on how many run at once.
//
// What a child gets:
//   - argv: the inspect binary, "runner", and Config.Args: flags only, no
//     value from a session and no credential (argv is visible to every
//     user of the host in ps);
//   - environment: Config.Env (PATH by default, never the app's own
//     environment, which holds the App's key and webhook secret) plus the
//     attempt's channel URL, ids and single-use claim code under the names
//     package contract defines;
//   - its own process group, so that a cancel reaches the supervisor and
//     every git it started, and SIGKILL when the app dies (Pdeathsig). The sandbox is not in that group (bwrap has its
//     own), but it dies with the supervisor (bwrap's --die-with-parent and
//     the PID namespace), and a SIGTERMed supervisor kills it itself
//     before it uploads partial evidence.
//
// Every child is reaped by a goroutine the Executor owns; Close cancels and
// waits for all of them.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
)

// ErrAtCapacity (runner's) is returned by Start when Config.MaxConcurrent
// attempts are already running. Start does not queue: the app's dispatcher
// holds a lease on its work item while it calls Start, so it is better told
// at once and left to retry the work later than kept waiting for a slot.
var ErrAtCapacity = runner.ErrAtCapacity

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("local executor: closed")

// Defaults for Config's zero values.
const (
	DefaultMaxConcurrent = 4
	DefaultGrace         = time.Minute // more than the supervisor's default finish timeout (30s)
	DefaultDeadlineSlack = 2 * time.Minute
	// maxExitedKept bounds how many ended attempts State still answers
	// for; older ones are reported lost, which the app treats the same as
	// an exit without a result.
	maxExitedKept = 1024
)

// Config configures an Executor. Every duration is configurable and every
// timer goes through After, so tests never sleep.
type Config struct {
	// Binary is the inspect binary to run; "" means this process's own
	// executable (os.Executable).
	Binary string
	// Args are flags appended after "runner" (--work-dir, --sandbox-uid,
	// the sandbox limits --limit-*: `inspect serve` passes the server's
	// executor.sandbox_* and executor.limits.* this way). They must not
	// carry credentials: argv is public on the host.
	Args []string
	// Env is the children's base environment, KEY=VALUE each. nil means
	// PATH only, taken from this process. Any INSPECT_* entry is dropped:
	// those names are the app's own configuration (its secrets) and the
	// attempt's variables, which the executor sets itself.
	Env []string
	// ChannelSocket, when set, is passed as contract.EnvChannelSocket: the
	// supervisor dials this Unix socket instead of the channel URL's host.
	ChannelSocket string
	// MaxConcurrent caps the attempts running at once (DefaultMaxConcurrent
	// when 0).
	MaxConcurrent int
	// Grace is how long a cancelled supervisor has between SIGTERM and
	// SIGKILL to upload its partial evidence (DefaultGrace when 0). Keep it
	// above the supervisor's --finish-timeout.
	Grace time.Duration
	// DeadlineSlack is how long after an attempt's deadline the executor
	// cancels a supervisor that has not ended by itself: a backstop, since
	// the supervisor enforces the deadline (DefaultDeadlineSlack when 0;
	// negative disables the backstop).
	DeadlineSlack time.Duration
	// Output receives the children's stdout and stderr (their logs). nil
	// discards them. Writes from different children are serialised.
	Output io.Writer
	// After is time.After, injectable for tests.
	After func(time.Duration) <-chan time.Time
	// Now is time.Now, injectable for tests.
	Now func() time.Time
}

// Executor is the local executor. Create it with New; it is safe for
// concurrent use. It implements runner.Executor.
type Executor struct {
	cfg     Config
	binary  string
	env     []string
	output  io.Writer
	slots   chan struct{}
	hurry   chan struct{} // closed by Close when its ctx ends: SIGKILL everyone now
	hurried sync.Once

	mu       sync.Mutex
	closed   bool
	seq      uint64
	children map[string]*child
	exited   []string // ids of ended children, oldest first
	wg       sync.WaitGroup
}

var _ runner.Executor = (*Executor)(nil)

// child is one supervisor process.
type child struct {
	id       string
	attempt  string // the attempt id it runs
	cmd      *exec.Cmd
	deadline time.Time
	cancel   chan struct{} // closed by Cancel
	once     sync.Once
	done     chan struct{} // closed once reaped; state is final then
	state    runner.AttemptState
}

func (c *child) requestCancel() { c.once.Do(func() { close(c.cancel) }) }

// New returns an Executor. It fails when the inspect binary cannot be found.
func New(cfg Config) (*Executor, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	bin := cfg.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local executor: finding the inspect binary: %w", err)
		}
		bin = exe
	}
	if fi, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("local executor: %w", err)
	} else if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("local executor: %s is not an executable file", bin)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.DeadlineSlack == 0 {
		cfg.DeadlineSlack = DefaultDeadlineSlack
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	base := cfg.Env
	if base == nil {
		base = []string{"PATH=" + os.Getenv("PATH")}
	}
	var env []string
	for _, kv := range base {
		if !strings.HasPrefix(kv, "INSPECT_") {
			env = append(env, kv)
		}
	}
	var out io.Writer
	switch w := cfg.Output.(type) {
	case nil:
	case *os.File:
		out = w // exec hands the descriptor over; the kernel serialises writes
	default:
		out = &lockedWriter{w: w}
	}
	return &Executor{
		cfg:      cfg,
		binary:   bin,
		env:      env,
		output:   out,
		slots:    make(chan struct{}, cfg.MaxConcurrent),
		hurry:    make(chan struct{}),
		children: map[string]*child{},
	}, nil
}

// Start launches `inspect runner` for the attempt. It returns ErrAtCapacity
// at once when MaxConcurrent supervisors are running.
func (e *Executor) Start(ctx context.Context, a runner.Attempt) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	for name, v := range map[string]string{"session id": a.SessionID, "attempt id": a.AttemptID, "channel URL": a.ChannelURL, "claim code": a.ClaimCode} {
		if v == "" || strings.ContainsAny(v, "\x00\n") {
			return "", fmt.Errorf("local executor: the attempt's %s is missing or malformed", name)
		}
	}
	select {
	case e.slots <- struct{}{}:
	default:
		return "", ErrAtCapacity
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		<-e.slots
		return "", ErrClosed
	}
	e.seq++
	id := "local-" + strconv.FormatUint(e.seq, 10) + "-" + a.AttemptID

	env := append([]string(nil), e.env...)
	env = append(env,
		contract.EnvChannelURL+"="+a.ChannelURL,
		contract.EnvSessionID+"="+a.SessionID,
		contract.EnvAttemptID+"="+a.AttemptID,
		contract.EnvClaimCode+"="+a.ClaimCode,
	)
	if e.cfg.ChannelSocket != "" {
		env = append(env, contract.EnvChannelSocket+"="+e.cfg.ChannelSocket)
	}
	cmd := &exec.Cmd{
		Path:   e.binary,
		Args:   append([]string{e.binary, "runner"}, e.cfg.Args...),
		Env:    env,
		Dir:    "/",
		Stdout: e.output,
		Stderr: e.output,
		// Its own group, so a signal reaches the supervisor and every
		// process it started, and a terminal's ^C to the app does not.
		// diesWithApp: see its comment.
		SysProcAttr: diesWithApp(&syscall.SysProcAttr{Setpgid: true}),
	}
	if err := cmd.Start(); err != nil {
		<-e.slots
		return "", fmt.Errorf("local executor: starting %s runner: %w", e.binary, err)
	}
	c := &child{
		id:       id,
		attempt:  a.AttemptID,
		cmd:      cmd,
		deadline: a.Deadline,
		cancel:   make(chan struct{}),
		done:     make(chan struct{}),
		state:    runner.AttemptState{Status: runner.StatusRunning},
	}
	e.children[id] = c
	e.wg.Add(1)
	go e.watch(c)
	return id, nil
}

// Cancel sends the supervisor SIGTERM (through the goroutine that watches
// it), and SIGKILL to its process group if it has not exited after
// Config.Grace. It returns without waiting; use Wait for that. An unknown or
// ended attempt is not an error.
func (e *Executor) Cancel(ctx context.Context, externalID string) error {
	e.mu.Lock()
	c := e.children[externalID]
	e.mu.Unlock()
	if c != nil {
		c.requestCancel()
	}
	return ctx.Err()
}

// State reports running until the supervisor has exited and been reaped,
// then exited with its exit code. An id this Executor never issued, or one
// it has forgotten (see maxExitedKept), is lost.
func (e *Executor) State(ctx context.Context, externalID string) (runner.AttemptState, error) {
	if err := ctx.Err(); err != nil {
		return runner.AttemptState{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.children[externalID]
	if c == nil {
		return runner.AttemptState{Status: runner.StatusLost}, nil
	}
	return c.state, nil
}

// Running lists the attempts whose supervisors have not exited: external
// id → attempt id. The app uses it to stop a supervisor whose attempt it
// ended by other means (another replica replaced it), which no other path
// would reach.
func (e *Executor) Running(context.Context) map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	for id, c := range e.children {
		if c.state.Status == runner.StatusRunning {
			out[id] = c.attempt
		}
	}
	return out
}

// Wait blocks until the attempt's supervisor has been reaped, and returns
// its final state; lost for an unknown id.
func (e *Executor) Wait(ctx context.Context, externalID string) (runner.AttemptState, error) {
	e.mu.Lock()
	c := e.children[externalID]
	e.mu.Unlock()
	if c == nil {
		return runner.AttemptState{Status: runner.StatusLost}, nil
	}
	select {
	case <-c.done:
		return e.State(ctx, externalID)
	case <-ctx.Done():
		return runner.AttemptState{}, ctx.Err()
	}
}

// Close refuses new attempts, cancels every running one (SIGTERM, then
// SIGKILL after the grace period) and waits until all are reaped. When ctx
// ends first, the rest are killed at once and Close still waits for them to
// be reaped, which SIGKILL makes quick, then returns ctx's error.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	for _, c := range e.children {
		c.requestCancel()
	}
	e.mu.Unlock()
	all := make(chan struct{})
	go func() { e.wg.Wait(); close(all) }()
	select {
	case <-all:
		return nil
	case <-ctx.Done():
		e.hurried.Do(func() { close(e.hurry) })
		<-all
		return ctx.Err()
	}
}

// watch owns one child from start to reaping: it delivers cancels, the
// grace period's SIGKILL and the deadline backstop, and records the exit.
func (e *Executor) watch(c *child) {
	defer e.wg.Done()

	pid := c.cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		// Wait for the exit without reaping: while the leader is a zombie
		// its pid, and so the group id, cannot be reused, so signalling
		// the group below can never hit a stranger.
		waitExitedNoReap(pid)
		close(exited)
	}()

	var deadline, grace <-chan time.Time
	if !c.deadline.IsZero() && e.cfg.DeadlineSlack > 0 {
		deadline = e.cfg.After(max(c.deadline.Sub(e.cfg.Now())+e.cfg.DeadlineSlack, 0))
	}
	cancel, hurry := c.cancel, e.hurry
	terminated := false
	terminate := func() {
		if !terminated {
			terminated = true
			_ = unix.Kill(-pid, unix.SIGTERM)
			grace = e.cfg.After(e.cfg.Grace)
		}
	}
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-cancel:
			cancel = nil
			terminate()
		case <-deadline:
			deadline = nil
			terminate()
		case <-grace:
			grace = nil
			_ = unix.Kill(-pid, unix.SIGKILL)
		case <-hurry:
			hurry = nil
			_ = unix.Kill(-pid, unix.SIGKILL)
		}
	}
	// The supervisor is gone; so must be anything it left in its group
	// (a git it started, had it crashed mid-fetch).
	_ = unix.Kill(-pid, unix.SIGKILL)
	_ = c.cmd.Wait() // reaps; the exit status is in ProcessState

	st := runner.AttemptState{Status: runner.StatusExited, ExitCode: c.cmd.ProcessState.ExitCode()}
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.ExitCode, st.Signal = -1, unix.SignalName(ws.Signal())
	}
	e.mu.Lock()
	c.state = st
	e.exited = append(e.exited, c.id)
	if len(e.exited) > maxExitedKept {
		delete(e.children, e.exited[0])
		e.exited = e.exited[1:]
	}
	e.mu.Unlock()
	// The slot is free before anyone waiting hears of the exit, so a Start
	// right after Wait finds it free.
	<-e.slots
	close(c.done)
}

// lockedWriter serialises writes from several children's output copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
