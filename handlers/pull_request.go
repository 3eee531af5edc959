package handlers

import (
	"context"
	"time"

	json "github.com/goccy/go-json"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// FateSink takes what becomes of pull requests (issue 38): the app keeps
// the fates of those Inspect opened and ignores the rest. It must persist
// before returning nil; an error of the store is a *StoreError.
type FateSink interface {
	AcceptPullRequestNews(ctx context.Context, n session.PullRequestNews) error
	AcceptDefaultBranchCommits(ctx context.Context, c session.DefaultBranchCommits) error
	// BackfillInstallation asks for the fates of an installation's PRs to
	// be read from the API (installed, or repositories added).
	BackfillInstallation(ctx context.Context, installationID int64) error
}

// PullRequest handles `pull_request` (closed and reopened) and
// `pull_request_review` (submitted): a PR's fate and the review it cost.
type PullRequest struct {
	Fates FateSink
	Self  func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *PullRequest) Handles() []string { return []string{"pull_request", "pull_request_review"} }

type pullRequestPayload struct {
	Action      string `json:"action"`
	PullRequest struct {
		Number         int         `json:"number"`
		Body           string      `json:"body"`
		Merged         bool        `json:"merged"`
		MergeCommitSHA string      `json:"merge_commit_sha"`
		ClosedAt       *time.Time  `json:"closed_at"`
		MergedAt       *time.Time  `json:"merged_at"`
		UpdatedAt      *time.Time  `json:"updated_at"`
		MergedBy       payloadUser `json:"merged_by"`
	} `json:"pull_request"`
	Review struct {
		ID          int64       `json:"id"`
		State       string      `json:"state"`
		SubmittedAt *time.Time  `json:"submitted_at"`
		User        payloadUser `json:"user"`
	} `json:"review"`
	Repository   payloadRepo         `json:"repository"`
	Installation payloadInstallation `json:"installation"`
	Sender       payloadUser         `json:"sender"`
}

// Handle implements githubapp.EventHandler.
func (h *PullRequest) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev pullRequestPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	n := session.PullRequestNews{DeliveryID: deliveryID, Repo: ev.Repository.repo(), InstallationID: ev.Installation.ID,
		Number: ev.PullRequest.Number, Actor: ev.Sender.sender()}
	pr := ev.PullRequest
	switch {
	case eventType == "pull_request" && ev.Action == "closed":
		n.Kind, n.At, n.Merged = session.NewsClosed, firstTime(pr.MergedAt, pr.ClosedAt, pr.UpdatedAt), pr.Merged
		if pr.Merged {
			n.MergeSHA, n.Body = pr.MergeCommitSHA, pr.Body
			if pr.MergedBy.Login != "" {
				n.Actor = pr.MergedBy.sender()
			}
		}
	case eventType == "pull_request" && ev.Action == "reopened":
		n.Kind, n.At = session.NewsReopened, firstTime(pr.UpdatedAt)
	case eventType == "pull_request_review" && ev.Action == "submitted":
		n.Kind, n.At, n.ReviewState, n.ItemID = session.NewsReview, firstTime(ev.Review.SubmittedAt, pr.UpdatedAt), ev.Review.State, ev.Review.ID
		if ev.Review.User.Login != "" {
			n.Actor = ev.Review.User.sender()
		}
	default:
		return nil // other actions say nothing of a fate
	}
	return h.accept(ctx, n)
}

func (h *PullRequest) accept(ctx context.Context, n session.PullRequestNews) error {
	return acceptNews(ctx, h.Fates, h.Self, n)
}

// acceptNews checks what every piece of news needs and hands it on.
func acceptNews(ctx context.Context, fates FateSink, self func() Identity, n session.PullRequestNews) error {
	if fates == nil {
		return nil
	}
	switch {
	case n.Repo.ID == 0 || n.Number == 0:
		return payloadErrorf("%s is missing its repository or pull request", n.Kind)
	case n.InstallationID == 0:
		return payloadErrorf("installation is missing: is this delivery from the GitHub App?")
	case n.DeliveryID == "":
		return payloadErrorf("X-GitHub-Delivery header is missing")
	}
	id := self()
	n.ByInspect = policy.IsOwnApp(n.Actor.Login, n.Actor.Type, id.AppSlug)
	return fates.AcceptPullRequestNews(ctx, n)
}

// firstTime is the first of ts that is set, or the zero time.
func firstTime(ts ...*time.Time) time.Time {
	for _, t := range ts {
		if t != nil && !t.IsZero() {
			return t.UTC()
		}
	}
	return time.Time{}
}

// Installation handles `installation` (created) and
// `installation_repositories` (added): the fates of PRs Inspect opened
// before are read from the API (a backfill, within the outbound limits).
type Installation struct {
	Fates FateSink
}

// Handles implements githubapp.EventHandler.
func (h *Installation) Handles() []string {
	return []string{"installation", "installation_repositories"}
}

// Handle implements githubapp.EventHandler.
func (h *Installation) Handle(ctx context.Context, eventType, _ string, payload []byte) error {
	var ev struct {
		Action       string              `json:"action"`
		Installation payloadInstallation `json:"installation"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	if !(eventType == "installation" && ev.Action == "created") && !(eventType == "installation_repositories" && ev.Action == "added") {
		return nil
	}
	if ev.Installation.ID == 0 {
		return payloadErrorf("%s is missing its installation", eventType)
	}
	return h.Fates.BackfillInstallation(ctx, ev.Installation.ID)
}
