package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/browsertest"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/internal/servetest"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// TestMain removes the inspect binary the sandbox tests build.
func TestMain(m *testing.M) {
	defer browsertest.Close()
	servetest.Main(m)
}

// inspectBinary is cmd/inspect, built once per test process: the local
// executor runs it as `inspect runner`, exactly as in production.
func inspectBinary(t testing.TB) string { return servetest.Build(t) }

// newSandboxHarness runs sessions for real: the local executor starts
// `inspect runner`, which fetches from the stand-in's git endpoint and runs
// the sample repo's stand-in agent and `go test` in bubblewrap.
func newSandboxHarness(t testing.TB, opts ...harnessOption) (*harness, *local.Executor) {
	t.Helper()
	return newSandboxHarnessRunning(t, nil, opts...)
}

// newSandboxHarnessRunning is newSandboxHarness whose supervisors get the
// flags args too (a layer cache, say).
func newSandboxHarnessRunning(t testing.TB, args []string, opts ...harnessOption) (*harness, *local.Executor) {
	t.Helper()
	lx := newLocalExecutor(t, args...)
	h := newHarness(t, opts...)
	h.runOn(lx)
	h.gh.CommitFiles(owner, repoName, "main", examples.SampleRepo(), "the sample repository")
	return h, lx
}

// newLocalExecutor is a real local executor (bubblewrap sandboxes, the
// built inspect binary) under a work directory the sandbox can reach;
// args are more supervisor flags (limits, say).
func newLocalExecutor(t testing.TB, args ...string) *local.Executor {
	t.Helper()
	return newLocalExecutorIn(t, sandboxtest.ReachableDir(t), args...)
}

// newLocalExecutorIn is newLocalExecutor under the work directory work,
// for a test that reaches into an attempt's workspace.
func newLocalExecutorIn(t testing.TB, work string, args ...string) *local.Executor {
	t.Helper()
	return newLocalExecutorOf(t, inspectBinary(t), work, args...)
}

// newProductionSandboxHarness is newSandboxHarness on cmd/inspect exactly
// as production builds it (servetest.BuildProduction), without the Go
// build cache the other tests' sessions share: for a test of what a
// sandbox can see or reach.
func newProductionSandboxHarness(t testing.TB, opts ...harnessOption) (*harness, *local.Executor) {
	t.Helper()
	lx := newLocalExecutorOf(t, servetest.BuildProduction(t), sandboxtest.ReachableDir(t))
	h := newHarness(t, opts...)
	h.runOn(lx)
	h.gh.CommitFiles(owner, repoName, "main", examples.SampleRepo(), "the sample repository")
	return h, lx
}

// newLocalExecutorOf is a real local executor running the inspect binary
// bin under the work directory work.
func newLocalExecutorOf(t testing.TB, bin, work string, args ...string) *local.Executor {
	t.Helper()
	lx, err := local.New(local.Config{Binary: bin, Args: append([]string{"--work-dir", work}, args...), MaxConcurrent: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = lx.Close(ctx) // every attempt has ended by now; Close only reaps
	})
	return lx
}

// runOn restarts the harness with lx as its executor, on a clock that
// starts now: the supervisor enforces the spec's deadline on the real one.
func (h *harness) runOn(lx *local.Executor) {
	h.t.Helper()
	h.stop()
	h.exec = lx
	h.clock = fakeclock.New(time.Now().UTC().Truncate(time.Second))
	h.start()
}

