package fakegithub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestIssuesAndPulls(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "bug", Body: "it breaks", User: "alice"})
	s.AddPull("acme", "widgets", Pull{Number: 2, Title: "fix", User: "bob", HeadSHA: "abc123", HeadRef: "fix-it"})
	s.AddPull("acme", "widgets", Pull{Number: 3, Title: "from a fork", Draft: true, HeadRef: "main", HeadRepoFullName: "mallory/widgets"})
	s.AddPull("acme", "widgets", Pull{Number: 4, Merged: true})

	is, _, err := gh.Issues.Get(ctx, "acme", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	if is.GetTitle() != "bug" || is.GetState() != "open" || is.GetUser().GetLogin() != "alice" || is.IsPullRequest() {
		t.Errorf("issue = %+v", is)
	}
	// A pull request is an issue too, with a pull_request key.
	is, _, err = gh.Issues.Get(ctx, "acme", "widgets", 2)
	if err != nil || !is.IsPullRequest() {
		t.Fatalf("pull as issue = %+v, %v", is, err)
	}

	pr, _, err := gh.PullRequests.Get(ctx, "acme", "widgets", 2)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetHead().GetSHA() != "abc123" || pr.GetHead().GetRef() != "fix-it" || pr.GetBase().GetRef() != "main" ||
		pr.GetHead().GetRepo().GetFullName() != "acme/widgets" || pr.GetHead().GetRepo().GetFork() {
		t.Errorf("pull 2 = %+v", pr)
	}
	pr, _, err = gh.PullRequests.Get(ctx, "acme", "widgets", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !pr.GetDraft() || pr.GetHead().GetRepo().GetFullName() != "mallory/widgets" || !pr.GetHead().GetRepo().GetFork() {
		t.Errorf("fork pull = %+v", pr.GetHead())
	}
	pr, _, err = gh.PullRequests.Get(ctx, "acme", "widgets", 4)
	if err != nil || !pr.GetMerged() || pr.GetState() != "closed" {
		t.Errorf("merged pull = %+v, %v", pr, err)
	}

	// An issue is not a pull request, and unknown numbers are 404s.
	_, _, err = gh.PullRequests.Get(ctx, "acme", "widgets", 1)
	wantStatus(t, err, http.StatusNotFound)
	_, _, err = gh.Issues.Get(ctx, "acme", "widgets", 99)
	wantStatus(t, err, http.StatusNotFound)
}

func TestCommentsPagination(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	s.AddPull("acme", "widgets", Pull{Number: 7, HeadRef: "x"})

	for i := 0; i < 35; i++ {
		c, resp, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 7, &github.IssueComment{Body: github.String(fmt.Sprintf("comment %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if i == 0 {
			if c.GetUser().GetLogin() != "inspect-app[bot]" || c.GetUser().GetType() != "Bot" {
				t.Errorf("comment author = %+v", c.GetUser())
			}
			// go-github v62's IssueComment has no performed_via_github_app.
			var raw struct {
				Via *github.App `json:"performed_via_github_app"`
			}
			req, _ := gh.NewRequest("GET", fmt.Sprintf("repos/acme/widgets/issues/comments/%d", c.GetID()), nil)
			if _, err := gh.Do(ctx, req, &raw); err != nil || raw.Via.GetSlug() != "inspect-app" || raw.Via.GetID() != 4242 {
				t.Errorf("performed_via_github_app = %+v, %v", raw.Via, err)
			}
		}
	}

	var all []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 10}}
	pages := 0
	for {
		cs, resp, err := gh.Issues.ListComments(ctx, "acme", "widgets", 7, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		all = append(all, cs...)
		if pages == 1 && (resp.LastPage != 4 || !strings.Contains(resp.Header.Get("Link"), "/api/v3/repos/acme/widgets/issues/7/comments")) {
			t.Errorf("first page: last=%d link=%q", resp.LastPage, resp.Header.Get("Link"))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if pages != 4 || len(all) != 35 {
		t.Fatalf("%d pages, %d comments", pages, len(all))
	}
	for i, c := range all {
		if c.GetBody() != fmt.Sprintf("comment %d", i) {
			t.Fatalf("comment %d = %q: not oldest first", i, c.GetBody())
		}
	}

	// Edit, then inspect.
	id := all[0].GetID()
	edited, resp, err := gh.Issues.EditComment(ctx, "acme", "widgets", id, &github.IssueComment{Body: github.String("edited")})
	if err != nil || resp.StatusCode != http.StatusOK || edited.GetBody() != "edited" {
		t.Fatalf("edit: %v %v", edited, err)
	}
	got, _, err := gh.Issues.GetComment(ctx, "acme", "widgets", id)
	if err != nil || got.GetBody() != "edited" {
		t.Errorf("get after edit = %v, %v", got, err)
	}
	if c := s.Comments("acme", "widgets", 7)[0]; c.Edits != 1 || c.User != "inspect-app[bot]" || c.Body != "edited" {
		t.Errorf("inspected comment = %+v", c)
	}
}

func TestCommentRules(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	s.AddIssue("acme", "widgets", Issue{Number: 1, Locked: true})
	s.AddIssue("acme", "widgets", Issue{Number: 2})

	_, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("hi")})
	if er := wantStatus(t, err, http.StatusForbidden); !strings.Contains(er.Message, "locked") {
		t.Errorf("message = %q", er.Message)
	}
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", 2, &github.IssueComment{Body: github.String("")})
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) != 1 || er.Errors[0].Field != "body" {
		t.Errorf("errors = %+v", er.Errors)
	}
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", 2, &github.IssueComment{Body: github.String(strings.Repeat("é", 65537))})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	if _, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 2, &github.IssueComment{Body: github.String(strings.Repeat("é", 65536))}); err != nil {
		t.Errorf("a 65536-character body: %v", err)
	}
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", 9, &github.IssueComment{Body: github.String("hi")})
	wantStatus(t, err, http.StatusNotFound)

	// Writes to an archived repo are refused.
	s.AddRepo(Repo{ID: widgetsID, Owner: "acme", Name: "widgets", InstallationID: 1, Archived: true})
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", 2, &github.IssueComment{Body: github.String("hi")})
	wantStatus(t, err, http.StatusForbidden)
}

func TestReactions(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	id := s.AddComment("acme", "widgets", 1, "alice", "/inspect fix it")

	r, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", id, "eyes")
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("first reaction: %v %v", resp, err)
	}
	r2, resp, err := gh.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", id, "eyes")
	if err != nil || resp.StatusCode != http.StatusOK || r2.GetID() != r.GetID() {
		t.Fatalf("repeated reaction: %v %v %v", resp, r2, err)
	}
	_, _, err = gh.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", id, "thumbsup")
	wantStatus(t, err, http.StatusUnprocessableEntity)

	list, _, err := gh.Reactions.ListIssueCommentReactions(ctx, "acme", "widgets", id, nil)
	if err != nil || len(list) != 1 || list[0].GetContent() != "eyes" || list[0].GetUser().GetLogin() != "inspect-app[bot]" {
		t.Errorf("list = %v, %v", list, err)
	}
	if got := s.CommentReactions("acme", "widgets", id); len(got) != 1 || got[0].Content != "eyes" || got[0].User != "inspect-app[bot]" {
		t.Errorf("inspected reactions = %+v", got)
	}
	c, _, err := gh.Issues.GetComment(ctx, "acme", "widgets", id)
	if err != nil || c.GetReactions().GetTotalCount() != 1 || c.GetUser().GetLogin() != "alice" {
		t.Errorf("comment = %+v, %v", c, err)
	}
}
