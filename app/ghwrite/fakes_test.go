package ghwrite

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"
)

// The go-github services satisfy the narrow interfaces as they are.
var (
	_ IssueComments     = (*github.IssuesService)(nil)
	_ LabelEditor       = DocumentedLabels{}
	_ ReviewComments    = (*github.PullRequestsService)(nil)
	_ PullRequestOpener = (*github.PullRequestsService)(nil)
	_ ReviewRequester   = (*github.PullRequestsService)(nil)
	_ CheckRunCreator   = (*github.ChecksService)(nil)
	_ CheckRunUpdater   = (*github.ChecksService)(nil)
	_ GitData           = (*github.GitService)(nil)
	_ RefCreator        = (*github.GitService)(nil)
	_ RefUpdater        = (*github.GitService)(nil)
	_ Reactor           = (*github.ReactionsService)(nil)
)

// statusErr is GitHub's answer with code, as go-github returns it.
func statusErr(code int) error {
	return &github.ErrorResponse{Response: &http.Response{StatusCode: code}, Message: http.StatusText(code)}
}

// page is the answer to a list request for page n of pages: its items and
// the next page's number (0 on the last).
func page[T any](pages [][]T, n int) ([]T, *github.Response) {
	if n == 0 {
		n = 1
	}
	if n > len(pages) {
		return nil, &github.Response{}
	}
	next := 0
	if n < len(pages) {
		next = n + 1
	}
	return pages[n-1], &github.Response{NextPage: next}
}

func issueComment(id int64, login, body string) *github.IssueComment {
	return &github.IssueComment{ID: github.Int64(id), User: &github.User{Login: github.String(login)}, Body: github.String(body)}
}

func reviewComment(id int64, login, body string) *github.PullRequestComment {
	return &github.PullRequestComment{ID: github.Int64(id), User: &github.User{Login: github.String(login)}, Body: github.String(body)}
}

// fakeIssues is an issue's comments in pages, and the writes asked of it.
type fakeIssues struct {
	pages   [][]*github.IssueComment
	listed  []int // the pages asked for
	created []string
	edited  []string
	err     error // for every call
}

func (f *fakeIssues) ListComments(_ context.Context, _, _ string, _ int, opts *github.IssueListCommentsOptions) ([]*github.IssueComment, *github.Response, error) {
	f.listed = append(f.listed, opts.Page)
	if f.err != nil {
		return nil, nil, f.err
	}
	items, resp := page(f.pages, opts.Page)
	return items, resp, nil
}

func (f *fakeIssues) CreateComment(_ context.Context, _, _ string, number int, c *github.IssueComment) (*github.IssueComment, *github.Response, error) {
	f.created = append(f.created, fmt.Sprintf("#%d %s", number, c.GetBody()))
	if f.err != nil {
		return nil, nil, f.err
	}
	return &github.IssueComment{ID: github.Int64(900)}, nil, nil
}

func (f *fakeIssues) EditComment(_ context.Context, _, _ string, id int64, c *github.IssueComment) (*github.IssueComment, *github.Response, error) {
	f.edited = append(f.edited, fmt.Sprintf("%d %s", id, c.GetBody()))
	return c, nil, f.err
}

// fakeReviews is a pull request's review comments in pages.
type fakeReviews struct {
	pages  [][]*github.PullRequestComment
	listed []int
	edited []string
}

func (f *fakeReviews) ListComments(_ context.Context, _, _ string, _ int, opts *github.PullRequestListCommentsOptions) ([]*github.PullRequestComment, *github.Response, error) {
	f.listed = append(f.listed, opts.Page)
	items, resp := page(f.pages, opts.Page)
	return items, resp, nil
}

func (f *fakeReviews) EditComment(_ context.Context, _, _ string, id int64, c *github.PullRequestComment) (*github.PullRequestComment, *github.Response, error) {
	f.edited = append(f.edited, fmt.Sprintf("%d %s", id, c.GetBody()))
	return c, nil, nil
}

// fakeChecks is a commit's check runs in pages, and the writes asked of it.
type fakeChecks struct {
	pages   [][]*github.CheckRun
	listed  []string // "sha name page"
	created []github.CreateCheckRunOptions
	updated []github.UpdateCheckRunOptions
	err     error // for writes
}

func (f *fakeChecks) ListCheckRunsForRef(_ context.Context, _, _, ref string, opts *github.ListCheckRunsOptions) (*github.ListCheckRunsResults, *github.Response, error) {
	f.listed = append(f.listed, fmt.Sprintf("%s %s %d", ref, opts.GetCheckName(), opts.Page))
	if opts.GetFilter() != "all" {
		return nil, nil, fmt.Errorf("listed with filter %q: the default, latest, can hide our run", opts.GetFilter())
	}
	items, resp := page(f.pages, opts.Page)
	return &github.ListCheckRunsResults{CheckRuns: items}, resp, nil
}

func (f *fakeChecks) CreateCheckRun(_ context.Context, _, _ string, opts github.CreateCheckRunOptions) (*github.CheckRun, *github.Response, error) {
	f.created = append(f.created, opts)
	if f.err != nil {
		return nil, nil, f.err
	}
	return &github.CheckRun{ID: github.Int64(700)}, nil, nil
}

func (f *fakeChecks) UpdateCheckRun(_ context.Context, _, _ string, _ int64, opts github.UpdateCheckRunOptions) (*github.CheckRun, *github.Response, error) {
	f.updated = append(f.updated, opts)
	return nil, nil, f.err
}

func checkRun(id int64, externalID string) *github.CheckRun {
	return &github.CheckRun{ID: github.Int64(id), ExternalID: github.String(externalID)}
}