func (h *harness) waitForAttempt(lx *local.Executor) {
	h.t.Helper()
	sess := h.onlySession()
	a, err := h.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		h.t.Fatalf("no attempt: %v (%s)\n%s", err, sess.State(), h.logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := lx.Wait(ctx, a.ExternalID)
	if err != nil || st.ExitCode != 0 {
		h.t.Fatalf("inspect runner: %+v %v\n%s", st, err, h.logs)
	}
}

// runSession commits files as the repository's main branch, asks for a
// session on the issue with a comment, runs it for real and returns it
// once reported; it fails the test unless the session ended changed.
func (h *harness) runSession(lx *local.Executor, files map[string]string, ask string) store.Session {
	h.t.Helper()
	h.gh.CommitFiles(owner, repoName, "main", files, "the repository under test")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: ask})); code != 200 {
		h.t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Changed {
		h.t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	return sess
}

func TestRealSessionOnAnIssueFixesTheFailingTest(t *testing.T) {
	h, lx := newSandboxHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()

	assertIssueSessionOpenedPR(t, h)
}

// assertIssueSessionOpenedPR checks what an issue session that fixed the
// sample repo's failing test leaves on GitHub, on any executor.
func assertIssueSessionOpenedPR(t *testing.T, h *harness) store.Session {
	t.Helper()
	sess := h.onlySession()
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	gitDir := h.gh.GitDir(owner, repoName)
	calc, err := exec.Command("git", "--git-dir", gitDir, "show", sess.CommitSHA+":calc.go").Output()
	if err != nil || !strings.Contains(string(calc), "return a + b }") {
		t.Errorf("calc.go at the commit: %s (%v)", calc, err)
	}
	msg, _ := exec.Command("git", "--git-dir", gitDir, "log", "-1", "--format=%B", sess.CommitSHA).Output()
	for _, want := range []string{"Co-authored-by: alice <5000+alice@users.noreply.github.com>", "Inspect-Session: " + sess.ID} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Fixes #1", "`go test -json ./...` | ✅ passed", "Tests: 1 passed, 0 failed", "+1 −1"} {
		if !strings.Contains(pr.GetBody(), want) {
			t.Errorf("PR body lacks %q:\n%s", want, pr.GetBody())
		}
	}
	if r := h.gh.RequestedReviewers(owner, repoName, sess.PRNumber); len(r) != 1 || r[0] != "alice" {
		t.Errorf("reviewers = %v", r)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].HeadSHA != sess.CommitSHA || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
	// No token the app minted appears in anything posted.
	for _, tok := range h.gh.MintedTokens() {
		for _, c := range h.gh.Comments(owner, repoName, issueNumber) {
			if strings.Contains(c.Body, tok) {
				t.Error("a token appears in a comment")
			}
		}
		if strings.Contains(pr.GetBody(), tok) || strings.Contains(h.logs.String(), tok) {
			t.Error("a token appears in the PR body or the logs")
		}
	}
	return sess
}

func TestRealSessionOnAPullRequestPushesOntoItsBranch(t *testing.T) {
	h, lx := newSandboxHarness(t)
	h.gh.CreateBranch(owner, repoName, "fix-add", "main")
	head := h.gh.CommitFiles(owner, repoName, "fix-add", map[string]string{"NOTES.md": "looking into TestAdd\n"}, "notes")
	h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Fix Add", State: "open", User: "mara", HeadRef: "fix-add", BaseRef: "main"})
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	assertPRSessionPushed(t, h, head)
}

// assertPRSessionPushed checks what a PR session that fixed the sample
// repo's failing test leaves on GitHub, on any executor: a commit on the
// PR's branch, on top of its head.
func assertPRSessionPushed(t *testing.T, h *harness, head string) store.Session {
	t.Helper()
	sess := h.onlySession()
	if sess.Outcome != session.Changed || sess.Branch != "fix-add" {
		t.Fatalf("session = %s on %q: %s\n%s", sess.Outcome, sess.Branch, sess.Detail, h.logs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-add"); got != sess.CommitSHA {
		t.Errorf("PR branch at %s, want %s", got, sess.CommitSHA)
	}
	parent, _ := exec.Command("git", "--git-dir", h.gh.GitDir(owner, repoName), "rev-parse", sess.CommitSHA+"^").Output()
	if strings.TrimSpace(string(parent)) != head {
		t.Errorf("parent = %s, want the PR head %s", parent, head)
	}
	return sess
}

// A hanging agent that also starts a setsid child is stopped at the
// session's deadline: the session ends timed_out and no process of it is
// left on the host.
func TestRealHangingAgentTimesOutAndLeavesNothing(t *testing.T) {
	h, lx := newSandboxHarness(t)
	marker := fmt.Sprintf("inspect-hang-marker-%d", time.Now().UnixNano())
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"hang.sh":             "#!/bin/sh\nsetsid sh -c 'sleep 1000; : " + marker + "' &\nsh -c 'sleep 1000; : " + marker + "'\n",
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"hang.sh\"]\nlimits:\n  session_timeout: 5s\n",
	}, "an agent that hangs")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect hang"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	if s := h.onlySession(); s.Outcome != session.TimedOut {
		t.Fatalf("outcome = %s: %s\n%s", s.Outcome, s.Detail, h.logs)
	}
	if left := processesWith(t, marker); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// processesWith lists host processes whose command line contains marker.
func processesWith(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // not a process, or it ended while we looked
		}
		if strings.Contains(string(b), marker) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
