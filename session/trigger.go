package session

import (
	"time"

	"github.com/inspecthq/inspect/policy"
)

// Repo identifies a repository as the payload describes it.
type Repo struct {
	ID            int64  `json:"ID"`
	Owner         string `json:"Owner"`
	Name          string `json:"Name"`
	DefaultBranch string `json:"DefaultBranch"`
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Sender is who caused the event.
type Sender struct {
	Login string `json:"Login"`
	ID    int64  `json:"ID"`
	Type  string `json:"Type"` // "User", "Bot", "Organization"
}

// Trigger is a request from a person (or an allowlisted bot), ready to be
// accepted: a comment command, a label, a check-run button or the
// dashboard's form. handlers builds it from a webhook, app/web from a form
// post; the app stores it as a work payload when it is a command to run
// later (the encoding is fixed: see the package doc).
type Trigger struct {
	DeliveryID     string      `json:"DeliveryID"`
	Event          string      `json:"Event"`
	Kind           TriggerKind `json:"Kind,omitempty"`
	Repo           Repo        `json:"Repo"`
	InstallationID int64       `json:"InstallationID"`
	// Number and IsPR are the issue or pull request the request is about
	// (Number 0 for a branch); ask Target what they mean.
	Number int  `json:"Number"`
	IsPR   bool `json:"IsPR"`
	// CommentID is the issue comment (KindComment) or the review comment
	// (KindReviewComment) that carried the command; 0 for other kinds.
	CommentID int64         `json:"CommentID"`
	Sender    Sender        `json:"Sender"`
	Command   policy.Parsed `json:"Command"`
	// Label is the label added or removed (KindLabel, KindUnlabel).
	Label string `json:"Label,omitempty"`
	// IssueTitle is the labelled issue's title, for the session's
	// instructions (KindLabel).
	IssueTitle string `json:"IssueTitle,omitempty"`
	// Review is where a review comment sits (KindReviewComment).
	Review *ReviewComment `json:"Review,omitempty"`
	// SessionID is the session whose check run's button was pressed
	// (KindCheckAction).
	SessionID string `json:"SessionID,omitempty"`
	// Branch is the branch a dashboard run works on instead of an issue
	// or pull request (KindDashboard; Number is then 0), and, for a
	// button, its session's branch. Untrusted text, checked by
	// policy.CheckBranchName.
	Branch string `json:"Branch,omitempty"`
	// AcceptedAt is when the app accepted the trigger (set by the sink,
	// not the handler): a removed label cancels only what it started
	// before, never a session a re-added label started after.
	AcceptedAt time.Time `json:"AcceptedAt,omitempty"`
}

// Target is what the request works on.
func (t Trigger) Target() Target { return TargetOf(t.Number, t.IsPR, t.Branch) }

// SetTarget makes tg what the request works on (a button's trigger takes
// its session's target).
func (t *Trigger) SetTarget(tg Target) {
	t.Number, t.IsPR, t.Branch = tg.number, tg.IsPullRequest(), tg.branch
}

// ReviewComment is a review comment's place in a pull request's diff, and
// the thread it belongs to. A Trigger carries it as it came in; a session
// stores it with the comment's id (store.ReviewInfo).
type ReviewComment struct {
	Path string `json:"Path"`
	// StartLine..Line is the commented range (StartLine is 0 for one line).
	Line      int    `json:"Line"`
	StartLine int    `json:"StartLine"`
	Side      string `json:"Side"`
	DiffHunk  string `json:"DiffHunk"`
	CommitID  string `json:"CommitID"`
	// InReplyTo is the thread's first comment when this one is a reply;
	// replies go to the thread's first comment.
	InReplyTo int64 `json:"InReplyTo"`
}

// ThreadRoot is the review comment that replies attach to.
func (r ReviewComment) ThreadRoot(commentID int64) int64 {
	if r.InReplyTo != 0 {
		return r.InReplyTo
	}
	return commentID
}

// CheckFailure is a failing check on a commit, from another app or a CI
// system: a check run, a check suite or a commit status. It becomes a
// repair session only if the repo's config asks for repairs and every guard
// passes; the app decides that in a worker.
type CheckFailure struct {
	DeliveryID     string `json:"DeliveryID"`
	Event          string `json:"Event"` // check_run, check_suite or status
	Repo           Repo   `json:"Repo"`
	InstallationID int64  `json:"InstallationID"`
	HeadSHA        string `json:"HeadSHA"`
	// Name is the check run's name or the status's context. A check
	// suite has none: its runs are matched when the worker lists them.
	Name string `json:"Name"`
	// CheckRunID and CheckSuiteID identify the run or suite, when there is one.
	CheckRunID   int64 `json:"CheckRunID"`
	CheckSuiteID int64 `json:"CheckSuiteID"`
	// AppSlug is the app that reported the check ("" for statuses).
	AppSlug string `json:"AppSlug"`
	// Conclusion is the check's conclusion, or the status's state.
	Conclusion string `json:"Conclusion"`
	// PullRequests are the open pull requests the payload names (check
	// runs and suites; status payloads name none).
	PullRequests []PullRef `json:"PullRequests"`
	Sender       Sender    `json:"Sender"`
}

// PullRef is a pull request as check payloads name it.
type PullRef struct {
	Number     int    `json:"Number"`
	HeadRef    string `json:"HeadRef"`
	HeadSHA    string `json:"HeadSHA"`
	HeadRepoID int64  `json:"HeadRepoID"`
	BaseRepoID int64  `json:"BaseRepoID"`
}

// ConfigPush says a repo's config (or an owner's org-wide config) changed on
// its default branch.
type ConfigPush struct {
	DeliveryID     string `json:"DeliveryID"`
	Repo           Repo   `json:"Repo"`
	InstallationID int64  `json:"InstallationID"`
	// OrgWide is true when the push was to the owner's `.github` repository,
	// whose config is the fallback for every repo of that owner.
	OrgWide bool `json:"OrgWide"`
}
