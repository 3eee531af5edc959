package servetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"gopkg.in/yaml.v3"
)

// StartTimeout bounds how long Start waits for the "inspect serving" line
// (store migrations and identity included).
const StartTimeout = 60 * time.Second

// TermTimeout bounds how long Term waits after SIGTERM before it gives up
// and kills the process group: longer than any http.shutdown_timeout a test
// should set.
const TermTimeout = 2 * time.Minute

// failureTail is how many log lines a failed test shows per replica.
const failureTail = 200

// servingMessage is the log line serveWith writes once it listens; its
// "listen" field is the bound address.
const servingMessage = "inspect serving"

var replicaCount atomic.Int64

// Replica is one running `inspect serve` process. Its methods are safe to
// call from any goroutine; only Start calls t.Fatal.
type Replica struct {
	t    testing.TB
	name string
	dir  string
	cmd  *exec.Cmd
	pgid int

	logR *os.File // read end of the process's stdout+stderr

	mu       sync.Mutex
	lines    []string
	changed  chan struct{} // closed and replaced whenever lines or addr change
	addr     string        // host:port from the serving line
	readDone bool          // the log pipe reached EOF: no more lines

	readerDone chan struct{}
	exited     chan struct{}
	state      *os.ProcessState // set before exited is closed
}

// Start starts a replica and waits, up to StartTimeout, until it logs that
// it is serving; a replica that exits first fails the test, showing its
// log. The replica is killed at the test's cleanup if still running.
func Start(t testing.TB, bin string, cfg Config) *Replica {
	t.Helper()
	r := Launch(t, bin, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if _, err := r.WaitServing(ctx); err != nil {
		t.Fatalf("servetest: %s did not start: %v\n%s", r.name, err, r.tail(failureTail))
	}
	return r
}

// Launch starts a replica's process and returns at once, for tests that
// expect it not to come up (see WaitServing, Wait).
func Launch(t testing.TB, bin string, cfg Config) *Replica {
	t.Helper()
	r := &Replica{
		t:          t,
		name:       cfg.Name,
		dir:        t.TempDir(),
		changed:    make(chan struct{}),
		readerDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	if r.name == "" {
		r.name = replicaName(int(replicaCount.Add(1)))
	}
	doc := cfg.YAML
	if _, ok := doc["listen"]; !ok {
		// Port 0: the kernel picks a free port, which the serving line
		// reports; no window in which another process could take it.
		doc = make(map[string]any, len(cfg.YAML)+1)
		for k, v := range cfg.YAML {
			doc[k] = v
		}
		doc["listen"] = "127.0.0.1:0"
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatalf("servetest: encoding the config: %v", err)
	}
	configPath := filepath.Join(r.dir, "inspect.yaml")
	if err := os.WriteFile(configPath, data, 0o600); err != nil {
		t.Fatalf("servetest: %v", err)
	}

	// One pipe for stdout and stderr, ours rather than exec's StderrPipe:
	// Wait would close exec's pipe under the reader, and children that
	// inherit the write end (supervisors) keep writing to the same log.
	logR, logW, err := os.Pipe()
	if err != nil {
		t.Fatalf("servetest: %v", err)
	}
	r.logR = logR
	r.cmd = exec.Command(bin, "serve", "--config", configPath)
	// The replica's working directory is its own, so nothing it writes
	// by mistake lands in the test's.
	r.cmd.Dir = r.dir
	// The state directory is the replica's own too, unless cfg.Env sets
	// another (the later of two settings wins).
	r.cmd.Env = append(append(environ(), "INSPECT_STATE_DIR="+r.dir), cfg.Env...)
	r.cmd.Stdout, r.cmd.Stderr = logW, logW
	r.cmd.SysProcAttr = sysProcAttr()
	err = r.cmd.Start()
	logW.Close() // the child holds its own copy; EOF comes when all copies close
	if err != nil {
		logR.Close()
		t.Fatalf("servetest: starting %s: %v", bin, err)
	}
	// Setpgid made the process the leader of its own group.
	r.pgid = r.cmd.Process.Pid
	go r.readLog()
	go func() {
		_ = r.cmd.Wait() // the exit status is in ProcessState
		r.state = r.cmd.ProcessState
		close(r.exited)
	}()
	t.Cleanup(r.cleanup)
	return r
}

// PID is the replica's process id, for tests that read its /proc entry
// (its memory, say).
func (r *Replica) PID() int { return r.cmd.Process.Pid }

// Name is the replica's label (Config.Name or "replica-N").
func (r *Replica) Name() string { return r.name }

// Addr is the address the replica listens on (127.0.0.1:PORT), or "" until
// it has logged that it is serving.
func (r *Replica) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// URL is the replica's root URL, http://127.0.0.1:PORT. It panics before
// the replica is serving: Start has waited for that, Launch has not.
func (r *Replica) URL() string {
	addr := r.Addr()
	if addr == "" {
		panic("servetest: URL of " + r.name + " before it is serving")
	}
	return "http://" + addr
}

// WebhookURL is where the replica takes GitHub's webhooks (app.WebhookPath,
// which is go-githubapp's default route).
func (r *Replica) WebhookURL() string { return r.URL() + githubapp.DefaultWebhookRoute }

// WaitServing waits until the replica logs that it is serving and returns
// its address. It fails if the replica exits (its log ends) first.
func (r *Replica) WaitServing(ctx context.Context) (string, error) {
	for {
		r.mu.Lock()
		addr, done, ch := r.addr, r.readDone, r.changed
		r.mu.Unlock()
		if addr != "" {
			return addr, nil
		}
		if done {
			return "", fmt.Errorf("%s exited (%s) before serving", r.name, r.exitString())
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for %q: %w", r.name, servingMessage, ctx.Err())
		case <-ch:
		}
	}
}

// WaitReady polls GET /readyz until it answers 200 (the replica serves and
// its database answers). It fails if ctx ends or the replica exits first.
func (r *Replica) WaitReady(ctx context.Context) error {
	if _, err := r.WaitServing(ctx); err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := r.ready(ctx, client)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (%w)", r.name, err, ctx.Err())
		case <-r.exited:
			return fmt.Errorf("%s exited (%s) before ready: %v", r.name, r.exitString(), err)
		case <-tick.C:
		}
	}
}

