package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// scriptedExecutor records launches; the test then plays the supervisor over
// the real session channel. It checks the app's side of the contract
// without a sandbox (runner/ has its own tests for that side).
type scriptedExecutor struct {
	mu        sync.Mutex
	launches  []runner.Attempt
	cancelled []string
	// exited are external ids whose supervisor the test says has ended,
	// lost those the test says the executor lost.
	exited, lost map[string]bool
	// full, when set, says the executor is at capacity for a launch;
	// refuse, when set, is the error it fails a launch with (nil: none).
	full   func(l runner.Attempt) bool
	refuse func(l runner.Attempt) error
}

func (e *scriptedExecutor) State(_ context.Context, id string) (runner.AttemptState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.exited[id] {
		return runner.AttemptState{Status: runner.StatusExited, ExitCode: 1}, nil
	}
	if e.lost[id] {
		return runner.AttemptState{Status: runner.StatusLost}, nil
	}
	return runner.AttemptState{Status: runner.StatusRunning}, nil
}

func (e *scriptedExecutor) Start(_ context.Context, l runner.Attempt) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.full != nil && e.full(l) {
		return "", runner.ErrAtCapacity
	}
	if e.refuse != nil {
		if err := e.refuse(l); err != nil {
			return "", err
		}
	}
	e.launches = append(e.launches, l)
	return fmt.Sprintf("scripted-%d", len(e.launches)), nil
}

func (e *scriptedExecutor) Cancel(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancelled = append(e.cancelled, id)
	return nil
}

func (e *scriptedExecutor) last(t testing.TB) runner.Attempt {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.launches) == 0 {
		t.Fatal("no attempt was started")
	}
	return e.launches[len(e.launches)-1]
}

// supervisor plays `inspect runner` against the channel.
type supervisor struct {
	t     testing.TB
	base  string
	id    string
	token string
}

func (h *harness) claim(l runner.Attempt) *supervisor {
	h.t.Helper()
	sv := &supervisor{t: h.t, base: h.srv.URL, id: l.AttemptID}
	var resp contract.ClaimResponse
	sv.call("POST", contract.PathClaim, contract.ClaimRequest{AttemptID: l.AttemptID, ClaimCode: l.ClaimCode, SpecVersion: contract.SpecVersion}, &resp, 200)
	sv.token = resp.SessionToken
	return sv
}

func (sv *supervisor) call(method, pattern string, body, out any, want int) int {
	sv.t.Helper()
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			sv.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, sv.base+contract.AttemptPath(pattern, sv.id), &buf)
	if err != nil {
		sv.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contract.ContentTypeJSON)
	if sv.token != "" {
		req.Header.Set(contract.HeaderSessionToken, sv.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sv.t.Fatal(err)
	}
	defer resp.Body.Close()
	if want != 0 && resp.StatusCode != want {
		var e bytes.Buffer
		_, _ = e.ReadFrom(resp.Body) // only for the message
		sv.t.Fatalf("%s %s: status %d, want %d: %s", method, pattern, resp.StatusCode, want, e.String())
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			sv.t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func (sv *supervisor) spec() contract.Spec {
	var spec contract.Spec
	sv.call("GET", contract.PathSpec, nil, &spec, 200)
	return spec
}

func (sv *supervisor) upload(spec contract.Spec, verifyExit int, files ...contract.FileChange) {
	sv.uploadAnswer(spec, verifyExit, "Fixed the off-by-one in Add.", files...)
}

// uploadAnswer is upload with the agent's final answer.
func (sv *supervisor) uploadAnswer(spec contract.Spec, verifyExit int, answer string, files ...contract.FileChange) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := contract.Evidence{
		Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: now, EndedAt: now.Add(42 * time.Second), Outcome: contract.OutcomeOK,
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, DurationMS: 30000},
			{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: verifyExit, DurationMS: 1200},
		},
		FinalAnswer: answer,
	}
	if verifyExit != 0 {
		ev.Outcome = contract.OutcomeVerifyFailed
		ev.Tests = &contract.TestSummary{Passed: 3, Failed: 1, Failures: []contract.TestFailure{
			{Name: "TestAdd", File: "calc_test.go", Line: 6, Message: "Add(1, 2) != 3"}}}
	}
	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: spec.PinnedSHA, Files: files}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev, Manifest: m}, nil, 204)
}

