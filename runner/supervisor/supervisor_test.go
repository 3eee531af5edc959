package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// goBinDir is where the go tool lives, for verify commands that run it in
// the sandbox.
var goBinDir string

func TestMain(m *testing.M) {
	if err := sandbox.Available(); err != nil {
		// Fail, never skip: the sandbox is the point of these tests.
		fmt.Fprintf(os.Stderr, "runner/supervisor tests need a working bubblewrap: %v\nRun .ci/ensure-bubblewrap from the repository root, then test again.\n", err)
		os.Exit(1)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the go tool is needed on PATH")
		os.Exit(1)
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	goBinDir = filepath.Dir(goBin)
	// The agent runs under `inspect runner forward`: this test binary is
	// not inspect.
	sandboxtest.MainWithForwarder(m, func(path, goCache string) {
		forwarder = path
		UseSharedGoCache(goCache)
	})
}

// forwarder is the inspect binary the sandbox's egress forwarder runs.
var forwarder string

// harness is one attempt against the fake channel.
type harness struct {
	ch      *channeltest.Server
	spec    contract.Spec
	cfg     Config
	workDir string
}

func newHarness(t *testing.T, ch *channeltest.Server, spec contract.Spec) *harness {
	t.Helper()
	code := ch.AddAttempt(spec)
	workDir := channeltest.WorkDir(t)
	return &harness{ch: ch, spec: spec, workDir: workDir, cfg: Config{
		ChannelURL:      ch.URL(),
		SessionID:       spec.SessionID,
		AttemptID:       spec.AttemptID,
		ClaimCode:       code,
		WorkDir:         workDir,
		SandboxPath:     goBinDir + ":" + DefaultSandboxPath,
		KeepWorkspace:   true,
		RunnerVersion:   "test",
		RetryDelay:      -1,
		FinishTimeout:   time.Minute,
		RequestTimeout:  30 * time.Second,
		ForwarderBinary: forwarder,
		Limits:          serverDefaultLimits,
		Log:             zerolog.New(zerolog.NewTestWriter(t)),
	}}
}

// serverDefaultLimits are the server's default executor.limits
// (config.DefaultSandbox*): every attempt here runs under them, so the
// tests show the Go toolchain, git, npm and PostgreSQL working within.
var serverDefaultLimits = contract.SandboxLimits{MemoryBytes: 4 << 30, Pids: 4096, CPUShares: 512, TmpBytes: 2 << 30, WorkspaceBytes: 10 << 30,
	SessionMemoryBytes: 8 << 30, SessionPids: 8192}

func (h *harness) run(t *testing.T, ctx context.Context) *Report {
	t.Helper()
	rep, err := Run(ctx, h.cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if v := h.ch.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %q", v)
	}
	return rep
}

// result returns the one result the channel received, checking that no
// credential of the attempt is anywhere in its bytes, or in the attempt's
// directory on the host.
func (h *harness) result(t *testing.T, rep *Report) contract.ResultUpload {
	t.Helper()
	a := h.ch.Attempt(h.spec.AttemptID)
	if len(a.Results) != 1 || !rep.Uploaded {
		t.Fatalf("got %d results (uploaded %v), want 1", len(a.Results), rep.Uploaded)
	}
	secrets := a.Secrets()
	if len(secrets) < 2 {
		t.Fatalf("secrets: %d", len(secrets))
	}
	for i, s := range secrets {
		for _, form := range []string{s, basicCredential(s)} {
			if bytes.Contains(a.RawResults[0], []byte(form)) {
				t.Errorf("secret %d is in the uploaded result", i)
			}
		}
	}
	if hits := contract.FindSecrets(&a.Results[0].Evidence); len(hits) > 0 {
		t.Errorf("evidence holds secret-looking text: %v", hits)
	}
	// The live output is redacted as the evidence is.
	for _, c := range a.Output {
		for i, s := range secrets {
			for _, form := range []string{s, basicCredential(s)} {
				if strings.Contains(c.Text, form) {
					t.Errorf("secret %d is in live output chunk %d", i, c.Seq)
				}
			}
		}
		if hits := contract.FindSecrets(&c); len(hits) > 0 {
			t.Errorf("live output chunk %d holds secret-looking text: %v", c.Seq, hits)
		}
	}
	if _, err := os.Stat(rep.AttemptDir); err == nil {
		if hits := channeltest.GrepTree(t, rep.AttemptDir, append(secrets, tokenForms(a.RepoTokens)...)...); len(hits) > 0 {
			t.Errorf("a credential was left on disk in %v", hits)
		}
	}
	return a.Results[0]
}

func tokenForms(toks []string) []string {
	var out []string
	for _, tok := range toks {
		out = append(out, basicCredential(tok))
	}
	return out
}

func command(name string, timeout time.Duration, argv ...string) contract.Command {
	return contract.Command{Name: name, Argv: argv, Timeout: contract.Duration(timeout)}
}

func TestAgentFixesTheTestAndTheManifestHoldsExactlyItsChange(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-1", "sess-1-a1", sha, []string{"sh", "agent/fix.sh"},
		command("test", 5*time.Minute, "go", "test", "-json", "./..."),
		command("run-is-executable", time.Minute, "test", "-x", "tools/run.sh"),
	)
	h := newHarness(t, ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence

	if ev.Outcome != contract.OutcomeOK || ev.Partial {
		t.Fatalf("outcome %s (partial %v): %s\n%+v", ev.Outcome, ev.Partial, ev.Reason, ev.Commands)
	}
	if ev.PinnedSHA != sha || ev.SessionID != "sess-1" || ev.AttemptID != "sess-1-a1" || ev.RunnerVersion != "test" {
		t.Errorf("identity: %+v", ev)
	}
	if ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceClone {
		t.Errorf("workspace: %+v", ev.Workspace)
	}
	// The agent, then each verify command, with exit codes and output.
	var names []string
	for _, c := range ev.Commands {
		names = append(names, string(c.Phase)+":"+c.Name)
		if c.ExitCode != 0 || c.Signal != "" || c.TimedOut {
			t.Errorf("%s: exit %d %s timed out %v\n%s", c.Name, c.ExitCode, c.Signal, c.TimedOut, c.OutputTail)
		}
	}
	if want := []string{"agent:agent", "verify:test", "verify:run-is-executable"}; !slices.Equal(names, want) {
		t.Fatalf("commands %v, want %v", names, want)
	}
	agent := ev.Commands[0]
	if !slices.Equal(agent.Argv, []string{"sh", "agent/fix.sh", PromptFile}) {
		t.Errorf("agent argv %q", agent.Argv)
	}
	if !strings.Contains(agent.OutputTail, "fixed Add") || !strings.Contains(agent.OutputTail, "found "+contract.Redacted+" in the logs") {
		t.Errorf("agent output (stderr, and a token redacted by format): %q", agent.OutputTail)
	}
	// The same output went to the app live, redacted the same way, and
	// verify's after the agent's.
	var live strings.Builder
	livePhases := map[contract.Phase]bool{}
	for i, c := range ch.Attempt("sess-1-a1").Output {
		if c.Seq != int64(i+1) {
			t.Errorf("live chunk %d has seq %d", i, c.Seq)
		}
		livePhases[c.Phase] = true
		if c.Phase == contract.PhaseAgent {
			live.WriteString(c.Text)
		}
	}
	if got := live.String(); !strings.Contains(got, "fixed Add") || !strings.Contains(got, "found "+contract.Redacted+" in the logs") {
		t.Errorf("live agent output: %q", got)
	}
	if !livePhases[contract.PhaseVerify] {
		t.Errorf("no live output of verify (phases %v)", livePhases)
	}
	if ev.FinalAnswer != "Fixed Add: it added one too many.\n" {
		t.Errorf("final answer %q", ev.FinalAnswer)
	}
	if ev.Tests == nil || ev.Tests.Passed != 2 || ev.Tests.Failed != 0 {
		t.Errorf("tests %+v", ev.Tests)
	}

	// The manifest: exactly the agent's change, with modes.
	if u.Manifest == nil {
		t.Fatal("no manifest")
	}
	type entry struct {
		mode    contract.FileMode
		content string
		added   bool
		deleted bool
	}
	got := map[string]entry{}
	for _, f := range u.Manifest.Files {
		got[f.Path] = entry{f.Mode, string(f.Content), f.Added, f.Deleted}
	}
	fixed := strings.Replace(mustRepoFile(t, h, sha, "calc.go"), "return a + b + 1", "return a + b", 1)
	want := map[string]entry{
		"calc.go":      {contract.ModeFile, fixed, false, false},
		"obsolete.txt": {"", "", false, true},
		"docs/add.md":  {contract.ModeFile, "Add adds.\n", true, false},
		"tools/run.sh": {contract.ModeExecutable, "#!/bin/sh\nexec go test ./...\n", false, false},
		"calc.link":    {contract.ModeSymlink, "calc.go", true, false},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("manifest files\n got %v\nwant %v", got, want)
	}
	if u.Manifest.BaseSHA != sha {
		t.Errorf("base %s", u.Manifest.BaseSHA)
	}
	// The diffstat agrees. tools/run.sh is what a verify command checks,
	// so it is flagged; nothing is a test file.
	stat := map[string]contract.ChangeStatus{}
	for _, c := range ev.Changes {
		stat[c.Path] = c.Status
		if c.Test || c.VerifyScript != (c.Path == "tools/run.sh") {
			t.Errorf("%s flagged wrongly: %+v", c.Path, c)
		}
	}
	if fmt.Sprint(stat) != "map[calc.go:modified calc.link:added docs/add.md:added obsolete.txt:deleted tools/run.sh:modified]" {
		t.Errorf("diffstat %v", stat)
	}
	// So does the patch, which travels in the evidence.
	if ev.Diff == nil || ev.Diff.Truncated || !strings.Contains(ev.Diff.Patch, "-func Add(a, b int) int { return a + b + 1 }\n+func Add(a, b int) int { return a + b }\n") ||
		!strings.Contains(ev.Diff.Patch, "diff --git a/calc.link b/calc.link\nnew file mode 120000\n") ||
		!strings.Contains(ev.Diff.Patch, "diff --git a/tools/run.sh b/tools/run.sh\nold mode 100644\nnew mode 100755\n") {
		t.Errorf("the evidence's diff: %+v", ev.Diff)
	}

	// Progress went through the phases in order.
	a := ch.Attempt(spec.AttemptID)
	var phases []contract.Phase
	for i, p := range a.Progress {
		if p.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, p.Seq)
		}
		phases = append(phases, p.Phase)
	}
	if want := []contract.Phase{contract.PhasePrepare, contract.PhaseAgent, contract.PhaseVerify, contract.PhaseUpload}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if len(a.RepoTokens) != 1 {
		t.Errorf("%d repo tokens minted", len(a.RepoTokens))
	}

	// The workspace's own .git has no remote and no credential, and the
	// prompt sat outside the change.
	ws := filepath.Join(rep.AttemptDir, "workspace")
	cfg, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"remote", "extraheader", "url", "Authorization"} {
		if bytes.Contains(bytes.ToLower(cfg), bytes.ToLower([]byte(bad))) {
			t.Errorf("workspace .git/config mentions %q:\n%s", bad, cfg)
		}
	}
	if out := gitOut(t, ws, "rev-parse", "HEAD"); out != sha {
		t.Errorf("workspace HEAD %s, want %s", out, sha)
	}
	prompt, err := os.ReadFile(filepath.Join(ws, ".inspect", "prompt.md"))
	if err != nil || !bytes.Contains(prompt, []byte("make the failing test pass")) {
		t.Errorf("prompt: %v\n%s", err, prompt)
	}
	// The agent ran as the sandbox's unprivileged uid.
	fi, err := os.Lstat(filepath.Join(ws, "docs", "add.md"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != h.wantUID() {
		t.Errorf("the agent's file is owned by uid %d, want %d", st.Uid, h.wantUID())
	}
}

func (h *harness) wantUID() uint32 {
	if os.Geteuid() == 0 {
		return DefaultSandboxID
	}
	return uint32(os.Getuid())
}

// mustRepoFile reads a file of the fixture at sha from the stand-in's bare
// repository.
func mustRepoFile(t *testing.T, h *harness, sha, name string) string {
	t.Helper()
	return gitOut(t, h.ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo), "show", sha+":"+name) + "\n"
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestFailedVerificationRecordsExitCodesAndTestResults(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-2", "sess-2-a1", sha, []string{"sh", "agent/idle.sh"},
		command("test", time.Minute, "sh", "agent/gotest-fail.sh"),
		command("lint", time.Minute, "sh", "-c", "echo lint says no; exit 3"),
		command("slow", time.Second, "sleep", "600"),
	)
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed || ev.Partial {
		t.Fatalf("outcome %s partial %v: %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	if !strings.Contains(ev.Reason, "test exited with status 1") || !strings.Contains(ev.Reason, "lint exited with status 3") || !strings.Contains(ev.Reason, "slow timed out") {
		t.Errorf("reason %q", ev.Reason)
	}
	got := map[string]string{}
	for _, c := range ev.Commands {
		got[c.Name] = fmt.Sprintf("%d %s %v", c.ExitCode, c.Signal, c.TimedOut)
	}
	want := map[string]string{"agent": "0  false", "test": "1  false", "lint": "3  false", "slow": "-1 SIGKILL true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands %v, want %v", got, want)
	}
	if !strings.Contains(ev.Commands[2].OutputTail, "lint says no") {
		t.Errorf("lint output %q", ev.Commands[2].OutputTail)
	}
	wantTests := contract.TestSummary{Passed: 1, Failed: 1, Skipped: 1, Failures: []contract.TestFailure{{
		Name: "example.com/widgets.TestAdd", File: "calc_test.go", Line: 7, Message: "    calc_test.go:7: Add(1, 1) = 3, want 2",
	}}, Results: []contract.TestResult{
		{Name: "example.com/widgets.TestAdd", Outcome: contract.TestFailed},
		{Name: "example.com/widgets.TestSub", Outcome: contract.TestPassed},
		{Name: "example.com/widgets.TestSkip", Outcome: contract.TestSkipped},
	}, Runners: []string{"go test -json"}}
	if ev.Tests == nil || fmt.Sprint(*ev.Tests) != fmt.Sprint(wantTests) {
		t.Errorf("tests %+v\nwant %+v", ev.Tests, wantTests)
	}
	// The agent changed nothing: an empty manifest, not a missing one.
	if u.Manifest == nil || len(u.Manifest.Files) != 0 || len(ev.Changes) != 0 {
		t.Errorf("manifest %+v, changes %+v", u.Manifest, ev.Changes)
	}
	if ev.FinalAnswer != "Nothing to change: the code is right.\n" {
		t.Errorf("answer %q", ev.FinalAnswer)
	}
}

