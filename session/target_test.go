package session_test

import (
	"testing"

	"github.com/inspecthq/inspect/session"
)

func TestTargetAnswersEveryQuestionOnce(t *testing.T) {
	for _, c := range []struct {
		name                                  string
		target                                session.Target
		issue, pr, branch, thread, headAtOnce bool
		number                                int
		branchName, str                       string
	}{
		{name: "issue", target: session.TargetOf(12, false, ""), issue: true, thread: true, number: 12, str: "#12"},
		{name: "pull request", target: session.TargetOf(7, true, ""), pr: true, thread: true, headAtOnce: true, number: 7, str: "#7"},
		{name: "branch", target: session.TargetOf(0, false, "feature/x"), branch: true, headAtOnce: true, branchName: "feature/x", str: "branch feature/x"},
		// A branch is what the row names when it names one, whatever else
		// it holds (a button's trigger on a branch session has IsPR false
		// and Number 0, but an old row is read the same way).
		{name: "branch wins", target: session.TargetOf(3, true, "main"), branch: true, headAtOnce: true, branchName: "main", str: "branch main"},
		{name: "zero", target: session.Target{}, issue: true, thread: true, str: "#0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := c.target
			if tg.IsIssue() != c.issue || tg.IsPullRequest() != c.pr || tg.IsBranch() != c.branch {
				t.Errorf("issue/pr/branch = %v/%v/%v, want %v/%v/%v", tg.IsIssue(), tg.IsPullRequest(), tg.IsBranch(), c.issue, c.pr, c.branch)
			}
			if tg.HasThread() != c.thread || tg.HasHeadAtOnce() != c.headAtOnce {
				t.Errorf("thread/head = %v/%v, want %v/%v", tg.HasThread(), tg.HasHeadAtOnce(), c.thread, c.headAtOnce)
			}
			if tg.Number() != c.number || tg.BranchName() != c.branchName || tg.String() != c.str {
				t.Errorf("number %d branch %q string %q, want %d %q %q", tg.Number(), tg.BranchName(), tg.String(), c.number, c.branchName, c.str)
			}
		})
	}
	if session.Issue(4) != session.TargetOf(4, false, "") || session.PullRequest(4) != session.TargetOf(4, true, "") || session.Branch("b") != session.TargetOf(0, false, "b") {
		t.Error("the constructors and TargetOf disagree")
	}
}