func (r *Replica) ready(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL()+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10)) // only for the message
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Kill is a host dying: SIGKILL to the replica's whole process group (the
// server and any supervisors it started), then waits for the server to
// exit. Killing an exited replica kills what is left of its group.
func (r *Replica) Kill() {
	r.killGroup()
	<-r.exited
}

// Term is a graceful stop: SIGTERM to the server alone (as systemd or
// Kubernetes sends it; the server stops its own children), then waits for
// it to exit. It returns the exit code (-1 if a signal ended it) and the
// time from the signal to the exit. If the server has not exited after
// TermTimeout the group is killed and Term reports -1.
func (r *Replica) Term() (exitCode int, took time.Duration) {
	select {
	case <-r.exited:
		return r.state.ExitCode(), 0
	default:
	}
	start := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		r.t.Errorf("servetest: SIGTERM to %s: %v", r.name, err)
	}
	timer := time.NewTimer(TermTimeout)
	defer timer.Stop()
	select {
	case <-r.exited:
		return r.state.ExitCode(), time.Since(start)
	case <-timer.C:
		r.t.Errorf("servetest: %s still running %s after SIGTERM; killing it", r.name, TermTimeout)
		r.Kill()
		return -1, time.Since(start)
	}
}

// Exited is closed once the server process has exited.
func (r *Replica) Exited() <-chan struct{} { return r.exited }

// ProcessState is the server's exit status, or nil while it runs.
func (r *Replica) ProcessState() *os.ProcessState {
	select {
	case <-r.exited:
		return r.state
	default:
		return nil
	}
}

