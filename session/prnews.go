package session

import "time"

// NewsKind says what happened to a pull request, for its fate (issue 38).
type NewsKind string

// The kinds of news.
const (
	// NewsClosed is `pull_request.closed`, merged or not.
	NewsClosed NewsKind = "closed"
	// NewsReopened is `pull_request.reopened`.
	NewsReopened NewsKind = "reopened"
	// NewsReview is `pull_request_review.submitted`.
	NewsReview NewsKind = "review"
	// NewsReviewComment is `pull_request_review_comment.created`.
	NewsReviewComment NewsKind = "review_comment"
	// NewsThreadComment is `issue_comment.created` on a pull request.
	NewsThreadComment NewsKind = "thread_comment"
)

// PullRequestNews is something that happened to a pull request, which may
// be one Inspect opened: what its fate is made of. Handlers build it from
// the payload alone; the app decides whether the PR is Inspect's.
type PullRequestNews struct {
	DeliveryID     string
	Kind           NewsKind
	Repo           Repo
	InstallationID int64
	Number         int
	At             time.Time
	// Actor is who did it: who closed, merged, reviewed or commented.
	Actor Sender
	// ByInspect says the actor is our own App.
	ByInspect bool
	// Merged and MergeSHA: a close that merged it, and its merge commit.
	Merged   bool
	MergeSHA string
	// Body is a merged PR's body, where GitHub's revert PR names the PR it
	// reverts ("Reverts owner/repo#N"); "" otherwise.
	Body string
	// ReviewState is a review's ("changes_requested", "approved",
	// "commented"); ItemID the review's or comment's id, so it counts once.
	ReviewState string
	ItemID      int64
}

// DefaultBranchCommits are the commits a push added to a repository's
// default branch: where git's "This reverts commit …" lines are read.
type DefaultBranchCommits struct {
	DeliveryID     string
	Repo           Repo
	InstallationID int64
	Commits        []PushedCommit
}

// PushedCommit is one commit of a push, as its payload lists it.
type PushedCommit struct {
	SHA     string
	Message string
	At      time.Time
	Paths   []string
}
