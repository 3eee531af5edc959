package ghwrite

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// fakePRs opens pull requests, lists the open ones and takes review
// requests, as told.
type fakePRs struct {
	createErr error
	open      []*github.PullRequest
	listErr   error
	listed    []github.PullRequestListOptions
	created   []*github.NewPullRequest
	reviewErr error
	requested []string
}

func (f *fakePRs) Create(_ context.Context, _, _ string, pr *github.NewPullRequest) (*github.PullRequest, *github.Response, error) {
	f.created = append(f.created, pr)
	if f.createErr != nil {
		return nil, nil, f.createErr
	}
	return &github.PullRequest{Number: github.Int(12)}, nil, nil
}

func (f *fakePRs) List(_ context.Context, _, _ string, opts *github.PullRequestListOptions) ([]*github.PullRequest, *github.Response, error) {
	f.listed = append(f.listed, *opts)
	return f.open, &github.Response{}, f.listErr
}

func (f *fakePRs) RequestReviewers(_ context.Context, _, _ string, number int, r github.ReviewersRequest) (*github.PullRequest, *github.Response, error) {
	f.requested = append(f.requested, strings.Join(r.Reviewers, ","))
	return nil, nil, f.reviewErr
}

func TestEnsurePR(t *testing.T) {
	exists := statusErr(http.StatusUnprocessableEntity)
	boom := errors.New("boom")
	tests := []struct {
		name       string
		prs        fakePRs
		want       int
		wantErr    string
		wantListed bool
	}{
		{name: "opened", want: 12},
		{name: "opened before: found by head and base", prs: fakePRs{createErr: exists, open: []*github.PullRequest{{Number: github.Int(8)}}},
			want: 8, wantListed: true},
		{name: "refused and none open", prs: fakePRs{createErr: exists},
			wantErr: "opening the pull request: 422 Unprocessable Entity []", wantListed: true},
		{name: "refused and the list fails", prs: fakePRs{createErr: exists, listErr: boom},
			wantErr: "listing pull requests: boom", wantListed: true},
		{name: "another error", prs: fakePRs{createErr: boom}, wantErr: "opening the pull request: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prs := &tt.prs
			pr := &github.NewPullRequest{Title: github.String("t"), Head: github.String("inspect/1-x"), Base: github.String("main"), Draft: github.Bool(true)}
			got, err := EnsurePR(context.Background(), prs, "o", "r", pr)
			if got != tt.want || errText(err) != tt.wantErr {
				t.Errorf("EnsurePR = %d, %q; want %d, %q", got, errText(err), tt.want, tt.wantErr)
			}
			if len(prs.created) != 1 || prs.created[0] != pr {
				t.Errorf("created %v, want the one pull request as given", prs.created)
			}
			if got := len(prs.listed) > 0; got != tt.wantListed {
				t.Fatalf("listed %v, want listed %v", prs.listed, tt.wantListed)
			}
			if tt.wantListed {
				if l := prs.listed[0]; l.State != "open" || l.Head != "o:inspect/1-x" || l.Base != "main" {
					t.Errorf("listed %+v, want the open ones from o:inspect/1-x into main", l)
				}
			}
		})
	}
}

func TestRequestReview(t *testing.T) {
	forbidden := statusErr(http.StatusForbidden)
	tests := []struct {
		name    string
		err     error
		wantErr error
	}{
		{name: "requested"},
		{name: "the author cannot review their own pull request", err: statusErr(http.StatusUnprocessableEntity)},
		{name: "another error is reported as GitHub's", err: forbidden, wantErr: forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prs := &fakePRs{reviewErr: tt.err}
			if err := RequestReview(context.Background(), prs, "o", "r", 12, "alice"); err != tt.wantErr {
				t.Errorf("RequestReview error %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(prs.requested, []string{"alice"}) {
				t.Errorf("requested %q, want alice alone", prs.requested)
			}
		})
	}
}
