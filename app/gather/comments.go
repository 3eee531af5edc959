package gather

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// writerComments are the thread's latest comments by users with write
// access, oldest first. Others are left out: the agent acts with the
// requester's authority, and a drive-by commenter has none to lend.
func (g Gatherer) writerComments(ctx context.Context, c *github.Client, sess store.Session) ([]contract.ContextItem, error) {
	var comments []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for pages := 0; pages < maxCommentPages; pages++ {
		page, resp, err := c.Issues.ListComments(ctx, sess.RepoOwner, sess.RepoName, sess.Number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing comments: %w", err)
		}
		comments = append(comments, page...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return pickWriterComments(comments, sess.CommentID, func(login string) (string, error) {
		return g.RoleName(ctx, c, sess.RepoOwner, sess.RepoName, login)
	})
}

// pickWriterComments picks the writers' comments from a thread's comments
// (oldest first), leaving out the request (requestID), empty comments and
// bots'. Roles are read newest first, each login once and at most
// maxRoleLookups logins, so a long thread keeps its latest discussion.
func pickWriterComments(comments []*github.IssueComment, requestID int64, roleName func(login string) (string, error)) ([]contract.ContextItem, error) {
	roles := map[string]policy.Role{}
	var items []contract.ContextItem
	// Newest first, so a long thread keeps its latest discussion.
	for i := len(comments) - 1; i >= 0 && len(items) < maxContextComments; i-- {
		cm := comments[i]
		login := cm.GetUser().GetLogin()
		if cm.GetID() == requestID || strings.TrimSpace(cm.GetBody()) == "" || policy.IsBotSender(login, cm.GetUser().GetType()) {
			continue // the request itself, or bots (our own progress comments too)
		}
		role, known := roles[strings.ToLower(login)]
		if !known {
			if len(roles) == maxRoleLookups {
				continue
			}
			r, err := roleName(login)
			if err != nil {
				return nil, err
			}
			role = policy.Role(r)
			roles[strings.ToLower(login)] = role
		}
		if !policy.CanWrite(role) {
			continue
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextComment, Author: login, Source: cm.GetHTMLURL(),
			Text: clip(cm.GetBody()), Untrusted: true})
	}
	slices.Reverse(items)
	return items, nil
}
