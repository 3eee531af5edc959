package session

import "strconv"

// Target is what a session works on: an issue, a pull request, or a branch
// named on the dashboard with no issue or pull request behind it. Every
// question that hangs on which of the three it is (is there a thread to
// comment on, does a check run go on the head at once, where does the
// change go) is asked of its methods, here, and nowhere else.
type Target struct {
	kind   targetKind
	number int
	branch string
}

type targetKind int

const (
	targetIssue targetKind = iota
	targetPullRequest
	targetBranch
)

// Issue is issue number n.
func Issue(n int) Target { return Target{kind: targetIssue, number: n} }

// PullRequest is pull request number n.
func PullRequest(n int) Target { return Target{kind: targetPullRequest, number: n} }

// Branch is the branch name, with no thread.
func Branch(name string) Target { return Target{kind: targetBranch, branch: name} }

// TargetOf reads a target from the fields it is stored in (a Trigger's, a
// session row's): a branch when branch is set (number is then 0), else the
// pull request or issue number.
func TargetOf(number int, isPR bool, branch string) Target {
	switch {
	case branch != "":
		return Branch(branch)
	case isPR:
		return PullRequest(number)
	default:
		return Issue(number)
	}
}

// Number is the issue's or pull request's number; 0 for a branch.
func (t Target) Number() int { return t.number }

// BranchName is the branch a branch target works on; "" for an issue or a
// pull request. Untrusted text, checked by policy.CheckBranchName.
func (t Target) BranchName() string { return t.branch }

// IsPullRequest reports whether the target is a pull request.
func (t Target) IsPullRequest() bool { return t.kind == targetPullRequest }

// IsIssue reports whether the target is an issue (not a pull request).
func (t Target) IsIssue() bool { return t.kind == targetIssue }

// IsBranch reports whether the target is a branch with no thread.
func (t Target) IsBranch() bool { return t.kind == targetBranch }

// HasThread reports whether the target has a conversation: an issue or a
// pull request, where Inspect reacts, comments, syncs labels and queues a
// session behind the thread's active one. A branch has none; its session's
// page is the reply (app/branch.go).
func (t Target) HasThread() bool { return t.kind != targetBranch }

// HasHeadAtOnce reports whether the target has a commit to put the check
// run on before the agent runs: a pull request's head, or the branch's,
// pinned. An issue has one only once Inspect creates a commit.
func (t Target) HasHeadAtOnce() bool { return t.kind != targetIssue }

// String names the target for logs: "#12" or "branch main".
func (t Target) String() string {
	if t.kind == targetBranch {
		return "branch " + t.branch
	}
	return "#" + strconv.Itoa(t.number)
}
