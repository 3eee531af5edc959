package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// inspectBin is the inspect binary, built once for the tests that run a
// real supervisor.
var inspectBin string

// The test binary doubles as a stand-in supervisor: started with
// LOCAL_HELPER set, it acts out a mode instead of running tests.
const helperEnv = "LOCAL_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	if err := sandbox.Available(); err != nil {
		// Fail, never skip: the end-to-end tests run the real sandbox.
		fmt.Fprintf(os.Stderr, "runner/local tests need a working bubblewrap: %v\nRun .ci/ensure-bubblewrap from the repository root, then test again.\n", err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "inspect-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if inspectBin, err = sandboxtest.BuildInspect(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// helper is the stand-in supervisor's modes.
func helper(mode string) int {
	switch mode {
	case "record": // write argv and environment to LOCAL_HELPER_OUT
		b, _ := json.Marshal(map[string][]string{"args": os.Args, "env": os.Environ()})
		if err := os.WriteFile(os.Getenv("LOCAL_HELPER_OUT"), b, 0o600); err != nil {
			return 3
		}
		return 0
	case "exit7":
		return 7
	case "polite": // exit when asked
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		fmt.Println("ready")
		<-term
		fmt.Println("term")
		return 0
	case "stubborn": // ignore SIGTERM, with a child in the same group
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		child := exec.Command("sh", "-c", "while :; do sleep 1; done", os.Getenv("LOCAL_HELPER_MARKER"))
		if err := child.Start(); err != nil {
			return 3
		}
		fmt.Println("ready")
		for range term {
			fmt.Println("term")
		}
	}
	return 2
}

// lines collects the children's output line by line.
type lines struct {
	ch chan string
	w  *io.PipeWriter
	wg sync.WaitGroup
}

func newLines(t *testing.T) *lines {
	r, w := io.Pipe()
	l := &lines{ch: make(chan string, 100), w: w}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t.Log("child:", sc.Text())
			select {
			case l.ch <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() { w.Close(); l.wg.Wait() })
	return l
}

func (l *lines) wait(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-l.ch:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q from the child", want)
		}
	}
}

// timers is an injectable After: every timer the executor asks for is
// handed to the test, which fires it when it likes.
type timers struct{ asked chan timer }

type timer struct {
	d    time.Duration
	fire chan time.Time
}

func newTimers() *timers { return &timers{asked: make(chan timer, 10)} }

func (ts *timers) After(d time.Duration) <-chan time.Time {
	t := timer{d: d, fire: make(chan time.Time, 1)}
	ts.asked <- t
	return t.fire
}

func (ts *timers) next(t *testing.T) timer {
	t.Helper()
	select {
	case tm := <-ts.asked:
		return tm
	case <-time.After(time.Minute):
		t.Fatal("the executor asked for no timer")
		return timer{}
	}
}

func helperExecutor(t *testing.T, mode string, cfg Config) *Executor {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Binary = self
	cfg.Env = append([]string{"PATH=" + os.Getenv("PATH"), helperEnv + "=" + mode}, cfg.Env...)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // whatever a test left running is killed at once
		_ = e.Close(ctx)
	})
	return e
}

func attempt(id string) runner.Attempt {
	return runner.Attempt{SessionID: "sess", AttemptID: id, ChannelURL: "http://127.0.0.1:1", ClaimCode: "claim-code-0123456789abcdef"}
}

func TestTheAttemptTravelsInTheEnvironmentNotArgv(t *testing.T) {
	out := filepath.Join(t.TempDir(), "record.json")
	e := helperExecutor(t, "record", Config{
		Args:          []string{"--work-dir", "/srv/inspect"},
		ChannelSocket: "/run/inspect/channel.sock",
		Env:           []string{"LOCAL_HELPER_OUT=" + out, "INSPECT_GITHUB_PRIVATE_KEY=app-secret", "INSPECT_CLAIM_CODE=stale"},
	})
	ctx := context.Background()
	id, err := e.Start(ctx, attempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, id); err != nil || st != (runner.AttemptState{Status: runner.StatusExited}) {
		t.Fatalf("state %+v, %v", st, err)
	}
	var rec map[string][]string
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %v %s", err, b)
	}
	if !slices.Equal(rec["args"][1:], []string{"runner", "--work-dir", "/srv/inspect"}) {
		t.Errorf("argv %q", rec["args"])
	}
	for _, a := range rec["args"] {
		if strings.Contains(a, "claim-code") || strings.Contains(a, "127.0.0.1") {
			t.Errorf("argv carries %q", a)
		}
	}
	env := rec["env"]
	for _, want := range []string{
		contract.EnvClaimCode + "=claim-code-0123456789abcdef",
		contract.EnvAttemptID + "=a-1",
		contract.EnvSessionID + "=sess",
		contract.EnvChannelURL + "=http://127.0.0.1:1",
		contract.EnvChannelSocket + "=/run/inspect/channel.sock",
	} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "app-secret") || kv == contract.EnvClaimCode+"=stale" {
			t.Errorf("env carries %q", kv)
		}
	}
}