const agentConfig = `agent:
  preset: command
  command: ["./fix.sh"]
verify:
  - name: unit tests
    run: ["go", "test", "./..."]
`

func newSessionHarness(t testing.TB, opts ...harnessOption) (*harness, *scriptedExecutor) {
	return newSessionHarnessOn(t, "sqlite", opts...)
}

func newSessionHarnessOn(t testing.TB, driver string, opts ...harnessOption) (*harness, *scriptedExecutor) {
	ex := &scriptedExecutor{}
	h := newHarnessOn(t, driver, opts...)
	h.stop()
	h.exec = ex
	h.start()
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"calc.go":             "package calc\n\nfunc Add(a, b int) int { return a + b + 1 }\n",
		"calc_test.go":        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add(1, 2) != 3\")\n\t}\n}\n",
		".github/inspect.yml": agentConfig,
	}, "a failing test")
	return h, ex
}

func gitShow(t *testing.T, dir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", dir, "show", "--format=%an%n%B", "--stat", rev).CombinedOutput()
	if err != nil {
		t.Fatalf("git show: %v\n%s", err, out)
	}
	return string(out)
}

func TestIssueSessionOpensVerifiedPullRequest(t *testing.T) {
	h, ex := newSessionHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.State() != session.Dispatched {
		t.Fatalf("state = %s (%s: %s)\n%s", sess.State(), sess.Reason, sess.Detail, h.logs)
	}
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	if spec.PinnedSHA != h.gh.BranchSHA(owner, repoName, "main") || spec.Target.Kind != contract.TargetIssue {
		t.Errorf("spec pins %s/%s", spec.PinnedSHA, spec.Target.Kind)
	}
	if strings.Contains(spec.Repo.CloneURL, "@") {
		t.Errorf("the clone URL carries a credential: %s", spec.Repo.CloneURL)
	}
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("after claim: %s", s.State())
	}
	sv.upload(spec, 0, contract.FileChange{Path: "calc.go", Mode: contract.ModeFile,
		Content: []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n")})
	h.runWorkers()

	sess = h.onlySession()
	if sess.State() != session.Done || sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s: %s)\n%s", sess.State(), sess.Outcome, sess.Reason, sess.Detail, h.logs)
	}
	show := gitShow(t, h.gh.GitDir(owner, repoName), sess.CommitSHA)
	for _, want := range []string{
		h.gh.BotLogin(),
		"Co-authored-by: alice <5000+alice@users.noreply.github.com>",
		"Inspect-Session: " + sess.ID,
		"calc.go",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("commit lacks %q:\n%s", want, show)
		}
	}
	if got := h.gh.BranchSHA(owner, repoName, sess.Branch); got != sess.CommitSHA {
		t.Errorf("branch %s at %s, want %s", sess.Branch, got, sess.CommitSHA)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fixes #1", "fix the failing test", "## Verification", "`go test ./...` | ✅ passed", "calc.go"} {
		if !strings.Contains(pr.GetBody(), want) {
			t.Errorf("PR body lacks %q:\n%s", want, pr.GetBody())
		}
	}
	if pr.GetDraft() {
		t.Error("a verified change should not be a draft")
	}
	if r := h.gh.RequestedReviewers(owner, repoName, sess.PRNumber); len(r) != 1 || r[0] != "alice" {
		t.Errorf("reviewers = %v", r)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].HeadSHA != sess.CommitSHA || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
	progress := h.comments(issueNumber)
	if len(progress) != 1 || !strings.Contains(progress[0].Body, "changed") {
		t.Errorf("progress comment = %+v", progress)
	}
}

// withRealPR replaces PR #2 with one whose head branch has real history.
func withRealPR(t testing.TB, h *harness) string {
	t.Helper()
	h.gh.CreateBranch(owner, repoName, "fix-flaky", "main")
	head := h.gh.CommitFiles(owner, repoName, "fix-flaky", map[string]string{"notes.md": "wip\n"}, "wip")
	h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Fix flaky test", State: "open", User: "mara",
		HeadRef: "fix-flaky", BaseRef: "main"})
	return head
}

