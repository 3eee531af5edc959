package ghwrite

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"
)

// IssueComments is what a Thread needs of *github.IssuesService.
type IssueComments interface {
	ListComments(ctx context.Context, owner, repo string, number int, opts *github.IssueListCommentsOptions) ([]*github.IssueComment, *github.Response, error)
	CreateComment(ctx context.Context, owner, repo string, number int, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
	EditComment(ctx context.Context, owner, repo string, commentID int64, comment *github.IssueComment) (*github.IssueComment, *github.Response, error)
}

// ReviewComments is what a Thread needs of *github.PullRequestsService.
type ReviewComments interface {
	ListComments(ctx context.Context, owner, repo string, number int, opts *github.PullRequestListCommentsOptions) ([]*github.PullRequestComment, *github.Response, error)
	EditComment(ctx context.Context, owner, repo string, commentID int64, comment *github.PullRequestComment) (*github.PullRequestComment, *github.Response, error)
}

// Thread is one issue or pull request's conversation, or one review
// thread on a pull request's diff, as our bot sees it.
type Thread struct {
	Issues  IssueComments
	Reviews ReviewComments
	// Replies posts a reply in a review thread. It is the whole client:
	// go-github v62 has no call for POST .../comments/{id}/replies, so the
	// request is built with NewRequest and sent with Do. That path is left
	// to the app's end-to-end tests.
	Replies     *github.Client
	Owner, Repo string
	Number      int
	// Review, when set, is a review thread's first comment: comments go
	// there as replies instead of into the conversation.
	Review int64
	// Bot is our bot's login: only its comments count when looking for a
	// marker, so nobody can pre-empt a reply by quoting one.
	Bot string
}

// NewThread is the conversation of issue or pull request number, through
// c's services; set Review for a review thread.
func NewThread(c *github.Client, owner, repo string, number int, bot string) Thread {
	return Thread{Issues: c.Issues, Reviews: c.PullRequests, Replies: c, Owner: owner, Repo: repo, Number: number, Bot: bot}
}

// Find looks for a comment of ours carrying marker, so a replayed step
// edits instead of posting twice. It returns 0 when there is none.
func (t Thread) Find(ctx context.Context, marker string) (int64, error) {
	if t.Review != 0 {
		return findMarked(t.Bot, marker, func(page int) ([]*github.PullRequestComment, *github.Response, error) {
			return t.Reviews.ListComments(ctx, t.Owner, t.Repo, t.Number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
		}, func(c *github.PullRequestComment) (string, string, int64) {
			return c.GetUser().GetLogin(), c.GetBody(), c.GetID()
		})
	}
	return findMarked(t.Bot, marker, func(page int) ([]*github.IssueComment, *github.Response, error) {
		return t.Issues.ListComments(ctx, t.Owner, t.Repo, t.Number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
	}, func(c *github.IssueComment) (string, string, int64) {
		return c.GetUser().GetLogin(), c.GetBody(), c.GetID()
	})
}

// findMarked pages through a list of comments for the first one bot wrote
// that carries marker.
func findMarked[C any](bot, marker string, list func(page int) ([]C, *github.Response, error), fields func(C) (login, body string, id int64)) (int64, error) {
	for page := 1; ; {
		comments, resp, err := list(page)
		if err != nil {
			return 0, fmt.Errorf("listing comments: %w", err)
		}
		for _, cm := range comments {
			if login, body, id := fields(cm); strings.EqualFold(login, bot) && strings.Contains(body, marker) {
				return id, nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		page = resp.NextPage
	}
}

// PostOnce posts body with marker unless our comment with marker exists
// (searched only when this may be a replay). It returns the comment id.
func (t Thread) PostOnce(ctx context.Context, marker, body string, mayBeReplay bool) (int64, error) {
	if mayBeReplay {
		id, err := t.Find(ctx, marker)
		if err != nil || id != 0 {
			return id, err
		}
	}
	if t.Review != 0 {
		// POST .../pulls/{n}/comments/{id}/replies: go-github v62 has no
		// call for it (its CreateCommentInReplyTo uses the older form).
		req, err := t.Replies.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", t.Owner, t.Repo, t.Number, t.Review),
			map[string]string{"body": withMarker(body, marker)})
		if err != nil {
			return 0, err
		}
		cm := new(github.PullRequestComment)
		if _, err := t.Replies.Do(ctx, req, cm); err != nil {
			return 0, fmt.Errorf("replying in the review thread: %w", err)
		}
		return cm.GetID(), nil
	}
	cm, _, err := t.Issues.CreateComment(ctx, t.Owner, t.Repo, t.Number, &github.IssueComment{Body: github.String(withMarker(body, marker))})
	if err != nil {
		return 0, fmt.Errorf("posting comment: %w", err)
	}
	return cm.GetID(), nil
}

// Edit replaces one of our comments with body and its marker.
func (t Thread) Edit(ctx context.Context, id int64, marker, body string) error {
	var err error
	if t.Review != 0 {
		_, _, err = t.Reviews.EditComment(ctx, t.Owner, t.Repo, id, &github.PullRequestComment{Body: github.String(withMarker(body, marker))})
	} else {
		_, _, err = t.Issues.EditComment(ctx, t.Owner, t.Repo, id, &github.IssueComment{Body: github.String(withMarker(body, marker))})
	}
	if err != nil {
		return fmt.Errorf("editing comment %d: %w", id, err)
	}
	return nil
}
