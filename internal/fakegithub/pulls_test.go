package fakegithub

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestCreateListAndUpdatePulls(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	head := s.CommitFiles("acme", "widgets", "feature", map[string]string{"fix.go": "package fix\n"}, "fix")
	s.CreateBranch("acme", "widgets", "empty", "main")
	gh := appInstallClient(t, s, 1)
	create := func(title, head, base string) (*github.PullRequest, error) {
		pr, _, err := gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{
			Title: github.String(title), Head: github.String(head), Base: github.String(base), Body: github.String("Fixes #1"), Draft: github.Bool(true),
		})
		return pr, err
	}

	pr, err := create("Fix", "acme:feature", "main")
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetNumber() != 1 || pr.GetHead().GetSHA() != head || pr.GetHead().GetRef() != "feature" || pr.GetBase().GetRef() != "main" ||
		pr.GetBase().GetSHA() != s.BranchSHA("acme", "widgets", "main") || !pr.GetDraft() || pr.GetState() != "open" ||
		pr.GetUser().GetLogin() != "inspect-app[bot]" || pr.GetBody() != "Fixes #1" {
		t.Errorf("created = %+v", pr)
	}
	// It is an issue too.
	if is, _, err := gh.Issues.Get(ctx, "acme", "widgets", 1); err != nil || !is.IsPullRequest() {
		t.Errorf("as issue: %+v %v", is, err)
	}

	// GitHub's 422s.
	for name, tc := range map[string]struct{ head, base, msg string }{
		"duplicate":        {"feature", "main", "A pull request already exists for acme:feature."},
		"head is base":     {"main", "main", "No commits between main and main"},
		"nothing to merge": {"empty", "main", "No commits between main and empty"},
		"no head branch":   {"nope", "main", ""},
		"no base branch":   {"feature", "nope", ""},
		"fork head":        {"mallory:feature", "main", ""},
	} {
		_, err := create("again", tc.head, tc.base)
		er := wantStatus(t, err, http.StatusUnprocessableEntity)
		if er.Message != "Validation Failed" || len(er.Errors) != 1 || (tc.msg != "" && er.Errors[0].Message != tc.msg) {
			t.Errorf("%s: %q %+v", name, er.Message, er.Errors)
		}
	}
	_, _, err = gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{Head: github.String("feature"), Base: github.String("main")})
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) != 1 || er.Errors[0].Field != "title" || er.Errors[0].Code != "missing_field" {
		t.Errorf("no title: %+v", er.Errors)
	}

	// The head follows the branch.
	moved := s.CommitFiles("acme", "widgets", "feature", map[string]string{"fix.go": "package fix // 2\n"}, "more")
	if pr, _, err = gh.PullRequests.Get(ctx, "acme", "widgets", 1); err != nil || pr.GetHead().GetSHA() != moved {
		t.Errorf("head after the branch moved = %s, want %s (%v)", pr.GetHead().GetSHA(), moved, err)
	}

	// More pulls to list: a seeded one from a fork, and others.
	s.AddPull("acme", "widgets", Pull{Number: 2, Title: "fork", HeadRef: "feature", HeadRepoFullName: "mallory/widgets"})
	for i := range 3 {
		b := fmt.Sprintf("topic-%d", i)
		s.CommitFiles("acme", "widgets", b, map[string]string{b: b}, b)
		if _, err := create(b, b, "main"); err != nil {
			t.Fatal(err)
		}
	}
	list := func(opts *github.PullRequestListOptions) []int {
		t.Helper()
		prs, _, err := gh.PullRequests.List(ctx, "acme", "widgets", opts)
		if err != nil {
			t.Fatal(err)
		}
		var nums []int
		for _, p := range prs {
			nums = append(nums, p.GetNumber())
		}
		return nums
	}
	if got := list(nil); fmt.Sprint(got) != "[5 4 3 2 1]" {
		t.Errorf("open, newest first = %v", got)
	}
	if got := list(&github.PullRequestListOptions{Head: "acme:feature"}); fmt.Sprint(got) != "[1]" {
		t.Errorf("head acme:feature = %v", got)
	}
	if got := list(&github.PullRequestListOptions{Head: "mallory:feature"}); fmt.Sprint(got) != "[2]" {
		t.Errorf("head mallory:feature = %v", got)
	}
	// GitHub ignores a head filter without the owner.
	if got := list(&github.PullRequestListOptions{Head: "feature"}); len(got) != 5 {
		t.Errorf("head without owner = %v", got)
	}
	if got := list(&github.PullRequestListOptions{Base: "nope"}); len(got) != 0 {
		t.Errorf("base nope = %v", got)
	}
	if got := list(&github.PullRequestListOptions{Direction: "asc", ListOptions: github.ListOptions{PerPage: 2, Page: 2}}); fmt.Sprint(got) != "[3 4]" {
		t.Errorf("page 2 ascending = %v", got)
	}
	_, resp, err := gh.PullRequests.List(ctx, "acme", "widgets", &github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 2}})
	if err != nil || resp.NextPage != 2 || resp.LastPage != 3 {
		t.Errorf("pagination: next %d last %d, %v", resp.NextPage, resp.LastPage, err)
	}

	// Update: title, body, base; close; reopen.
	s.CommitFiles("acme", "widgets", "release", map[string]string{"r": "r"}, "release")
	up, _, err := gh.PullRequests.Edit(ctx, "acme", "widgets", 3, &github.PullRequest{
		Title: github.String("New title"), Body: github.String("New body"), Base: &github.PullRequestBranch{Ref: github.String("release")},
	})
	if err != nil || up.GetTitle() != "New title" || up.GetBody() != "New body" || up.GetBase().GetRef() != "release" {
		t.Fatalf("edit = %+v, %v", up, err)
	}
	closed, _, err := gh.PullRequests.Edit(ctx, "acme", "widgets", 3, &github.PullRequest{State: github.String("closed")})
	if err != nil || closed.GetState() != "closed" || closed.ClosedAt == nil {
		t.Fatalf("close = %+v, %v", closed, err)
	}
	if got := list(&github.PullRequestListOptions{State: "closed"}); fmt.Sprint(got) != "[3]" {
		t.Errorf("closed = %v", got)
	}
	if got := list(&github.PullRequestListOptions{State: "all"}); len(got) != 5 {
		t.Errorf("all = %v", got)
	}
	_, _, err = gh.PullRequests.Edit(ctx, "acme", "widgets", 3, &github.PullRequest{State: github.String("merged")})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = gh.PullRequests.Edit(ctx, "acme", "widgets", 3, &github.PullRequest{Base: &github.PullRequestBranch{Ref: github.String("nope")}})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	if _, _, err := gh.PullRequests.Edit(ctx, "acme", "widgets", 3, &github.PullRequest{State: github.String("open")}); err != nil {
		t.Errorf("reopen: %v", err)
	}
	_, _, err = gh.PullRequests.Edit(ctx, "acme", "widgets", 99, &github.PullRequest{Title: github.String("x")})
	wantStatus(t, err, http.StatusNotFound)

	// Pulls need pull_requests permission.
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{PullRequests: github.String("read")}})
	if _, _, err := ro.PullRequests.List(ctx, "acme", "widgets", nil); err != nil {
		t.Errorf("list with pull_requests: read: %v", err)
	}
	_, _, err = ro.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{Title: github.String("x"), Head: github.String("topic-0"), Base: github.String("release")})
	wantStatus(t, err, http.StatusForbidden)
}

