package ghwrite

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"
)

// PullRequestOpener is what EnsurePR needs of *github.PullRequestsService.
type PullRequestOpener interface {
	Create(ctx context.Context, owner, repo string, pull *github.NewPullRequest) (*github.PullRequest, *github.Response, error)
	List(ctx context.Context, owner, repo string, opts *github.PullRequestListOptions) ([]*github.PullRequest, *github.Response, error)
}

// ReviewRequester is what RequestReview needs of
// *github.PullRequestsService.
type ReviewRequester interface {
	RequestReviewers(ctx context.Context, owner, repo string, number int, reviewers github.ReviewersRequest) (*github.PullRequest, *github.Response, error)
}

// EnsurePR opens pr, or finds the open one from its head to its base that
// an earlier try opened (GitHub refuses a second with 422). It returns the
// pull request's number.
func EnsurePR(ctx context.Context, prs PullRequestOpener, owner, repo string, pr *github.NewPullRequest) (int, error) {
	created, _, err := prs.Create(ctx, owner, repo, pr)
	if IsStatus(err, http.StatusUnprocessableEntity) {
		// Most likely a replay: it was opened already. Find it.
		open, _, lerr := prs.List(ctx, owner, repo, &github.PullRequestListOptions{State: "open", Head: owner + ":" + pr.GetHead(), Base: pr.GetBase()})
		if lerr != nil {
			return 0, fmt.Errorf("listing pull requests: %w", lerr)
		}
		if len(open) > 0 {
			return open[0].GetNumber(), nil
		}
	}
	if err != nil {
		return 0, fmt.Errorf("opening the pull request: %w", err)
	}
	return created.GetNumber(), nil
}

// RequestReview asks login to review pull request number. GitHub refuses
// a review request to a PR's own author (422), which is no error: a
// replay's request, or the author's, changes nothing. Any other error is
// GitHub's, not wrapped: a review request is best effort, and the caller
// logs it.
func RequestReview(ctx context.Context, prs ReviewRequester, owner, repo string, number int, login string) error {
	_, _, err := prs.RequestReviewers(ctx, owner, repo, number, github.ReviewersRequest{Reviewers: []string{login}})
	if err != nil && !IsStatus(err, http.StatusUnprocessableEntity) {
		return err
	}
	return nil
}
