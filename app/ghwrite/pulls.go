package ghwrite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

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

// ErrDraftsNotSupported is GitHub's refusal of a draft pull request:
// drafts need a public repository, or a Team or Enterprise Cloud plan.
var ErrDraftsNotSupported = errors.New("draft pull requests are not supported in this repository")

// EnsurePR opens pr, or finds the open one from its head to its base that
// an earlier try opened. It returns the pull request's number. The title
// and body are cut to GitHub's limits.
//
// GitHub answers 422 for several reasons, told apart only by the message
// (docs/decisions/0032): a pull request for the head exists already (a
// replay: the open one is found and returned), drafts are not supported
// (ErrDraftsNotSupported, wrapped with GitHub's error, for the caller to
// open a ready one instead), or anything else (no commits between the
// branches, say), which is returned as it is.
func EnsurePR(ctx context.Context, prs PullRequestOpener, owner, repo string, pr *github.NewPullRequest) (int, error) {
	cut := *pr
	if cut.Title != nil {
		cut.Title = github.String(CutRunes(*cut.Title, MaxPRTitle))
	}
	if cut.Body != nil {
		cut.Body = github.String(CutRunes(*cut.Body, MaxPRBody))
	}
	created, _, err := prs.Create(ctx, owner, repo, &cut)
	switch {
	case err == nil:
		return created.GetNumber(), nil
	case RefusalSays(err, http.StatusUnprocessableEntity, "draft pull requests are not supported"):
		return 0, fmt.Errorf("opening the pull request: %w: %w", ErrDraftsNotSupported, err)
	case RefusalSays(err, http.StatusUnprocessableEntity, "a pull request already exists"):
		open, _, lerr := prs.List(ctx, owner, repo, &github.PullRequestListOptions{State: "open", Head: owner + ":" + pr.GetHead(), Base: pr.GetBase()})
		if lerr != nil {
			return 0, fmt.Errorf("listing pull requests: %w", lerr)
		}
		if len(open) > 0 {
			return open[0].GetNumber(), nil
		}
	}
	return 0, fmt.Errorf("opening the pull request: %w", err)
}

// RefusalSays tells whether err is GitHub's answer with status code whose
// message, or one of whose errors' messages, contains phrase (in any
// case). GitHub puts a 422's reason in either place.
func RefusalSays(err error, code int, phrase string) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != code {
		return false
	}
	phrase = strings.ToLower(phrase)
	if strings.Contains(strings.ToLower(er.Message), phrase) {
		return true
	}
	for _, e := range er.Errors {
		if strings.Contains(strings.ToLower(e.Message), phrase) {
			return true
		}
	}
	return false
}

// IsUserTokenRefusal tells whether err is GitHub refusing what a user's
// own token may do: 401 (a revoked or expired token), 403 (the user may not
// write to the repository) or 404 (a private repository the user cannot
// see, which GitHub answers as if it did not exist).
func IsUserTokenRefusal(err error) bool {
	return IsStatus(err, http.StatusUnauthorized) || IsStatus(err, http.StatusForbidden) || IsStatus(err, http.StatusNotFound)
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