var fixedCalc = contract.FileChange{Path: "calc.go", Mode: contract.ModeFile, Content: []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n")}

// runToUpload drives a session from its comment to the uploaded result.
func runToUpload(t *testing.T, h *harness, ex *scriptedExecutor, o commentOpts, verifyExit int, files ...contract.FileChange) store.Session {
	t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(o)); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.upload(spec, verifyExit, files...)
	h.runWorkers()
	return h.onlySession()
}

func TestPRSessionPushesVerifiedChangeOntoItsBranch(t *testing.T) {
	h, ex := newSessionHarness(t)
	head := withRealPR(t, h)
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect fix the flaky test", onPR: true}, 0, fixedCalc)
	if sess.Outcome != session.Changed || sess.Branch != "fix-flaky" || sess.PRNumber != prNumber {
		t.Fatalf("session = %s/%s branch %q PR %d (%s)\n%s", sess.State(), sess.Outcome, sess.Branch, sess.PRNumber, sess.Detail, h.logs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-flaky"); got != sess.CommitSHA {
		t.Errorf("PR branch at %s, want the new commit %s", got, sess.CommitSHA)
	}
	parent, err := exec.Command("git", "--git-dir", h.gh.GitDir(owner, repoName), "rev-parse", sess.CommitSHA+"^").Output()
	if err != nil || strings.TrimSpace(string(parent)) != head {
		t.Errorf("the commit's parent = %s (%v), want the pinned head %s", parent, err, head)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].HeadSHA != head || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
}

func TestFailedVerificationOpensDraftAgainstThePRBranch(t *testing.T) {
	h, ex := newSessionHarness(t)
	head := withRealPR(t, h)
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect fix it", onPR: true}, 1, fixedCalc)
	if sess.Outcome != session.VerificationFailed {
		t.Fatalf("outcome = %s (%s)\n%s", sess.Outcome, sess.Detail, h.logs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-flaky"); got != head {
		t.Errorf("the human's branch moved to %s", got)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.GetDraft() || pr.GetBase().GetRef() != "fix-flaky" || !strings.Contains(pr.GetBody(), "❌ exit 1") {
		t.Errorf("draft=%v base=%s body:\n%s", pr.GetDraft(), pr.GetBase().GetRef(), pr.GetBody())
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Fatalf("check runs = %+v", runs)
	}
	if a := runs[0].Annotations; len(a) != 1 || a[0].Path != "calc_test.go" || a[0].StartLine != 6 {
		t.Errorf("annotations = %+v, want one on calc_test.go:6", a)
	}
	if !strings.Contains(pr.GetBody(), "`TestAdd`") {
		t.Errorf("the PR does not name the failing test:\n%s", pr.GetBody())
	}
}

func TestMovedHeadGetsANewPullRequest(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect fix it")
	moved := h.gh.CommitFiles(owner, repoName, "fix-flaky", map[string]string{"notes.md": "more\n"}, "the human pushed")
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Changed || sess.Branch == "fix-flaky" || sess.PRNumber == prNumber {
		t.Fatalf("session = %s branch %q PR %d\n%s", sess.Outcome, sess.Branch, sess.PRNumber, h.logs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-flaky"); got != moved {
		t.Errorf("the moved PR branch was overwritten: %s", got)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetBase().GetRef() != "fix-flaky" {
		t.Errorf("the new PR targets %q, want the PR branch", pr.GetBase().GetRef())
	}
}

func TestProtectedPathIsRefusedAndNothingPushed(t *testing.T) {
	h, ex := newSessionHarness(t)
	head := withRealPR(t, h)
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect fix ci", onPR: true}, 0,
		contract.FileChange{Path: ".github/workflows/ci.yml", Mode: contract.ModeFile, Content: []byte("on: push\n")})
	if sess.Outcome != session.ChangeRefused || sess.Reason != "protected_path" || sess.CommitSHA != "" {
		t.Fatalf("session = %s/%s commit %q", sess.Outcome, sess.Reason, sess.CommitSHA)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-flaky"); got != head {
		t.Errorf("something was pushed: %s", got)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "action_required" {
		t.Errorf("check runs = %+v", runs)
	}
	if len(h.commentsWith(prNumber, ".github/workflows/ci.yml")) == 0 {
		t.Error("no comment names the protected path")
	}
}

func TestNoChangePostsTheAnswer(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect why is it flaky?", onPR: true}, 0)
	if sess.Outcome != session.NoChange {
		t.Fatalf("outcome = %s", sess.Outcome)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "neutral" {
		t.Errorf("check runs = %+v", runs)
	}
	progress := h.comments(prNumber)
	if len(progress) != 1 || !strings.Contains(progress[0].Body, "no_change") || !strings.Contains(progress[0].Body, "Fixed the off-by-one in Add.") {
		t.Errorf("the agent's answer was not posted: %+v", progress)
	}
}

func TestCancelMidRunStopsTheAttempt(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect fix it")
	h.runWorkers()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect cancel", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Cancelled {
		t.Fatalf("outcome = %s", sess.Outcome)
	}
	if len(ex.cancelled) != 1 {
		t.Errorf("executor cancels = %v", ex.cancelled)
	}
	// A late upload is refused: the attempt has ended.
	now := time.Now()
	ev := contract.Evidence{Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: now, EndedAt: now, Outcome: contract.OutcomeOK}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev}, nil, 0)
	h.runWorkers()
	if s := h.onlySession(); s.Outcome != session.Cancelled || s.CommitSHA != "" {
		t.Errorf("a late result changed the session: %+v", s)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "cancelled" {
		t.Errorf("check runs = %+v", runs)
	}
}

func TestDeadlineTimesTheSessionOut(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.claim(ex.last(t))
	h.runWorkers()
	h.clock.Advance(h.cfg.Sessions.Timeout + time.Second)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("just past the deadline the result is still awaited, got %s", s.State())
	}
	h.clock.Advance(3 * time.Minute) // past the grace
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.TimedOut {
		t.Fatalf("outcome = %s", sess.Outcome)
	}
	if len(ex.cancelled) != 1 {
		t.Errorf("the attempt was not stopped: %v", ex.cancelled)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "timed_out" {
		t.Errorf("check runs = %+v", runs)
	}
}

func TestSecondRequestWaitsThenRuns(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	// steer: off keeps the rule before turns (decision 0071).
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig + "steer: \"off\"\n"}, "no steering")
	sv, spec := startOnPR(t, h, ex, "/inspect first")
	h.clock.Advance(time.Second)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect second", sender: "mara", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	var second store.Session
	for _, s := range h.sessions() {
		if s.Instructions == "second" {
			second = s
		}
	}
	if second.State() != session.Queued {
		t.Fatalf("the second request did not wait: %s", second.State())
	}
	if len(ex.launches) != 1 {
		t.Fatalf("launches = %d while the first runs", len(ex.launches))
	}
	waiting := false
	for _, c := range h.comments(prNumber) {
		waiting = waiting || (strings.Contains(c.Body, "| Status | waiting |") && strings.Contains(c.Body, spec.SessionID))
	}
	if !waiting {
		t.Error("the second request was not told it waits")
	}
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	h.clock.Advance(time.Minute) // the postponed work's turn comes
	h.runWorkers()
	second, _ = h.st.GetSession(context.Background(), second.ID)
	if second.State() != session.Dispatched || len(ex.launches) != 2 {
		t.Fatalf("after the first ended: %s, launches %d\n%s", second.State(), len(ex.launches), h.logs)
	}
	for _, c := range h.comments(prNumber) {
		if strings.Contains(c.Body, second.ID) && strings.Contains(c.Body, "| Status | waiting |") {
			t.Errorf("the progress comment still says waiting:\n%s", c.Body)
		}
	}
}

// The REST requests one issue-to-PR session sends to GitHub, counted by the
// stand-in (git over HTTP and installation-token creation excluded), are
// recorded in BENCHMARKS.md. Targets: at most 20, at most 12 creating.
func TestIssueSessionRequestBudget(t *testing.T) {
	h, ex := newSessionHarness(t)
	h.gh.ResetRequests()
	runToUpload(t, h, ex, commentOpts{body: "/inspect fix the failing test"}, 0, fixedCalc)
	if s := h.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("outcome = %s", s.Outcome)
	}
	total, creating := 0, 0
	var lines []string
	for _, r := range h.gh.Requests() {
		if r.IsGit() || strings.HasSuffix(r.Path, "/access_tokens") || r.Path == "/installation/token" {
			continue
		}
		total++
		if r.Method == "POST" || r.Method == "PATCH" || r.Method == "PUT" {
			creating++
		}
		lines = append(lines, r.Method+" "+r.Path)
	}
	t.Logf("%d requests, %d content-creating:\n%s", total, creating, strings.Join(lines, "\n"))
	if total > 20 || creating > 12 {
		t.Errorf("%d requests (%d creating), over the budget of 20 (12):\n%s", total, creating, strings.Join(lines, "\n"))
	}
}

func TestSupervisorReportedTimeoutEndsTimedOut(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect fix it")
	now := time.Now().UTC()
	ev := contract.Evidence{Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: now, EndedAt: now, Outcome: contract.OutcomeTimedOut, Partial: true,
		Commands: []contract.CommandResult{{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, ExitCode: -1, Signal: "SIGKILL", TimedOut: true}}}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev}, nil, 204)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.TimedOut || sess.CommitSHA != "" {
		t.Fatalf("session = %s commit %q", sess.Outcome, sess.CommitSHA)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "timed_out" {
		t.Errorf("check runs = %+v", runs)
	}
}

