package fakegithub

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestReviewComments(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const head = "0123456789abcdef0123456789abcdef01234567"
	s.AddPull("acme", "widgets", Pull{Number: 3, HeadSHA: head, HeadRef: "fix"})
	s.AddPull("acme", "widgets", Pull{Number: 4, HeadRef: "other"})
	const hunk = "@@ -8,3 +8,4 @@ func f() {\n \ta()\n+\tb()\n \tc()"
	root := s.AddReviewComment("acme", "widgets", 3, ReviewComment{
		User: "alice", Body: "/inspect why?", Path: "main.go", Line: 10, StartLine: 9, DiffHunk: hunk,
	})
	reply := s.AddReviewComment("acme", "widgets", 3, ReviewComment{User: "bob", Body: "+1", InReplyTo: root})
	elsewhere := s.AddReviewComment("acme", "widgets", 4, ReviewComment{User: "alice", Body: "hm", Path: "x.go", Line: 1})

	// Seeded: the reply joins the root's thread and lines.
	want := []ReviewComment{
		{ID: root, User: "alice", Body: "/inspect why?", Path: "main.go", Line: 10, StartLine: 9, Side: "RIGHT", DiffHunk: hunk, CommitID: head},
		{ID: reply, User: "bob", Body: "+1", Path: "main.go", Line: 10, StartLine: 9, Side: "RIGHT", DiffHunk: hunk, CommitID: head, InReplyTo: root},
	}
	if got := s.ReviewComments("acme", "widgets", 3); !reflect.DeepEqual(got, want) {
		t.Errorf("ReviewComments = %+v, want %+v", got, want)
	}

	// Read through the API, as go-github decodes them.
	list, _, err := gh.PullRequests.ListComments(ctx, "acme", "widgets", 3, nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	c0 := list[0]
	if c0.GetID() != root || c0.GetBody() != "/inspect why?" || c0.GetPath() != "main.go" || c0.GetLine() != 10 ||
		c0.GetStartLine() != 9 || c0.GetSide() != "RIGHT" || c0.GetDiffHunk() != hunk || c0.GetCommitID() != head ||
		c0.InReplyTo != nil || c0.GetUser().GetLogin() != "alice" || c0.GetUser().GetType() != "User" ||
		c0.CreatedAt == nil || c0.UpdatedAt == nil || c0.GetHTMLURL() == "" || c0.Position == nil {
		t.Errorf("root = %+v", c0)
	}
	if list[1].GetInReplyTo() != root || list[1].GetUser().GetLogin() != "bob" {
		t.Errorf("reply = %+v", list[1])
	}
	got, _, err := gh.PullRequests.GetComment(ctx, "acme", "widgets", reply)
	if err != nil || got.GetBody() != "+1" || got.GetInReplyTo() != root {
		t.Errorf("get = %+v %v", got, err)
	}
	_, _, err = gh.PullRequests.GetComment(ctx, "acme", "widgets", 999999)
	wantStatus(t, err, http.StatusNotFound)
	_, _, err = gh.PullRequests.ListComments(ctx, "acme", "widgets", 99, nil)
	wantStatus(t, err, http.StatusNotFound)
	all, _, err := gh.PullRequests.ListComments(ctx, "acme", "widgets", 0, nil) // the repo's
	if err != nil || len(all) != 3 || all[2].GetID() != elsewhere {
		t.Errorf("repo's review comments = %v, %v", all, err)
	}

	// Replies, as go-github makes them (in_reply_to; a reply to a reply
	// joins the root) and through .../replies.
	r1, resp, err := gh.PullRequests.CreateCommentInReplyTo(ctx, "acme", "widgets", 3, "Because of b().", reply)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("in_reply_to: %v %v", resp, err)
	}
	if r1.GetInReplyTo() != root || r1.GetUser().GetLogin() != "inspect-app[bot]" || r1.GetUser().GetType() != "Bot" ||
		r1.GetPath() != "main.go" || r1.GetLine() != 10 || r1.GetDiffHunk() != hunk || r1.GetCommitID() != head {
		t.Errorf("reply = %+v", r1)
	}
	var r2 github.PullRequestComment
	req, _ := gh.NewRequest("POST", fmt.Sprintf("repos/acme/widgets/pulls/3/comments/%d/replies", root), map[string]string{"body": "Fixed."})
	if resp, err := gh.Do(ctx, req, &r2); err != nil || resp.StatusCode != http.StatusCreated || r2.GetInReplyTo() != root {
		t.Fatalf("replies: %+v %v %v", r2, resp, err)
	}
	tok := mintRawToken(t, s, nil)
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"reply to a reply", fmt.Sprintf("repos/acme/widgets/pulls/3/comments/%d/replies", reply), `{"body":"x"}`, 404},
		{"another pull's comment", fmt.Sprintf("repos/acme/widgets/pulls/3/comments/%d/replies", elsewhere), `{"body":"x"}`, 404},
		{"no such comment", "repos/acme/widgets/pulls/3/comments/999999/replies", `{"body":"x"}`, 404},
		{"no such pull", fmt.Sprintf("repos/acme/widgets/pulls/99/comments/%d/replies", root), `{"body":"x"}`, 404},
		{"no body", fmt.Sprintf("repos/acme/widgets/pulls/3/comments/%d/replies", root), `{}`, 422},
		{"not JSON", fmt.Sprintf("repos/acme/widgets/pulls/3/comments/%d/replies", root), `{`, 400},
		{"in_reply_to unknown", "repos/acme/widgets/pulls/3/comments", `{"body":"x","in_reply_to":999999}`, 404},
		{"new thread without commit_id", "repos/acme/widgets/pulls/3/comments", `{"body":"x","path":"a.go","line":1}`, 422},
		{"new thread without line", "repos/acme/widgets/pulls/3/comments", `{"body":"x","path":"a.go","commit_id":"` + head + `"}`, 422},
		{"start after line", "repos/acme/widgets/pulls/3/comments", `{"body":"x","path":"a.go","commit_id":"` + head + `","line":3,"start_line":5}`, 422},
		{"new thread", "repos/acme/widgets/pulls/3/comments", `{"body":"x","path":"a.go","commit_id":"` + head + `","line":3,"start_line":1,"side":"LEFT"}`, 201},
		{"file comment", "repos/acme/widgets/pulls/3/comments", `{"body":"x","path":"a.go","commit_id":"` + head + `","subject_type":"file"}`, 201},
	} {
		if status, body := rawDo(t, s, tok, "POST", tc.path, tc.body); status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
		}
	}
	cms := s.ReviewComments("acme", "widgets", 3)
	if len(cms) != 6 || cms[2].ID != r1.GetID() || cms[3].Body != "Fixed." || cms[4].Side != "LEFT" || cms[4].StartLine != 1 || cms[5].Line != 0 {
		t.Errorf("after replies: %+v", cms)
	}

	// Editing: the App's own comments only.
	edited, _, err := gh.PullRequests.EditComment(ctx, "acme", "widgets", r1.GetID(), &github.PullRequestComment{Body: github.String("Because of b(), really.")})
	if err != nil || edited.GetBody() != "Because of b(), really." {
		t.Fatalf("edit: %v %v", edited, err)
	}
	_, _, err = gh.PullRequests.EditComment(ctx, "acme", "widgets", root, &github.PullRequestComment{Body: github.String("hijacked")})
	wantStatus(t, err, http.StatusForbidden)
	_, _, err = gh.PullRequests.EditComment(ctx, "acme", "widgets", r1.GetID(), &github.PullRequestComment{Body: github.String("")})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = gh.PullRequests.EditComment(ctx, "acme", "widgets", 999999, &github.PullRequestComment{Body: github.String("x")})
	wantStatus(t, err, http.StatusNotFound)
	if cms := s.ReviewComments("acme", "widgets", 3); cms[0].Body != "/inspect why?" || cms[2].Body != "Because of b(), really." {
		t.Errorf("after edits: %+v", cms)
	}

	// Paginated, in creation order.
	page1, resp, err := gh.PullRequests.ListComments(ctx, "acme", "widgets", 3, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 4}})
	if err != nil || len(page1) != 4 || resp.NextPage != 2 || page1[3].GetBody() != "Fixed." {
		t.Errorf("page 1: %d next %d %v", len(page1), resp.NextPage, err)
	}
	desc, _, err := gh.PullRequests.ListComments(ctx, "acme", "widgets", 3, &github.PullRequestListCommentsOptions{Sort: "created", Direction: "desc"})
	if err != nil || len(desc) != 6 || desc[5].GetID() != root {
		t.Errorf("desc: %v %v", desc, err)
	}

	// Reactions.
	re, resp, err := gh.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "widgets", root, "eyes")
	if err != nil || resp.StatusCode != http.StatusCreated || re.GetUser().GetLogin() != "inspect-app[bot]" {
		t.Fatalf("react: %v %v %v", re, resp, err)
	}
	again, resp, err := gh.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "widgets", root, "eyes")
	if err != nil || resp.StatusCode != http.StatusOK || again.GetID() != re.GetID() {
		t.Errorf("react again: %v %v %v", again, resp, err)
	}
	_, _, err = gh.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "widgets", root, "thumbsup")
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = gh.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "widgets", 999999, "eyes")
	wantStatus(t, err, http.StatusNotFound)
	rs, _, err := gh.Reactions.ListPullRequestCommentReactions(ctx, "acme", "widgets", root, nil)
	if err != nil || len(rs) != 1 || rs[0].GetContent() != "eyes" {
		t.Errorf("reactions = %v, %v", rs, err)
	}
	if got := s.ReviewCommentReactions("acme", "widgets", root); len(got) != 1 || got[0].Content != "eyes" {
		t.Errorf("ReviewCommentReactions = %+v", got)
	}
	if c, _, err := gh.PullRequests.GetComment(ctx, "acme", "widgets", root); err != nil || c.GetReactions().GetTotalCount() != 1 {
		t.Errorf("reaction summary = %+v, %v", c.GetReactions(), err)
	}
	// Review comments are not issue comments.
	_, _, err = gh.Issues.GetComment(ctx, "acme", "widgets", root)
	wantStatus(t, err, http.StatusNotFound)

	// Deleting: the App's own only.
	if resp, err := gh.PullRequests.DeleteComment(ctx, "acme", "widgets", r1.GetID()); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v %v", resp, err)
	}
	_, err = gh.PullRequests.DeleteComment(ctx, "acme", "widgets", root)
	wantStatus(t, err, http.StatusForbidden)
	if cms := s.ReviewComments("acme", "widgets", 3); len(cms) != 5 {
		t.Errorf("after delete: %d comments", len(cms))
	}

	// Locked conversations refuse new comments.
	s.AddPull("acme", "widgets", Pull{Number: 4, HeadRef: "other", Locked: true})
	_, _, err = gh.PullRequests.CreateCommentInReplyTo(ctx, "acme", "widgets", 4, "x", elsewhere)
	wantStatus(t, err, http.StatusForbidden)

	// Permissions: pull requests read to read, write to write.
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{PullRequests: github.String("read")}})
	if _, _, err := ro.PullRequests.ListComments(ctx, "acme", "widgets", 3, nil); err != nil {
		t.Errorf("read-only list: %v", err)
	}
	_, _, err = ro.PullRequests.CreateCommentInReplyTo(ctx, "acme", "widgets", 3, "x", root)
	wantStatus(t, err, http.StatusForbidden)
	_, _, err = ro.Reactions.CreatePullRequestCommentReaction(ctx, "acme", "widgets", root, "eyes")
	wantStatus(t, err, http.StatusForbidden)
	issuesOnly := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Issues: github.String("write")}})
	_, _, err = issuesOnly.PullRequests.GetComment(ctx, "acme", "widgets", root)
	wantStatus(t, err, http.StatusForbidden)

	// The pull request routes that share the pattern still work.
	if _, _, err := gh.PullRequests.ListReviewers(ctx, "acme", "widgets", 3, nil); err != nil {
		t.Errorf("requested reviewers: %v", err)
	}
	if _, _, err := gh.PullRequests.Get(ctx, "acme", "widgets", 3); err != nil {
		t.Errorf("get pull: %v", err)
	}
}
