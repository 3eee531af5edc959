package ghwrite

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

const (
	bot    = "inspect[bot]"
	marker = "<!-- inspect:s1 -->"
)

func TestThreadFindsOnlyTheBotsMarkedCommentAcrossPages(t *testing.T) {
	tests := []struct {
		name       string
		pages      [][]*github.IssueComment
		want       int64
		wantListed []int
	}{
		{
			name: "on the second page",
			pages: [][]*github.IssueComment{
				{issueComment(1, "alice", "hello"), issueComment(2, bot, "another session <!-- inspect:s2 -->")},
				{issueComment(3, bot, "progress\n"+marker)},
			},
			want: 3, wantListed: []int{1, 2},
		},
		{
			name: "a quoted marker by someone else does not count",
			pages: [][]*github.IssueComment{
				{issueComment(1, "mallory", "> progress\n"+marker)},
				{issueComment(2, "alice", marker)},
			},
			want: 0, wantListed: []int{1, 2},
		},
		{
			name:  "the bot's login in another case is still the bot",
			pages: [][]*github.IssueComment{{issueComment(4, "Inspect[bot]", marker)}},
			want:  4, wantListed: []int{1},
		},
		{
			name:  "the first match stops the search",
			pages: [][]*github.IssueComment{{issueComment(5, bot, marker)}, {issueComment(6, bot, marker)}},
			want:  5, wantListed: []int{1},
		},
		{name: "no comments", pages: nil, want: 0, wantListed: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issues := &fakeIssues{pages: tt.pages}
			th := Thread{Issues: issues, Reviews: &fakeReviews{}, Owner: "o", Repo: "r", Number: 7, Bot: bot}
			got, err := th.Find(context.Background(), marker)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Find = %d, want %d", got, tt.want)
			}
			if !slices.Equal(issues.listed, tt.wantListed) {
				t.Errorf("pages listed = %v, want %v", issues.listed, tt.wantListed)
			}
		})
	}
}

func TestThreadInAReviewLooksAtTheReviewComments(t *testing.T) {
	issues := &fakeIssues{pages: [][]*github.IssueComment{{issueComment(1, bot, marker)}}}
	reviews := &fakeReviews{pages: [][]*github.PullRequestComment{
		{reviewComment(10, "mallory", marker)},
		{reviewComment(11, bot, "reply\n"+marker)},
	}}
	th := Thread{Issues: issues, Reviews: reviews, Owner: "o", Repo: "r", Number: 7, Review: 99, Bot: bot}
	got, err := th.Find(context.Background(), marker)
	if err != nil {
		t.Fatal(err)
	}
	if got != 11 {
		t.Errorf("Find = %d, want the bot's review reply 11", got)
	}
	if len(issues.listed) != 0 {
		t.Errorf("the conversation was listed (%v) for a review thread", issues.listed)
	}
	if !slices.Equal(reviews.listed, []int{1, 2}) {
		t.Errorf("review pages listed = %v, want [1 2]", reviews.listed)
	}
	if err := th.Edit(context.Background(), 11, marker, "new"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"11 new\n" + marker}; !slices.Equal(reviews.edited, want) || len(issues.edited) != 0 {
		t.Errorf("review edits %q, issue edits %q; want review edits %q", reviews.edited, issues.edited, want)
	}
}

func TestThreadFindWrapsAListingError(t *testing.T) {
	boom := errors.New("boom")
	th := Thread{Issues: &fakeIssues{err: boom}, Owner: "o", Repo: "r", Number: 7, Bot: bot}
	_, err := th.Find(context.Background(), marker)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "listing comments: ") {
		t.Errorf("Find error = %v, want boom wrapped as listing comments", err)
	}
}

func TestPostOnce(t *testing.T) {
	ours := [][]*github.IssueComment{{issueComment(1, "alice", "hi")}, {issueComment(42, bot, "old\n"+marker)}}
	tests := []struct {
		name        string
		pages       [][]*github.IssueComment
		mayBeReplay bool
		wantID      int64
		wantListed  bool
		wantCreated []string
	}{
		{name: "a replay finds the earlier comment and posts nothing", pages: ours, mayBeReplay: true, wantID: 42, wantListed: true},
		{name: "a replay with nothing found posts", pages: [][]*github.IssueComment{{issueComment(1, "mallory", marker)}}, mayBeReplay: true,
			wantID: 900, wantListed: true, wantCreated: []string{"#7 body\n" + marker}},
		{name: "a first try posts without looking", pages: ours, mayBeReplay: false, wantID: 900, wantCreated: []string{"#7 body\n" + marker}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issues := &fakeIssues{pages: tt.pages}
			th := Thread{Issues: issues, Owner: "o", Repo: "r", Number: 7, Bot: bot}
			id, err := th.PostOnce(context.Background(), marker, "body", tt.mayBeReplay)
			if err != nil {
				t.Fatal(err)
			}
			if id != tt.wantID {
				t.Errorf("PostOnce = %d, want %d", id, tt.wantID)
			}
			if got := len(issues.listed) > 0; got != tt.wantListed {
				t.Errorf("listed = %v, want listed %v", issues.listed, tt.wantListed)
			}
			if !slices.Equal(issues.created, tt.wantCreated) {
				t.Errorf("created %q, want %q", issues.created, tt.wantCreated)
			}
		})
	}
}

func TestPostOnceAndEditWrapErrors(t *testing.T) {
	boom := errors.New("boom")
	th := Thread{Issues: &fakeIssues{err: boom}, Owner: "o", Repo: "r", Number: 7, Bot: bot}
	if _, err := th.PostOnce(context.Background(), marker, "b", false); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "posting comment: ") {
		t.Errorf("PostOnce error = %v", err)
	}
	if err := th.Edit(context.Background(), 5, marker, "b"); !errors.Is(err, boom) || err.Error() != "editing comment 5: boom" {
		t.Errorf("Edit error = %v", err)
	}
}