// Wait waits for the server to exit and returns its exit code (-1 if a
// signal ended it), or ctx's error.
func (r *Replica) Wait(ctx context.Context) (int, error) {
	select {
	case <-r.exited:
		return r.state.ExitCode(), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("%s: waiting for exit: %w", r.name, ctx.Err())
	}
}

// Logs is everything the replica (and its children) wrote so far, one
// JSON log line per line.
func (r *Replica) Logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// LogLines is a copy of the log lines so far. Its length is a mark for
// WaitLogAfter.
func (r *Replica) LogLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// WaitLog waits until a log line (any so far, or a later one) contains
// substr and returns it. It fails if ctx ends, or the log ends (the process
// and its children have exited) without one.
func (r *Replica) WaitLog(ctx context.Context, substr string) (string, error) {
	i := 0
	for {
		r.mu.Lock()
		for ; i < len(r.lines); i++ {
			if strings.Contains(r.lines[i], substr) {
				line := r.lines[i]
				r.mu.Unlock()
				return line, nil
			}
		}
		done, ch := r.readDone, r.changed
		r.mu.Unlock()
		if done {
			return "", fmt.Errorf("%s: log ended (%s) with no line containing %q", r.name, r.exitString(), substr)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for a log line containing %q: %w", r.name, substr, ctx.Err())
		case <-ch:
		}
	}
}

// readLog collects the process's output line by line until EOF, noting the
// serving address, and wakes waiters after each line.
func (r *Replica) readLog() {
	defer close(r.readerDone)
	br := bufio.NewReaderSize(r.logR, 64<<10)
	for {
		// ReadString, not a Scanner: a Scanner gives up on a line longer
		// than its buffer, and a log line may carry a large error.
		s, err := br.ReadString('\n')
		if s = strings.TrimRight(s, "\r\n"); s != "" || err == nil {
			addr := servingAddr(s)
			r.mu.Lock()
			r.lines = append(r.lines, s)
			if addr != "" && r.addr == "" {
				r.addr = addr
			}
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
		if err != nil {
			r.mu.Lock()
			r.readDone = true
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
			return
		}
	}
}

// servingAddr is the loopback address from the serving line, or "" for any
// other line.
func servingAddr(line string) string {
	if !strings.Contains(line, servingMessage) {
		return ""
	}
	var l struct {
		Message string `json:"message"`
		Listen  string `json:"listen"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.Message != servingMessage || l.Listen == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(l.Listen)
	if err != nil {
		return ""
	}
	// An unspecified address (listen ":0") listens on loopback too.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func (r *Replica) killGroup() {
	// ESRCH: the group is gone already, which is what we wanted.
	if err := syscall.Kill(-r.pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		r.t.Errorf("servetest: killing %s: %v", r.name, err)
	}
}

// cleanup kills what is left, joins the log reader, and on failure shows
// the end of the log.
func (r *Replica) cleanup() {
	// Even when the server has exited: children in its group may not have.
	r.killGroup()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.t.Errorf("servetest: %s did not exit after SIGKILL", r.name)
	}
	// The log ends when every holder of the pipe is gone. A process that
	// left the group (a new session) could hold it open: then stop
	// reading rather than hang the test.
	select {
	case <-r.readerDone:
	case <-time.After(5 * time.Second):
		r.t.Logf("servetest: %s: a process outside its group still holds its log open; not reading further", r.name)
	}
	r.logR.Close() // unblocks a read still in progress
	<-r.readerDone
	if r.t.Failed() {
		r.t.Logf("servetest: %s (%s), last %d log lines:\n%s", r.name, r.exitString(), failureTail, r.tail(failureTail))
	}
}

func (r *Replica) tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (r *Replica) exitString() string {
	select {
	case <-r.exited:
		return r.state.String()
	default:
		return "running"
	}
}

// environ is the test's environment without INSPECT_* variables, which
// would override the config file under test.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INSPECT_") {
			env = append(env, kv)
		}
	}
	return env
}
