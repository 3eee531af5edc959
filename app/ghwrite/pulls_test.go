package ghwrite

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

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

// refusal422 is GitHub's 422 with its top-level message and, when given,
// one error's message, as go-github returns it.
func refusal422(message, errMessage string) error {
	er := &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusUnprocessableEntity}, Message: message}
	if errMessage != "" {
		er.Errors = []github.Error{{Resource: "PullRequest", Code: "custom", Message: errMessage}}
	}
	return er
}

func TestEnsurePR(t *testing.T) {
	exists := refusal422("Validation Failed", "A pull request already exists for o:inspect/1-x.")
	noDrafts := refusal422("Draft pull requests are not supported in this repository.", "")
	noCommits := refusal422("Validation Failed", "No commits between main and inspect/1-x")
	boom := errors.New("boom")
	tests := []struct {
		name       string
		prs        fakePRs
		want       int
		wantErr    string
		wantIs     error
		wantListed bool
	}{
		{name: "opened", want: 12},
		{name: "opened before: found by head and base", prs: fakePRs{createErr: exists, open: []*github.PullRequest{{Number: github.Int(8)}}},
			want: 8, wantListed: true},
		{name: "refused as existing and none open", prs: fakePRs{createErr: exists},
			wantErr: "opening the pull request: 422 Validation Failed [{Resource:PullRequest Field: Code:custom Message:A pull request already exists for o:inspect/1-x.}]", wantListed: true},
		{name: "refused as existing and the list fails", prs: fakePRs{createErr: exists, listErr: boom},
			wantErr: "listing pull requests: boom", wantListed: true},
		{name: "drafts refused: told apart, not listed", prs: fakePRs{createErr: noDrafts, open: []*github.PullRequest{{Number: github.Int(8)}}},
			wantErr: "opening the pull request: draft pull requests are not supported in this repository: 422 Draft pull requests are not supported in this repository. []",
			wantIs:  ErrDraftsNotSupported},
		{name: "another 422 is no replay", prs: fakePRs{createErr: noCommits, open: []*github.PullRequest{{Number: github.Int(8)}}},
			wantErr: "opening the pull request: 422 Validation Failed [{Resource:PullRequest Field: Code:custom Message:No commits between main and inspect/1-x}]"},
		{name: "another error", prs: fakePRs{createErr: boom}, wantErr: "opening the pull request: boom", wantIs: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prs := &tt.prs
			pr := &github.NewPullRequest{Title: github.String("t"), Head: github.String("inspect/1-x"), Base: github.String("main"), Body: github.String("b"), Draft: github.Bool(true)}
			got, err := EnsurePR(context.Background(), prs, "o", "r", pr)
			if got != tt.want || errText(err) != tt.wantErr {
				t.Errorf("EnsurePR = %d, %q; want %d, %q", got, errText(err), tt.want, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if len(prs.created) != 1 || !reflect.DeepEqual(prs.created[0], pr) {
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

func TestEnsurePRCutsTitleAndBody(t *testing.T) {
	prs := &fakePRs{}
	pr := &github.NewPullRequest{Title: github.String(strings.Repeat("t", 300)), Head: github.String("h"), Base: github.String("main"), Body: github.String(strings.Repeat("b", MaxPRBody+1))}
	if _, err := EnsurePR(context.Background(), prs, "o", "r", pr); err != nil {
		t.Fatal(err)
	}
	sent := prs.created[0]
	if n := utf8.RuneCountInString(sent.GetTitle()); n != MaxPRTitle || !strings.HasSuffix(sent.GetTitle(), cutNote) {
		t.Errorf("title of %d characters, want %d ending in the note", n, MaxPRTitle)
	}
	if n := utf8.RuneCountInString(sent.GetBody()); n != MaxPRBody || !strings.HasSuffix(sent.GetBody(), cutNote) {
		t.Errorf("body of %d characters, want %d ending in the note", n, MaxPRBody)
	}
	if len(pr.GetTitle()) != 300 {
		t.Error("the caller's pull request was changed")
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