// startOnPR starts a session on PR #2 and claims its attempt.
func startOnPR(t testing.TB, h *harness, ex *scriptedExecutor, body string) (*supervisor, contract.Spec) {
	t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: body, onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	return sv, sv.spec()
}

func TestRunnerThatExitsWithoutResultEndsTheSession(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	startOnPR(t, h, ex, "/inspect fix it")
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("state = %s", s.State())
	}
	ex.mu.Lock()
	ex.exited = map[string]bool{"scripted-1": true}
	ex.mu.Unlock()
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Errored || s.Reason != "runner_lost" {
		t.Fatalf("session = %s/%s/%s", s.State(), s.Outcome, s.Reason)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs = %+v", runs)
	}
	if len(h.commentsWith(prNumber, "stopped without reporting a result")) == 0 {
		t.Error("nobody was told")
	}
}

// A session whose pull request is closed while it runs is cancelled by
// reconcile, and its run is stopped; one whose repository the installation
// can no longer read, likewise.
func TestReconcileCancelsSessionsWhoseTargetWentAway(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	startOnPR(t, h, ex, "/inspect fix it")
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("state = %s", s.State())
	}
	// Still open: nothing happens.
	h.clock.Advance(h.cfg.Workers.ReconcileInterval)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("cancelled an open PR's session: %s/%s", s.State(), s.Reason)
	}
	if _, _, err := h.client(t).PullRequests.Edit(context.Background(), owner, repoName, prNumber, &github.PullRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(h.cfg.Workers.ReconcileInterval)
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Cancelled || s.Reason != "pr_closed" {
		t.Fatalf("session = %s/%s/%s", s.State(), s.Outcome, s.Reason)
	}
	ex.mu.Lock()
	cancelled := append([]string(nil), ex.cancelled...)
	ex.mu.Unlock()
	if len(cancelled) != 1 || cancelled[0] != "scripted-1" {
		t.Errorf("cancelled = %v", cancelled)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "cancelled" {
		t.Errorf("check runs = %+v", runs)
	}
}

func TestReconcileCancelsASessionWhoseRepositoryIsGone(t *testing.T) {
	h, ex := newSessionHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.claim(ex.last(t))
	h.runWorkers()
	h.gh.FailNext(http.MethodGet, "/repos/"+owner+"/"+repoName, http.StatusNotFound)
	h.clock.Advance(h.cfg.Workers.ReconcileInterval)
	h.runWorkers()
	if s := h.onlySession(); s.Outcome != session.Cancelled || s.Reason != "repo_removed" {
		for _, r := range h.gh.Requests() {
			t.Log(r.Method, r.Path, r.Status)
		}
		t.Fatalf("session = %s/%s/%s\n%s", s.State(), s.Outcome, s.Reason, h.logs)
	}
}

// A rate limit while checking a session's target is not a removed
// repository: go-github reports it with a 403 too, and the session goes on.
func TestReconcileDoesNotTakeARateLimitForARemovedRepository(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	startOnPR(t, h, ex, "/inspect fix it")
	h.runWorkers()
	h.gh.RateLimitNext(http.MethodGet, "/repos/"+owner+"/"+repoName+"/pulls/*")
	h.clock.Advance(h.cfg.Workers.ReconcileInterval)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Running {
		t.Fatalf("session = %s/%s/%s after a rate limit", s.State(), s.Outcome, s.Reason)
	}
	if n := len(h.gh.RequestsMatching(http.MethodGet, "/repos/"+owner+"/"+repoName+"/pulls/2")); n == 0 {
		t.Error("the target was never checked")
	}
}

// `status` shows a running session's latest progress report.
func TestStatusShowsTheLatestProgress(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, _ := startOnPR(t, h, ex, "/inspect fix it")
	sv.call(http.MethodPost, contract.PathProgress, contract.ProgressEvent{Seq: 1, Time: time.Now().UTC(), Phase: contract.PhaseAgent, Message: "running the agent | now"}, nil, http.StatusNoContent)
	h.runWorkers()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect status", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if len(h.commentsWith(prNumber, "running: `running the agent \\| now`")) == 0 {
		t.Errorf("status does not show the progress:\n%+v", h.comments(prNumber))
	}
}