func TestSeededPullsKeepMadeUpHeads(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	real := s.CommitFiles("acme", "widgets", "fix-it", map[string]string{"a": "a"}, "a")
	s.AddPull("acme", "widgets", Pull{Number: 1, HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "fix-it"})
	s.AddPull("acme", "widgets", Pull{Number: 2, HeadSHA: real, HeadRef: "fix-it", BaseRef: "other"})
	s.AddPull("acme", "widgets", Pull{Number: 3, HeadRef: "fix-it", BaseRef: "third"})
	moved := s.CommitFiles("acme", "widgets", "fix-it", map[string]string{"b": "b"}, "b")
	gh := appInstallClient(t, s, 1)
	for n, want := range map[int]string{1: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", 2: moved, 3: moved} {
		pr, _, err := gh.PullRequests.Get(ctx, "acme", "widgets", n)
		if err != nil || pr.GetHead().GetSHA() != want {
			t.Errorf("pull %d head = %s, want %s (%v)", n, pr.GetHead().GetSHA(), want, err)
		}
	}
}

func TestReviewRequests(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	s.AddPull("acme", "widgets", Pull{Number: 7, User: "alice", HeadRef: "fix"})
	s.SetPermission("acme", "widgets", "alice", "write")
	s.SetPermission("acme", "widgets", "bob", "maintain")
	s.SetPermission("acme", "widgets", "carol", "read")
	s.AddUser("mallory", 666, "User")
	gh := appInstallClient(t, s, 1)
	request := func(number int, logins ...string) (*github.PullRequest, *github.Response, error) {
		return gh.PullRequests.RequestReviewers(ctx, "acme", "widgets", number, github.ReviewersRequest{Reviewers: logins})
	}

	// The pull's author: GitHub's 422.
	_, _, err := request(7, "bob", "Alice")
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Review cannot be requested from pull request author." {
		t.Errorf("message = %q", er.Message)
	}
	// Someone who is no collaborator.
	_, _, err = request(7, "mallory")
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the acme/widgets repository." {
		t.Errorf("message = %q", er.Message)
	}
	if got := s.RequestedReviewers("acme", "widgets", 7); len(got) != 0 {
		t.Fatalf("refused requests were recorded: %v", got)
	}

	pr, resp, err := request(7, "bob", "carol")
	if err != nil || resp.StatusCode != http.StatusCreated || len(pr.RequestedReviewers) != 2 || pr.RequestedReviewers[0].GetLogin() != "bob" {
		t.Fatalf("request = %+v %v %v", pr, resp, err)
	}
	if _, _, err := request(7, "BOB"); err != nil { // again: no duplicate
		t.Fatal(err)
	}
	if got := s.RequestedReviewers("acme", "widgets", 7); fmt.Sprint(got) != "[bob carol]" {
		t.Errorf("RequestedReviewers = %v", got)
	}
	revs, _, err := gh.PullRequests.ListReviewers(ctx, "acme", "widgets", 7, nil)
	if err != nil || len(revs.Users) != 2 {
		t.Errorf("list = %+v, %v", revs, err)
	}
	if _, err := gh.PullRequests.RemoveReviewers(ctx, "acme", "widgets", 7, github.ReviewersRequest{Reviewers: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	if got := s.RequestedReviewers("acme", "widgets", 7); fmt.Sprint(got) != "[bob]" {
		t.Errorf("after removal = %v", got)
	}
	_, _, err = request(99, "bob")
	wantStatus(t, err, http.StatusNotFound)

	// A pull the App opened has the bot as its author; a human can review.
	s.CommitFiles("acme", "widgets", "inspect/1", map[string]string{"x": "x"}, "x")
	opened, _, err := gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{Title: github.String("t"), Head: github.String("inspect/1"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := request(opened.GetNumber(), "alice"); err != nil {
		t.Errorf("requesting the requester on the App's pull: %v", err)
	}
	if _, _, err := request(opened.GetNumber(), "inspect-app[bot]"); err == nil {
		t.Error("requested a review from the pull's author, the bot")
	}
}
