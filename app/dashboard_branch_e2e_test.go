package app_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// alice starts sessions from the form on a branch, not an issue or pull
// request. The first runs for real on the branch's head (which is not
// main's) and ends in a new pull request whose base is that branch, the
// branch itself untouched, the check run on its head; the second's
// verification fails, so its pull request into the branch is a draft and
// its check run fails; the third's branch is deleted before it is
// prepared, and it ends in an error its page shows, as does its retry
// from the page's button. A branch has no
// thread: nothing of the three is posted as an issue comment or a
// reaction anywhere.
func TestDashboardStartsASessionOnABranch(t *testing.T) {
	d, lx := newRunningDashboard(t)
	ctx := context.Background()
	const branch = "feature/login"
	head := d.gh.CommitFiles(owner, repoName, branch, map[string]string{"NOTES.md": "only on the branch\n"}, "work on the branch")
	if head == d.gh.BranchSHA(owner, repoName, "main") {
		t.Fatal("the branch's head is main's: the test could not tell them apart")
	}
	d.signIn("alice", "/sessions/new")

	d.startOnBranch(branch, "make TestAdd pass")
	sess := d.runNewestSession(lx)
	if !sess.Target().IsBranch() || sess.Number != 0 || sess.IsPR || sess.Target().BranchName() != branch || sess.TriggerKind != session.KindDashboard || sess.RequesterLogin != "alice" {
		t.Errorf("the session = #%d pr=%v branch %q %s by %s", sess.Number, sess.IsPR, sess.Target().BranchName(), sess.TriggerKind, sess.RequesterLogin)
	}
	if sess.Outcome != session.Changed || sess.PRNumber == 0 {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, d.logs)
	}
	if sess.HeadSHA != head {
		t.Errorf("the session pinned %s, want the branch's head %s", sess.HeadSHA, head)
	}
	pr, _, err := d.client(t).PullRequests.Get(ctx, owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetBase().GetRef() != branch || !strings.HasPrefix(pr.GetHead().GetRef(), "inspect/branch-") || pr.GetDraft() {
		t.Errorf("the PR is %s → %s (draft %v), want a ready inspect/branch-… → %s", pr.GetHead().GetRef(), pr.GetBase().GetRef(), pr.GetDraft(), branch)
	}
	if got := d.gh.BranchSHA(owner, repoName, branch); got != head {
		t.Errorf("the branch moved to %s: Inspect pushed onto it", got)
	}
	commit, _, err := d.client(t).Git.GetCommit(ctx, owner, repoName, sess.CommitSHA)
	if err != nil || len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != head {
		t.Errorf("the commit's parents are %v (%v), want the branch's head", commit.Parents, err)
	}
	body := pr.GetBody()
	if !strings.Contains(body, "@alice asked on Inspect's dashboard, for branch `"+branch+"`") || strings.Contains(body, "Fixes") || strings.Contains(body, "#0") {
		t.Errorf("the PR body does not say who asked for which branch, or closes something:\n%s", body)
	}
	d.wantCheckRun(sess, head, "success")

	// The session's page is the reply: the branch, the PR, the answer.
	d.do("the session's page",
		chromedp.Navigate(d.url+"/sessions/"+sess.ID),
		chromedp.WaitVisible(chromedp.CSS("#pr")),
	)
	if got := d.text("#branch"); got != branch {
		t.Errorf("the page names the branch %q", got)
	}
	if !strings.Contains(d.text("#detail"), "pull request") {
		t.Errorf("the page's answer: %q", d.text("#detail"))
	}
	d.screenshot("branch-session")

	// Verification fails: the change is a draft into the branch.
	d.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\nverify:\n  - name: fails\n    run: [\"sh\", \"-c\", \"exit 3\"]\n",
	}, "a verify that fails")
	d.startOnBranch(branch, "make TestAdd pass")
	failed := d.runNewestSession(lx)
	if failed.ID == sess.ID || failed.Outcome != session.VerificationFailed || failed.PRNumber == 0 {
		t.Fatalf("the failing session = %s/%s: %s\n%s", failed.State(), failed.Outcome, failed.Detail, d.logs)
	}
	draft, _, err := d.client(t).PullRequests.Get(ctx, owner, repoName, failed.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if draft.GetBase().GetRef() != branch || !draft.GetDraft() || draft.GetHead().GetRef() == pr.GetHead().GetRef() {
		t.Errorf("the failed change's PR is %s → %s (draft %v), want a draft of its own into %s", draft.GetHead().GetRef(), draft.GetBase().GetRef(), draft.GetDraft(), branch)
	}
	d.wantCheckRun(failed, head, "failure")
	if got := d.gh.BranchSHA(owner, repoName, branch); got != head {
		t.Errorf("the branch moved to %s", got)
	}

	// The branch is deleted after the form was posted: the session ends
	// in an error, on its page.
	const gone = "soon-gone"
	d.gh.CreateBranch(owner, repoName, gone, "main")
	d.startOnBranch(gone, "anything")
	// Deleted as a push would, with the real git on the stand-in's
	// repository.
	if out, err := exec.Command("git", "--git-dir", d.gh.GitDir(owner, repoName), "update-ref", "-d", "refs/heads/"+gone).CombinedOutput(); err != nil {
		t.Fatalf("deleting the branch: %v\n%s", err, out)
	}
	d.gh.ResyncRefs(owner, repoName)
	d.runWorkers()
	lost := d.newestSessionIn(repoID)
	if lost.Target().BranchName() != gone || lost.State() != session.Done || lost.Outcome != session.Errored || lost.Reason != "branch_missing" {
		t.Fatalf("the session on the deleted branch = %s/%s (%s)\n%s", lost.State(), lost.Outcome, lost.Reason, d.logs)
	}
	d.do("the lost session's page",
		chromedp.Navigate(d.url+"/sessions/"+lost.ID),
		chromedp.WaitVisible(chromedp.CSS("#detail")),
	)
	if got := d.text("#detail"); !strings.Contains(got, "no longer exists") {
		t.Errorf("the page's answer: %q", got)
	}

	// Its Retry button: the retry is on the same branch, read again, and
	// answers on its page too.
	d.do("Retry on the lost session's page", chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#asked")))
	if got := d.text("#asked"); !strings.Contains(got, "this page shows") {
		t.Errorf("after Retry the page says %q", got)
	}
	d.runWorkers()
	retried := d.newestSessionIn(repoID)
	if retried.RetryOf != lost.ID || retried.Target().BranchName() != gone || retried.Outcome != session.Errored || retried.Reason != "branch_missing" {
		t.Errorf("the retry = %s of %s on %q: %s (%s)\n%s", retried.ID, retried.RetryOf, retried.Target().BranchName(), retried.Outcome, retried.Reason, d.logs)
	}

	for _, r := range d.gh.RequestsMatching("POST", "/repos/") {
		if strings.Contains(r.Path, "/comments") || strings.Contains(r.Path, "/reactions") || strings.Contains(r.Path, "/issues/0") {
			t.Errorf("a branch session wrote to a thread: POST %s", r.Path)
		}
	}
	if n := len(d.gh.Comments(owner, repoName, issueNumber)); n != 0 {
		t.Errorf("%d comments on the fixture's issue", n)
	}
}

// startOnBranch posts the start form for branch in the fixture's
// repository, in the signed-in tab.
func (d *dashboard) startOnBranch(branch, instructions string) {
	d.t.Helper()
	d.do("the start form on a branch",
		chromedp.Navigate(d.url+"/sessions/new"),
		chromedp.WaitVisible(chromedp.CSS("#start")),
		chromedp.SendKeys(chromedp.CSS("#branch"), branch),
		chromedp.SendKeys(chromedp.CSS("#instructions"), instructions),
		chromedp.Click(chromedp.CSS("#start")),
		chromedp.WaitVisible(chromedp.CSS("#sessions")),
	)
}

// runNewestSession prepares and dispatches the repository's newest
// session, waits for its supervisor and reports it.
func (d *dashboard) runNewestSession(lx *local.Executor) store.Session {
	d.t.Helper()
	d.runWorkers()
	sess := d.newestSessionIn(repoID)
	a, err := d.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		d.t.Fatalf("no attempt: %v (%s/%s %s)\n%s", err, sess.State(), sess.Outcome, sess.Detail, d.logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if st, err := lx.Wait(ctx, a.ExternalID); err != nil || st.ExitCode != 0 {
		d.t.Fatalf("inspect runner: %+v %v\n%s", st, err, d.logs)
	}
	d.runWorkers()
	if sess, err = d.st.GetSession(context.Background(), sess.ID); err != nil {
		d.t.Fatal(err)
	}
	return sess
}

// wantCheckRun checks that the session's one check run is on head,
// concluded as conclusion.
func (d *dashboard) wantCheckRun(sess store.Session, head, conclusion string) {
	d.t.Helper()
	var found int
	for _, cr := range d.gh.CheckRuns(owner, repoName) {
		if cr.ExternalID != sess.ID {
			continue
		}
		found++
		if cr.HeadSHA != head || cr.Status != "completed" || cr.Conclusion != conclusion || cr.ID != sess.CheckRunID {
			d.t.Errorf("check run %d: on %s, %s/%s; want %d on %s, completed/%s", cr.ID, cr.HeadSHA, cr.Status, cr.Conclusion, sess.CheckRunID, head, conclusion)
		}
	}
	if found != 1 {
		d.t.Errorf("%d check runs for session %s, want 1", found, sess.ID)
	}
}