// A session's token opens only session routes, a snapshot build's only
// snapshot routes (and the repo token, which both need).
func TestChannelRoutesKeepToTheirKindOfAttempt(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, _ := startOnPR(t, h, ex, "/inspect fix it")
	sv.call(http.MethodGet, contract.PathSnapshotJob, nil, nil, http.StatusConflict)
	sv.call(http.MethodPut, contract.PathSnapshotResult, contract.SnapshotResult{Error: "x"}, nil, http.StatusConflict)

	ctx := context.Background()
	if err := h.st.WantSnapshots(ctx, repoID, owner+"/"+repoName, installationID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	code := contract.NewSecret()
	if err := h.st.CreateAttempt(ctx, store.Attempt{ID: "snapshot-attempt-1", Kind: string(contract.KindSnapshot), RepoID: repoID,
		Deadline: h.clock.Now().Add(time.Hour), Spec: `{"version":"x"}`}, code, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := h.st.SetSnapshotAttempt(ctx, repoID, "snapshot-attempt-1", h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// A stale build of the same repo, superseded: its result is taken (its
	// attempt ends) but not put on the schedule.
	staleCode := contract.NewSecret()
	if err := h.st.CreateAttempt(ctx, store.Attempt{ID: "snapshot-attempt-0", Kind: string(contract.KindSnapshot), RepoID: repoID,
		Deadline: h.clock.Now().Add(time.Hour), Spec: `{"version":"x"}`}, staleCode, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	stale := h.claim(runner.Attempt{AttemptID: "snapshot-attempt-0", ClaimCode: staleCode})
	stale.call(http.MethodPut, contract.PathSnapshotResult, contract.SnapshotResult{Error: "stale"}, nil, http.StatusNoContent)
	if r, err := h.st.GetSnapshotRepo(ctx, repoID); err != nil || r.LastError != "" || r.BuildingAttempt != "snapshot-attempt-1" {
		t.Fatalf("a stale build's result reached the schedule: %+v (%v)", r, err)
	}
	snap := h.claim(runner.Attempt{AttemptID: "snapshot-attempt-1", ClaimCode: code})
	snap.call(http.MethodGet, contract.PathSpec, nil, nil, http.StatusConflict)
	snap.call(http.MethodPut, contract.PathResult, map[string]any{}, nil, http.StatusConflict)
	snap.call(http.MethodGet, contract.PathSnapshotJob, nil, nil, http.StatusOK)
	var tok contract.RepoTokenResponse
	snap.call(http.MethodPost, contract.PathRepoToken, nil, &tok, http.StatusOK)
	if tok.Token == "" {
		t.Error("no repo token for the snapshot build")
	}
	snap.call(http.MethodPut, contract.PathSnapshotResult, contract.SnapshotResult{Error: "setup failed"}, nil, http.StatusNoContent)
	if r, err := h.st.GetSnapshotRepo(ctx, repoID); err != nil || r.LastError != "setup failed" {
		t.Errorf("schedule = %+v (%v)", r, err)
	}
}
