package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"
)

func isStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// roleName reads the sender's role from the collaborator-permission API.
// go-github v62 does not decode `role_name`, which is the only field that
// tells maintain from write and triage from read, so we decode it here.
func roleName(ctx context.Context, c *github.Client, owner, repo, login string) (string, error) {
	req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", owner, repo, login), nil)
	if err != nil {
		return "", err
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.Do(ctx, req, &body); err != nil {
		if isStatus(err, http.StatusNotFound) {
			// Not a user GitHub knows in this repo: no access at all.
			return "none", nil
		}
		return "", fmt.Errorf("reading %s's permission: %w", login, err)
	}
	if body.RoleName == "" {
		// Older Enterprise Server versions lack role_name; permission is the
		// folded level, which is still safe (maintain reads as write).
		return body.Permission, nil
	}
	return body.RoleName, nil
}

// thread is one issue or pull request's conversation, or one review
// thread on a pull request's diff, as our bot sees it.
type thread struct {
	c           *github.Client
	owner, repo string
	number      int
	// review, when set, is a review thread's first comment: comments go
	// there as replies instead of into the conversation.
	review int64
	// bot is our bot's login: only its comments count when looking for a
	// marker, so nobody can pre-empt a reply by quoting one.
	bot string
}

// find looks for a comment of ours carrying marker, so a replayed step edits
// instead of posting twice.
func (t thread) find(ctx context.Context, marker string) (int64, error) {
	if t.review != 0 {
		return findMarked(t.bot, marker, func(page int) ([]*github.PullRequestComment, *github.Response, error) {
			return t.c.PullRequests.ListComments(ctx, t.owner, t.repo, t.number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
		}, func(c *github.PullRequestComment) (string, string, int64) {
			return c.GetUser().GetLogin(), c.GetBody(), c.GetID()
		})
	}
	return findMarked(t.bot, marker, func(page int) ([]*github.IssueComment, *github.Response, error) {
		return t.c.Issues.ListComments(ctx, t.owner, t.repo, t.number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: page}})
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

// postOnce posts body with marker unless our comment with marker exists
// (searched only when this may be a replay). It returns the comment id.
func (t thread) postOnce(ctx context.Context, marker, body string, mayBeReplay bool) (int64, error) {
	if mayBeReplay {
		id, err := t.find(ctx, marker)
		if err != nil || id != 0 {
			return id, err
		}
	}
	if t.review != 0 {
		// POST .../pulls/{n}/comments/{id}/replies: go-github v62 has no
		// call for it (its CreateCommentInReplyTo uses the older form).
		req, err := t.c.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", t.owner, t.repo, t.number, t.review),
			map[string]string{"body": body + "\n" + marker})
		if err != nil {
			return 0, err
		}
		cm := new(github.PullRequestComment)
		if _, err := t.c.Do(ctx, req, cm); err != nil {
			return 0, fmt.Errorf("replying in the review thread: %w", err)
		}
		return cm.GetID(), nil
	}
	cm, _, err := t.c.Issues.CreateComment(ctx, t.owner, t.repo, t.number, &github.IssueComment{Body: github.String(body + "\n" + marker)})
	if err != nil {
		return 0, fmt.Errorf("posting comment: %w", err)
	}
	return cm.GetID(), nil
}

// edit replaces one of our comments.
func (t thread) edit(ctx context.Context, id int64, marker, body string) error {
	var err error
	if t.review != 0 {
		_, _, err = t.c.PullRequests.EditComment(ctx, t.owner, t.repo, id, &github.PullRequestComment{Body: github.String(body + "\n" + marker)})
	} else {
		_, _, err = t.c.Issues.EditComment(ctx, t.owner, t.repo, id, &github.IssueComment{Body: github.String(body + "\n" + marker)})
	}
	if err != nil {
		return fmt.Errorf("editing comment %d: %w", id, err)
	}
	return nil
}

// findCheckRun finds our check run for a session by its external id.
func findCheckRun(ctx context.Context, c *github.Client, owner, repo, sha, name, externalID string) (int64, error) {
	opts := &github.ListCheckRunsOptions{CheckName: github.String(name), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return 0, fmt.Errorf("listing check runs: %w", err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == externalID {
				return cr.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}
