package ghwrite

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"
)

// LabelEditor is what SyncLabels needs of *github.IssuesService.
type LabelEditor interface {
	RemoveLabelForIssue(ctx context.Context, owner, repo string, number int, label string) (*github.Response, error)
	AddLabelsToIssue(ctx context.Context, owner, repo string, number int, labels []string) ([]*github.Label, *github.Response, error)
}

// Reactor is what React needs of *github.ReactionsService.
type Reactor interface {
	CreateIssueCommentReaction(ctx context.Context, owner, repo string, id int64, content string) (*github.Reaction, *github.Response, error)
	CreatePullRequestCommentReaction(ctx context.Context, owner, repo string, id int64, content string) (*github.Reaction, *github.Response, error)
}

// SyncLabels takes each of remove off issue or pull request number (one
// that is not there, 404, is fine) and then puts add on. Both are
// idempotent on GitHub's side, so a replay repeats nothing visible.
func SyncLabels(ctx context.Context, labels LabelEditor, owner, repo string, number int, remove []string, add string) error {
	for _, label := range remove {
		if _, err := labels.RemoveLabelForIssue(ctx, owner, repo, number, label); err != nil && !IsStatus(err, http.StatusNotFound) {
			return fmt.Errorf("removing the %s label: %w", label, err)
		}
	}
	if _, _, err := labels.AddLabelsToIssue(ctx, owner, repo, number, []string{add}); err != nil {
		return fmt.Errorf("adding the %s label: %w", add, err)
	}
	return nil
}

// React puts 👀 on comment id: a review comment on a pull request's diff
// when inReview, else a conversation comment. GitHub answers 200 instead
// of 201 for a reaction that exists, so this is idempotent by itself.
func React(ctx context.Context, reactions Reactor, owner, repo string, id int64, inReview bool) error {
	var err error
	if inReview {
		_, _, err = reactions.CreatePullRequestCommentReaction(ctx, owner, repo, id, "eyes")
	} else {
		_, _, err = reactions.CreateIssueCommentReaction(ctx, owner, repo, id, "eyes")
	}
	if err != nil {
		return fmt.Errorf("reacting: %w", err)
	}
	return nil
}
