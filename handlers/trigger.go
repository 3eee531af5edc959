// Package handlers turns GitHub webhook payloads into Triggers, one file per
// event. Handlers decide from the payload and local state only: they never
// call the network during the request (ARCHITECTURE.md, "Accept").
package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// Repo identifies a repository as the payload describes it.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	DefaultBranch string
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Sender is who caused the event.
type Sender struct {
	Login string
	ID    int64
	Type  string // "User", "Bot", "Organization"
}

// TriggerKind says which way a request came in.
type TriggerKind string

// The ways in. The zero value is a comment, so triggers stored before kinds
// existed decode as what they were.
const (
	// KindComment is a command in an issue or pull-request comment
	// (`issue_comment.created`).
	KindComment TriggerKind = ""
	// KindReviewComment is a command in a review comment on a pull
	// request's diff (`pull_request_review_comment.created`).
	KindReviewComment TriggerKind = "review_comment"
	// KindLabel is a label added to an issue (`issues.labeled`); Label
	// names it and Command is a run with the issue's title.
	KindLabel TriggerKind = "label"
	// KindUnlabel is a label removed from an issue (`issues.unlabeled`);
	// Command is a cancel of the sessions that label started.
	KindUnlabel TriggerKind = "unlabel"
	// KindCheckAction is a button on Inspect's own check run, or on the
	// session's dashboard page
	// (`check_run.requested_action`, `check_run.rerequested`); SessionID
	// is the check run's session and Command a retry or a cancel.
	KindCheckAction TriggerKind = "check_action"
	// KindDashboard is a run started from the dashboard's form (app/web):
	// the signed-in user's request on an issue or pull request, or on a
	// branch (Branch set, Number 0), with no comment behind it. DeliveryID
	// is the form post's own.
	KindDashboard TriggerKind = "dashboard"
)

// Trigger is a request from a person (or an allowlisted bot), ready to be
// accepted: a comment command, a label, or a check-run button.
type Trigger struct {
	DeliveryID     string
	Event          string
	Kind           TriggerKind `json:",omitempty"`
	Repo           Repo
	InstallationID int64
	Number         int
	IsPR           bool
	// CommentID is the issue comment (KindComment) or the review comment
	// (KindReviewComment) that carried the command; 0 for other kinds.
	CommentID int64
	Sender    Sender
	Command   policy.Parsed
	// Label is the label added or removed (KindLabel, KindUnlabel).
	Label string `json:",omitempty"`
	// IssueTitle is the labelled issue's title, for the session's
	// instructions (KindLabel).
	IssueTitle string `json:",omitempty"`
	// Review is where a review comment sits (KindReviewComment).
	Review *ReviewComment `json:",omitempty"`
	// SessionID is the session whose check run's button was pressed
	// (KindCheckAction).
	SessionID string `json:",omitempty"`
	// Branch is the branch a dashboard run works on instead of an issue
	// or pull request (KindDashboard; Number is then 0), and, for a
	// button, its session's branch. Untrusted text, checked by
	// policy.CheckBranchName.
	Branch string `json:",omitempty"`
	// AcceptedAt is when the app accepted the trigger (set by the sink,
	// not the handler): a removed label cancels only what it started
	// before, never a session a re-added label started after.
	AcceptedAt time.Time `json:",omitempty"`
}

// ReviewComment is a review comment's place in a pull request's diff.
type ReviewComment struct {
	Path string
	// StartLine..Line is the commented range (StartLine is 0 for one line).
	Line, StartLine int
	Side            string
	DiffHunk        string
	CommitID        string
	// InReplyTo is the thread's first comment when this one is a reply;
	// replies go to the thread's first comment.
	InReplyTo int64
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
	DeliveryID     string
	Event          string // check_run, check_suite or status
	Repo           Repo
	InstallationID int64
	HeadSHA        string
	// Name is the check run's name or the status's context. A check
	// suite has none: its runs are matched when the worker lists them.
	Name string
	// CheckRunID and CheckSuiteID identify the run or suite, when there is one.
	CheckRunID   int64
	CheckSuiteID int64
	// AppSlug is the app that reported the check ("" for statuses).
	AppSlug string
	// Conclusion is the check's conclusion, or the status's state.
	Conclusion string
	// PullRequests are the open pull requests the payload names (check
	// runs and suites; status payloads name none).
	PullRequests []PullRef
	Sender       Sender
}

// PullRef is a pull request as check payloads name it.
type PullRef struct {
	Number     int
	HeadRef    string
	HeadSHA    string
	HeadRepoID int64
	BaseRepoID int64
}

// ConfigPush says a repo's config (or an owner's org-wide config) changed on
// its default branch.
type ConfigPush struct {
	DeliveryID     string
	Repo           Repo
	InstallationID int64
	// OrgWide is true when the push was to the owner's `.github` repository,
	// whose config is the fallback for every repo of that owner.
	OrgWide bool
}

// Sink accepts what handlers produce. The app implements it; it must
// persist durably before returning nil.
type Sink interface {
	AcceptTrigger(ctx context.Context, t Trigger) error
	AcceptConfigPush(ctx context.Context, p ConfigPush) error
	// AcceptCheckFailure considers a failing check for repair. It stores
	// nothing for a repo whose cached config turns repairs off or names
	// no matching check.
	AcceptCheckFailure(ctx context.Context, f CheckFailure) error
	// DefaultBranchMoved says a repo's default branch got new commits, so
	// its snapshot may be rebuilt sooner. Best effort: an error is logged
	// by the sink, never failed back to GitHub.
	DefaultBranchMoved(ctx context.Context, repo Repo)
}

// Identity is our own app, so its events are ignored.
type Identity struct {
	AppID   int64
	AppSlug string
}

// PayloadError is a payload that cannot be understood; the server answers
// 400 and GitHub's delivery log shows why.
type PayloadError struct{ Err error }

func (e *PayloadError) Error() string { return "malformed payload: " + e.Err.Error() }
func (e *PayloadError) Unwrap() error { return e.Err }

func payloadErrorf(format string, args ...any) error {
	return &PayloadError{Err: fmt.Errorf(format, args...)}
}

// IsPayloadError reports whether err came from a bad payload.
func IsPayloadError(err error) bool {
	var pe *PayloadError
	return errors.As(err, &pe)
}