func TestExitCodeAndLostAttempts(t *testing.T) {
	e := helperExecutor(t, "exit7", Config{})
	ctx := context.Background()
	id, err := e.Start(ctx, attempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Wait(ctx, id); st != (runner.AttemptState{Status: runner.StatusExited, ExitCode: 7}) {
		t.Errorf("wait: %+v", st)
	}
	if st, _ := e.State(ctx, id); st.Status != runner.StatusExited || st.ExitCode != 7 {
		t.Errorf("state: %+v", st)
	}
	if st, _ := e.State(ctx, "local-99-nope"); st.Status != runner.StatusLost {
		t.Errorf("unknown id: %+v", st)
	}
	if err := e.Cancel(ctx, id); err != nil {
		t.Errorf("cancelling an ended attempt: %v", err)
	}
	if _, err := e.Start(ctx, runner.Attempt{AttemptID: "x"}); err == nil {
		t.Error("an attempt without a claim code started")
	}
}

func TestConcurrencyIsCapped(t *testing.T) {
	out := newLines(t)
	e := helperExecutor(t, "polite", Config{MaxConcurrent: 1, Output: out.w})
	ctx := context.Background()
	first, err := e.Start(ctx, attempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	if _, err := e.Start(ctx, attempt("a-2")); !errors.Is(err, ErrAtCapacity) {
		t.Fatalf("second start: %v, want ErrAtCapacity", err)
	}
	if st, _ := e.State(ctx, first); st.Status != runner.StatusRunning {
		t.Errorf("state %+v", st)
	}
	if got := e.Running(ctx); len(got) != 1 || got[first] != "a-1" {
		t.Errorf("running = %v, want %s → a-1", got, first)
	}
	if err := e.Cancel(ctx, first); err != nil {
		t.Fatal(err)
	}
	out.wait(t, "term")
	if st, _ := e.Wait(ctx, first); st != (runner.AttemptState{Status: runner.StatusExited}) {
		t.Errorf("after cancel: %+v", st)
	}
	if got := e.Running(ctx); len(got) != 0 {
		t.Errorf("running after the exit = %v, want none", got)
	}
	second, err := e.Start(ctx, attempt("a-2"))
	if err != nil {
		t.Fatalf("start after a slot freed: %v", err)
	}
	out.wait(t, "ready")
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.State(ctx, second); st.Status != runner.StatusExited {
		t.Errorf("after Close: %+v", st)
	}
	if _, err := e.Start(ctx, attempt("a-3")); !errors.Is(err, ErrClosed) {
		t.Errorf("start after Close: %v", err)
	}
}

func TestCancelEscalatesToSIGKILLForTheWholeGroup(t *testing.T) {
	out := newLines(t)
	ts := newTimers()
	marker := fmt.Sprintf("local-stubborn-%d", time.Now().UnixNano())
	e := helperExecutor(t, "stubborn", Config{Output: out.w, Grace: 42 * time.Second, After: ts.After, Env: []string{"LOCAL_HELPER_MARKER=" + marker}})
	ctx := context.Background()
	id, err := e.Start(ctx, attempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	// At least one: the shell's loop forks (a fork shows the shell's own
	// command line until it execs sleep), so two may be seen for a moment.
	if len(channeltest.ProcessesWith(marker)) == 0 {
		t.Fatal("the helper's child is not running")
	}
	if err := e.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	grace := ts.next(t)
	if grace.d != 42*time.Second {
		t.Errorf("grace timer %v", grace.d)
	}
	out.wait(t, "term") // SIGTERM arrived, and was ignored
	if st, _ := e.State(ctx, id); st.Status != runner.StatusRunning {
		t.Fatalf("state before the grace ended: %+v", st)
	}
	grace.fire <- time.Now()
	st, err := e.Wait(ctx, id)
	if err != nil || st != (runner.AttemptState{Status: runner.StatusExited, ExitCode: -1, Signal: "SIGKILL"}) {
		t.Fatalf("state %+v, %v", st, err)
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("the supervisor's child survived: %v", pids)
	}
}

func TestDeadlineBackstopCancels(t *testing.T) {
	out := newLines(t)
	ts := newTimers()
	now := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	e := helperExecutor(t, "polite", Config{Output: out.w, After: ts.After, Now: func() time.Time { return now }, DeadlineSlack: time.Minute})
	a := attempt("a-1")
	a.Deadline = now.Add(10 * time.Minute)
	ctx := context.Background()
	id, err := e.Start(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	backstop := ts.next(t)
	if backstop.d != 11*time.Minute {
		t.Errorf("backstop after %v, want 11m", backstop.d)
	}
	backstop.fire <- now
	out.wait(t, "term")
	if st, _ := e.Wait(ctx, id); st != (runner.AttemptState{Status: runner.StatusExited}) {
		t.Errorf("state %+v", st)
	}
}

func TestCloseWithAnEndedContextKillsAtOnce(t *testing.T) {
	out := newLines(t)
	ts := newTimers()
	e := helperExecutor(t, "stubborn", Config{Output: out.w, After: ts.After, Env: []string{"LOCAL_HELPER_MARKER=close-" + t.Name()}})
	id, err := e.Start(context.Background(), attempt("a-1"))
	if err != nil {
		t.Fatal(err)
	}
	out.wait(t, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close: %v", err)
	}
	if st, _ := e.State(context.Background(), id); st.Signal != "SIGKILL" {
		t.Errorf("state %+v", st)
	}
}

// The end-to-end tests run the real `inspect runner` against the fake
// channel, in the real sandbox.

func supervisorExecutor(t *testing.T, workDir string) *Executor {
	t.Helper()
	out := newLines(t)
	e, err := New(Config{
		Binary: inspectBin,
		Args:   []string{"--work-dir", workDir, "--keep-workspace"},
		Output: out.w,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func TestRunsARealSupervisor(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-1", "sess-1-a1", sha, []string{"sh", "agent/fix.sh"},
		contract.Command{Name: "executable", Argv: []string{"test", "-x", "tools/run.sh"}, Timeout: contract.Duration(time.Minute)})
	code := ch.AddAttempt(spec)
	workDir := channeltest.WorkDir(t)
	e := supervisorExecutor(t, workDir)
	ctx := context.Background()
	id, err := e.Start(ctx, runner.Attempt{SessionID: spec.SessionID, AttemptID: spec.AttemptID, ChannelURL: ch.URL(), ClaimCode: code, Deadline: spec.Limits.Deadline})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, id); err != nil || st != (runner.AttemptState{Status: runner.StatusExited}) {
		t.Fatalf("supervisor ended %+v, %v", st, err)
	}
	if v := ch.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %q", v)
	}
	a := ch.Attempt(spec.AttemptID)
	if len(a.Results) != 1 {
		t.Fatalf("%d results", len(a.Results))
	}
	u := a.Results[0]
	if u.Evidence.Outcome != contract.OutcomeOK || u.Manifest == nil || len(u.Manifest.Files) != 5 {
		t.Fatalf("outcome %s (%s), manifest %+v", u.Evidence.Outcome, u.Evidence.Reason, u.Manifest)
	}
	for _, s := range a.Secrets() {
		if strings.Contains(string(a.RawResults[0]), s) {
			t.Error("a credential is in the uploaded result")
		}
	}
	if hits := channeltest.GrepTree(t, channeltest.AttemptDir(t, workDir), a.Secrets()...); len(hits) > 0 {
		t.Errorf("a credential was left on disk: %v", hits)
	}
}

func TestCancelGivesPartialEvidenceAndLeavesNothing(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	marker := fmt.Sprintf("local-cancel-%d", time.Now().UnixNano())
	spec := ch.Spec("sess-2", "sess-2-a1", sha, []string{"sh", "agent/hang.sh", marker})
	code := ch.AddAttempt(spec)
	e := supervisorExecutor(t, channeltest.WorkDir(t))
	ctx := context.Background()
	id, err := e.Start(ctx, runner.Attempt{SessionID: spec.SessionID, AttemptID: spec.AttemptID, ChannelURL: ch.URL(), ClaimCode: code})
	if err != nil {
		t.Fatal(err)
	}
	// The agent runs once its process shows up; the sandbox gives no
	// other sign.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for len(channeltest.ProcessesWith(marker)) == 0 {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatal("the agent never started")
		}
	}
	if err := e.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, id); err != nil || st != (runner.AttemptState{Status: runner.StatusExited}) {
		t.Fatalf("supervisor ended %+v, %v (0 means it uploaded)", st, err)
	}
	a := ch.Attempt(spec.AttemptID)
	if len(a.Results) != 1 {
		t.Fatalf("%d results", len(a.Results))
	}
	ev := a.Results[0].Evidence
	if ev.Outcome != contract.OutcomeCancelled || !ev.Partial {
		t.Errorf("outcome %s partial %v: %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("processes of the session are left: %v", pids)
	}
}
