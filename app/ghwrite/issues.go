package ghwrite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

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

// DocumentedLabels is c's labels calls as GitHub documents them: go-github
// v62's AddLabelsToIssue sends a bare array, which GitHub takes ("you can
// also pass an array") but its description's schema does not allow, and
// GitHub recommends the object {"labels": [...]}, which this sends.
type DocumentedLabels struct{ Client *github.Client }

// RemoveLabelForIssue is go-github's.
func (d DocumentedLabels) RemoveLabelForIssue(ctx context.Context, owner, repo string, number int, label string) (*github.Response, error) {
	return d.Client.Issues.RemoveLabelForIssue(ctx, owner, repo, number, label)
}

// AddLabelsToIssue adds labels, sent as {"labels": [...]}.
func (d DocumentedLabels) AddLabelsToIssue(ctx context.Context, owner, repo string, number int, labels []string) ([]*github.Label, *github.Response, error) {
	req, err := d.Client.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/issues/%d/labels", owner, repo, number), map[string][]string{"labels": labels})
	if err != nil {
		return nil, nil, err
	}
	var out []*github.Label
	resp, err := d.Client.Do(ctx, req, &out)
	return out, resp, err
}

// SyncLabels takes each of remove off issue or pull request number (one
// that is not there, 404, is fine) and then puts add on. Both are
// idempotent on GitHub's side, so a replay repeats nothing visible.
//
// The name to remove goes in the path, and go-github v62 puts it there as
// it is: it is escaped here, once. GitHub's route takes the rest of the
// path as the name, unescaped once, so "team/inspect" and "team%2Finspect"
// both work, but a "?" or "#" in a name would end the path, and a second
// escape would name another label.
func SyncLabels(ctx context.Context, labels LabelEditor, owner, repo string, number int, remove []string, add string) error {
	for _, label := range remove {
		if _, err := labels.RemoveLabelForIssue(ctx, owner, repo, number, url.PathEscape(label)); err != nil && !IsStatus(err, http.StatusNotFound) {
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
	return ReactWith(ctx, reactions, owner, repo, id, inReview, "eyes")
}

// ReactWith puts the reaction content (one GitHub names: "rocket",
// "eyes", …) on an issue comment, or on a review comment when inReview.
// GitHub answers a reaction the App already left with the one it has, so
// a replay adds nothing.
func ReactWith(ctx context.Context, reactions Reactor, owner, repo string, id int64, inReview bool, content string) error {
	var err error
	if inReview {
		_, _, err = reactions.CreatePullRequestCommentReaction(ctx, owner, repo, id, content)
	} else {
		_, _, err = reactions.CreateIssueCommentReaction(ctx, owner, repo, id, content)
	}
	if err != nil {
		return fmt.Errorf("reacting: %w", err)
	}
	return nil
}

// LabelMaker is what EnsureLabel needs of *github.IssuesService.
type LabelMaker interface {
	GetLabel(ctx context.Context, owner, repo, name string) (*github.Label, *github.Response, error)
	CreateLabel(ctx context.Context, owner, repo string, label *github.Label) (*github.Label, *github.Response, error)
}

// EnsureLabel makes the repository's label called name, with color and
// description, unless it exists. GitHub would make a missing label when
// it is added to an issue, but grey and without a description; one made
// meanwhile by someone else (422 already_exists) is fine.
func EnsureLabel(ctx context.Context, labels LabelMaker, owner, repo, name, color, description string) error {
	_, _, err := labels.GetLabel(ctx, owner, repo, url.PathEscape(name)) // in the path, as SyncLabels's
	if err == nil {
		return nil
	}
	if !IsStatus(err, http.StatusNotFound) {
		return fmt.Errorf("reading the %s label: %w", name, err)
	}
	_, _, err = labels.CreateLabel(ctx, owner, repo, &github.Label{Name: github.String(name), Color: github.String(color), Description: github.String(description)})
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("creating the %s label: %w", name, err)
	}
	return nil
}

// alreadyExists tells whether err is GitHub's 422 whose error has the code
// already_exists (a label, a ref).
func alreadyExists(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range er.Errors {
		if e.Code == "already_exists" {
			return true
		}
	}
	return false
}
