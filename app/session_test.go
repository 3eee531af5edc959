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

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/contract"
)

// scriptedExecutor records launches; the test then plays the supervisor over
// the real session channel. It checks the app's side of the contract
// without a sandbox (runner/ has its own tests for that side).
type scriptedExecutor struct {
	mu        sync.Mutex
	launches  []app.Launch
	cancelled []string
}

func (e *scriptedExecutor) Start(_ context.Context, l app.Launch) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launches = append(e.launches, l)
	return fmt.Sprintf("scripted-%d", len(e.launches)), nil
}

func (e *scriptedExecutor) Cancel(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancelled = append(e.cancelled, id)
	return nil
}

func (e *scriptedExecutor) last(t *testing.T) app.Launch {
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
	t     *testing.T
	base  string
	id    string
	token string
}

func (h *harness) claim(l app.Launch) *supervisor {
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
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := contract.Evidence{
		Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: now, EndedAt: now.Add(42 * time.Second), Outcome: contract.OutcomeOK,
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, DurationMS: 30000},
			{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: verifyExit, DurationMS: 1200},
		},
		FinalAnswer: "Fixed the off-by-one in Add.",
	}
	if verifyExit != 0 {
		ev.Outcome = contract.OutcomeVerifyFailed
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

func newSessionHarness(t *testing.T) (*harness, *scriptedExecutor) {
	exec := &scriptedExecutor{}
	h := newHarness(t, func(c *configServer) {})
	h.stop()
	h.exec = exec
	h.start()
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"calc.go":             "package calc\n\nfunc Add(a, b int) int { return a + b + 1 }\n",
		"calc_test.go":        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"Add(1, 2) != 3\")\n\t}\n}\n",
		".github/inspect.yml": agentConfig,
	}, "a failing test")
	return h, exec
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
	h, exec := newSessionHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.State != store.Dispatched {
		t.Fatalf("state = %s (%s: %s)\n%s", sess.State, sess.Reason, sess.Detail, h.logs)
	}
	sv := h.claim(exec.last(t))
	spec := sv.spec()
	if spec.PinnedSHA != h.gh.BranchSHA(owner, repoName, "main") || spec.Target.Kind != contract.TargetIssue {
		t.Errorf("spec pins %s/%s", spec.PinnedSHA, spec.Target.Kind)
	}
	if strings.Contains(spec.Repo.CloneURL, "@") {
		t.Errorf("the clone URL carries a credential: %s", spec.Repo.CloneURL)
	}
	h.runWorkers()
	if s := h.onlySession(); s.State != store.Running {
		t.Fatalf("after claim: %s", s.State)
	}
	sv.upload(spec, 0, contract.FileChange{Path: "calc.go", Mode: contract.ModeFile,
		Content: []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n")})
	h.runWorkers()

	sess = h.onlySession()
	if sess.State != store.Done || sess.Outcome != store.Changed {
		t.Fatalf("session = %s/%s (%s: %s)\n%s", sess.State, sess.Outcome, sess.Reason, sess.Detail, h.logs)
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