func TestFailingAgentSkipsVerificationButKeepsItsChange(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-3", "sess-3-a1", sha, []string{"sh", "agent/fail.sh"}, command("lint", time.Minute, "true"))
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeAgentFailed || ev.Reason != "the agent exited with status 4" {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if len(ev.Commands) != 1 || ev.Commands[0].ExitCode != 4 || !strings.Contains(ev.Commands[0].OutputTail, "giving up") {
		t.Errorf("commands %+v", ev.Commands)
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 1 || u.Manifest.Files[0].Path != "calc.go" {
		t.Errorf("manifest %+v", u.Manifest)
	}
}

func TestHangingAgentTimesOutAndLeavesNoProcess(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	marker := "inspect-hang-" + strings.ReplaceAll(t.Name(), "/", "-") + fmt.Sprint(time.Now().UnixNano())
	spec := ch.Spec("sess-4", "sess-4-a1", sha, []string{"sh", "agent/hang.sh", marker}, command("never", time.Minute, "true"))
	spec.Limits.Timeout = contract.Duration(3 * time.Second)
	h := newHarness(t, ch, spec)
	h.cfg.KeepWorkspace = false
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeTimedOut || !ev.Partial || !strings.Contains(ev.Reason, "deadline passed during the agent phase") {
		t.Fatalf("outcome %s partial %v: %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	if len(ev.Commands) != 1 || !ev.Commands[0].TimedOut || ev.Commands[0].Signal != "SIGKILL" || ev.Commands[0].ExitCode != -1 {
		t.Errorf("commands %+v", ev.Commands)
	}
	if u.Manifest == nil {
		t.Error("a timed-out attempt still sends its change")
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("processes of the sandbox are left: %v", pids)
	}
	if _, err := os.Stat(rep.AttemptDir); !os.IsNotExist(err) {
		t.Errorf("the attempt's directory is left: %v", err)
	}
}

func TestCancelKillsTheSandboxAndUploadsPartialEvidence(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	stamp := fmt.Sprint(time.Now().UnixNano())
	marker := "inspect-cancel-" + stamp
	// The agent is refused once before it hangs (the marker is put
	// together only then, so waitForProcess waits for the refusal): the
	// partial evidence keeps the egress audit.
	spec := ch.Spec("sess-5", "sess-5-a1", sha, []string{"sh", "-c", `curl -sS -o /dev/null http://` + EgressListen + `/v1/models; exec sh agent/hang.sh "inspect-cancel-$1"`, "sh", stamp}, command("never", time.Minute, "true"))
	h := newHarness(t, ch, spec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Report, 1)
	go func() {
		rep, err := Run(ctx, h.cfg)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- rep
	}()
	waitForProcess(t, marker)
	cancel()
	rep := <-done
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeCancelled || !ev.Partial || !strings.Contains(ev.Reason, "stopped during the agent phase") {
		t.Fatalf("outcome %s partial %v: %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	if len(ev.Commands) != 1 || ev.Commands[0].Signal != "SIGKILL" || ev.Commands[0].TimedOut {
		t.Errorf("commands %+v", ev.Commands)
	}
	if ev.Egress == nil || ev.Egress.RefusedCount != 1 || ev.Egress.Refused[0].Path != "/v1/models" || ev.Egress.Refused[0].Phase != contract.PhaseAgent {
		t.Errorf("the partial evidence's egress audit: %+v", ev.Egress)
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("processes of the sandbox are left: %v", pids)
	}
}

// waitForProcess waits until a process with marker in its command line
// runs: the sandbox gives no other sign that the agent has started.
func waitForProcess(t *testing.T, marker string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for len(channeltest.ProcessesWith(marker)) == 0 {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no process with %s started", marker)
		}
	}
}

func TestGoneCommitEndsWithAClearError(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	gone := "0123456789abcdef0123456789abcdef01234567"
	spec := ch.Spec("sess-6", "sess-6-a1", gone, []string{"sh", "agent/fix.sh"})
	h := newHarness(t, ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "the pinned commit "+gone+" is no longer in acme/widgets") {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	t.Log(ev.Reason)
	if u.Manifest != nil || len(ev.Commands) != 0 || ev.Partial {
		t.Errorf("manifest %v, commands %v, partial %v", u.Manifest, ev.Commands, ev.Partial)
	}
}

func TestChangeOverTheLimitsIsWithheld(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-7", "sess-7-a1", sha, []string{"sh", "agent/fix.sh"})
	spec.Limits.MaxChangedFiles = 2
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "touches 5 files, more than the 2 this session allows") {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if u.Manifest != nil || len(ev.Changes) != 5 {
		t.Errorf("manifest %v, %d changes", u.Manifest, len(ev.Changes))
	}
}

func TestBadClaimSpendsNothing(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-8", "sess-8-a1", sha, []string{"true"})
	h := newHarness(t, ch, spec)
	h.cfg.ClaimCode = "not-the-claim-code"
	_, err := Run(context.Background(), h.cfg)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401 "+string(contract.ErrorClaimUsed)) {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(err.Error(), "not-the-claim-code") {
		t.Errorf("the error echoes the claim code: %v", err)
	}
	if a := ch.Attempt(spec.AttemptID); len(a.Results) != 0 || len(a.RepoTokens) != 0 {
		t.Errorf("after a refused claim: %+v", a)
	}
}

// The fetch is authorised by the minted token and nothing else: a token for
// another repository cannot fetch this one.
func TestFetchNeedsTheRepoToken(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	ch.WrongRepoTokens()
	spec := ch.Spec("sess-9", "sess-9-a1", sha, []string{"true"})
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "fetching the pinned commit: git fetch") || !strings.Contains(ev.Reason, "not found") {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
}

// Setup runs the repository's own commands, which could plant a prompt
// or an answer under the reserved .inspect/: the agent still reads the
// prompt Inspect assembled, and a planted answer is not the agent's.
func TestSetupCannotPlantThePromptOrTheAnswer(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-plant", "sess-plant-a1", sha, []string{"sh", "-c", `! grep -q planted "$0" && grep -q "make the failing test pass" "$0"`})
	spec.Setup = []contract.Command{command("plant", time.Minute, "sh", "-c",
		"mkdir -p .inspect && echo planted > .inspect/prompt.md && echo planted answer > .inspect/answer.md")}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome == contract.OutcomeAgentFailed {
		t.Fatalf("the agent read a planted prompt: %s", ev.Reason)
	}
	if strings.Contains(ev.FinalAnswer, "planted") {
		t.Errorf("the planted answer became the agent's: %q", ev.FinalAnswer)
	}
	if strings.Contains(ev.Prompt, "planted") {
		t.Errorf("the evidence's prompt is the planted one:\n%s", ev.Prompt)
	}
}
