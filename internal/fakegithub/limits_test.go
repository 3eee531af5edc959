package fakegithub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// TestCheckRunOutputLimits: summary and text up to 65535 characters, an
// empty summary, and GitHub's words for what is over.
func TestCheckRunOutputLimits(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	out := func(summary, text string) *github.CheckRunOutput {
		return &github.CheckRunOutput{Title: github.String("t"), Summary: github.String(summary), Text: github.String(text)}
	}
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: "abc",
		Output: out(strings.Repeat("é", 65535), strings.Repeat("é", 65535))})
	if err != nil {
		t.Fatalf("65535 characters each: %v", err)
	}
	// An empty summary is accepted, as GitHub's own example sends it; an
	// update's output without text clears the text (it replaces the output).
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "x",
		Output: &github.CheckRunOutput{Summary: github.String("")}}); err != nil {
		t.Fatalf("empty summary: %v", err)
	}
	if run := s.CheckRuns("acme", "widgets")[0]; run.Summary != "" || run.Text != "" || run.Title != "t" {
		t.Errorf("after the update: title %q, summary of %d, text of %d; want the title kept and both cleared", run.Title, len(run.Summary), len(run.Text))
	}
	for field, o := range map[string]*github.CheckRunOutput{
		"output.summary": out(strings.Repeat("a", 65536), ""),
		"output.text":    out("s", strings.Repeat("a", 65536)),
	} {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "x", Output: o})
		er := wantStatus(t, err, http.StatusUnprocessableEntity)
		if len(er.Errors) != 1 || er.Errors[0].Field != field || er.Errors[0].Message != "Only 65535 characters are allowed; 65536 were supplied." {
			t.Errorf("%s: errors %+v", field, er.Errors)
		}
	}
}

// TestAnnotationLimits: 50 annotations to a request, titles of 255
// characters, messages and raw details of 64 KB.
func TestAnnotationLimits(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	ann := func(title, message, raw string) *github.CheckRunAnnotation {
		return &github.CheckRunAnnotation{Path: github.String("a.go"), StartLine: github.Int(1), EndLine: github.Int(1),
			AnnotationLevel: github.String("failure"), Title: github.String(title), Message: github.String(message), RawDetails: github.String(raw)}
	}
	annotate := func(anns ...*github.CheckRunAnnotation) error {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "x",
			Output: &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s"), Annotations: anns}})
		return err
	}
	fifty := make([]*github.CheckRunAnnotation, 50)
	for i := range fifty {
		fifty[i] = ann(strings.Repeat("T", 255), strings.Repeat("m", 64<<10-1), strings.Repeat("r", 64<<10-1))
	}
	if err := annotate(fifty...); err != nil {
		t.Fatalf("50 annotations at the limits: %v", err)
	}
	er := wantStatus(t, annotate(append(fifty, ann("t", "m", ""))...), http.StatusUnprocessableEntity)
	if len(er.Errors) != 1 || er.Errors[0].Message != "No more than 50 items are allowed; 51 were supplied." {
		t.Errorf("51 annotations: %+v", er.Errors)
	}
	for field, a := range map[string]*github.CheckRunAnnotation{
		"output.annotations[0].title":       ann(strings.Repeat("T", 256), "m", ""),
		"output.annotations[0].message":     ann("t", strings.Repeat("m", 64<<10), ""),
		"output.annotations[0].raw_details": ann("t", "m", strings.Repeat("r", 64<<10)),
	} {
		er := wantStatus(t, annotate(a), http.StatusUnprocessableEntity)
		if len(er.Errors) != 1 || er.Errors[0].Field != field {
			t.Errorf("%s: errors %+v", field, er.Errors)
		}
	}
	if got := len(s.CheckRuns("acme", "widgets")[0].Annotations); got != 50 {
		t.Errorf("%d annotations kept, want the 50 accepted ones", got)
	}
}

// TestDraftsByVisibilityAndPlan: GitHub's table of where drafts exist.
func TestDraftsByVisibilityAndPlan(t *testing.T) {
	for _, tc := range []struct {
		private bool
		plan    string
		drafts  bool
	}{
		{false, PlanFree, true}, {false, PlanPro, true}, {false, PlanTeam, true}, {false, PlanEnterprise, true},
		{true, PlanFree, false}, {true, PlanPro, false}, {true, PlanTeam, true}, {true, PlanEnterprise, true},
	} {
		s := newServer(t)
		s.AddRepo(Repo{ID: widgetsID, Owner: "acme", Name: "widgets", InstallationID: 1, Private: tc.private, OwnerPlan: tc.plan})
		s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
		s.CommitFiles("acme", "widgets", "feature", map[string]string{"fix.go": "package fix\n"}, "fix")
		gh := appInstallClient(t, s, 1)
		open := func(draft bool) error {
			_, _, err := gh.PullRequests.Create(context.Background(), "acme", "widgets", &github.NewPullRequest{
				Title: github.String("Fix"), Head: github.String("feature"), Base: github.String("main"), Draft: github.Bool(draft)})
			return err
		}
		err := open(true)
		if tc.drafts {
			if err != nil {
				t.Errorf("private=%v %s: a draft was refused: %v", tc.private, tc.plan, err)
			}
			continue
		}
		er := wantStatus(t, err, http.StatusUnprocessableEntity)
		if er.Message != "Draft pull requests are not supported in this repository." {
			t.Errorf("private=%v %s: message %q", tc.private, tc.plan, er.Message)
		}
		if err := open(false); err != nil {
			t.Errorf("private=%v %s: a ready pull request was refused after the draft: %v", tc.private, tc.plan, err)
		}
	}
}

// TestPullRequestTextLimits: titles of 256 characters, bodies of 65536.
func TestPullRequestTextLimits(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	s.CommitFiles("acme", "widgets", "feature", map[string]string{"fix.go": "package fix\n"}, "fix")
	gh := appInstallClient(t, s, 1)
	create := func(title, body string) (*github.PullRequest, error) {
		pr, _, err := gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{
			Title: github.String(title), Head: github.String("feature"), Base: github.String("main"), Body: github.String(body)})
		return pr, err
	}
	for field, texts := range map[string][2]string{"title": {strings.Repeat("t", 257), "b"}, "body": {"t", strings.Repeat("b", 65537)}} {
		_, err := create(texts[0], texts[1])
		if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) != 1 || er.Errors[0].Field != field {
			t.Errorf("%s too long: %+v", field, er.Errors)
		}
	}
	pr, err := create(strings.Repeat("t", 256), strings.Repeat("b", 65536))
	if err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	_, _, err = gh.PullRequests.Edit(ctx, "acme", "widgets", pr.GetNumber(), &github.PullRequest{Title: github.String(strings.Repeat("t", 257))})
	wantStatus(t, err, http.StatusUnprocessableEntity)
}

// TestCreateLabel: made once, with its color and description; a second of
// the same name in any case is 422 already_exists.
func TestCreateLabel(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	if _, _, err := gh.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("inspect:unverified"), Color: github.String("d93f0b"), Description: github.String("Not verified")}); err != nil {
		t.Fatal(err)
	}
	if l, ok := s.Label("acme", "widgets", "INSPECT:unverified"); !ok || l.Color != "d93f0b" || l.Description != "Not verified" {
		t.Errorf("label = %+v, %v", l, ok)
	}
	_, _, err := gh.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("Inspect:Unverified")})
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) != 1 || er.Errors[0].Code != "already_exists" {
		t.Errorf("second label: %+v", er.Errors)
	}
	_, _, err = gh.Issues.CreateLabel(ctx, "acme", "widgets", &github.Label{Name: github.String("x"), Color: github.String("#fff")})
	wantStatus(t, err, http.StatusUnprocessableEntity)
}

// TestButtonsShowOnlyOnCompletedRuns: actions sent to a queued or running
// run are accepted but counted as never seen, and a press needs a
// completed run offering that button.
func TestButtonsShowOnlyOnCompletedRuns(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	retry := []*github.CheckRunAction{{Label: "Retry", Description: "Run again", Identifier: "retry"}}
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: "abc", Actions: retry})
	if err != nil {
		t.Fatal(err)
	}
	run := func() CheckRun { return s.CheckRuns("acme", "widgets")[0] }
	if run().HiddenActionWrites != 1 {
		t.Errorf("a queued run with actions: %d hidden writes, want 1", run().HiddenActionWrites)
	}
	if err := s.PressButton("acme", "widgets", cr.GetID(), "retry"); err == nil {
		t.Error("a button on a queued run was pressed")
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "x", Conclusion: github.String("success"), Actions: retry}); err != nil {
		t.Fatal(err)
	}
	if run().HiddenActionWrites != 1 {
		t.Errorf("actions on completion counted as hidden: %d", run().HiddenActionWrites)
	}
	if err := s.PressButton("acme", "widgets", cr.GetID(), "retry"); err != nil {
		t.Errorf("Retry on a completed run: %v", err)
	}
	if err := s.PressButton("acme", "widgets", cr.GetID(), "cancel"); err == nil {
		t.Error("a button the run does not offer was pressed")
	}
}

// TestRemoveLabelWithASlash: GitHub's route takes the rest of the path as
// the label's name, unescaped once, so "team/inspect" and "team%2Finspect"
// both name it, and a double escape names another label (404).
func TestRemoveLabelWithASlash(t *testing.T) {
	s := newServer(t)
	gh := appInstallClient(t, s, 1)
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "t", State: "open", User: "alice"})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"team%252Finspect", http.StatusNotFound},
		{"team%2Finspect", http.StatusOK},
		{"team/inspect", http.StatusOK},
	} {
		s.SetIssueLabels("acme", "widgets", 1, "team/inspect", "other")
		req, err := gh.NewRequest("DELETE", "repos/acme/widgets/issues/1/labels/"+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := gh.Do(context.Background(), req, nil)
		if resp == nil || resp.StatusCode != tc.want {
			t.Errorf("DELETE .../labels/%s: %v, want %d", tc.path, err, tc.want)
			continue
		}
		left := s.IssueLabels("acme", "widgets", 1)
		if tc.want == http.StatusOK && (len(left) != 1 || left[0] != "other") {
			t.Errorf("DELETE .../labels/%s left %v", tc.path, left)
		}
	}
}

// TestTreeDeletionOfAMissingPathFailsTheTree: "returns an error if you
// try to delete a file that does not exist", failing the whole request;
// deleting the last file of a directory takes the directory too.
func TestTreeDeletionOfAMissingPathFailsTheTree(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	head := s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n", "docs/only.md": "x\n", "docs/more/b.md": "b\n"}, "seed")
	gh := appInstallClient(t, s, 1)
	commit, _, err := gh.Git.GetCommit(ctx, "acme", "widgets", head)
	if err != nil {
		t.Fatal(err)
	}
	base := commit.GetTree().GetSHA()
	del := func(p string) *github.TreeEntry {
		return &github.TreeEntry{Path: github.String(p), Mode: github.String("100644"), Type: github.String("blob")}
	}
	for _, missing := range []string{"nope.txt", "nowhere/x.md", "a.txt/x", "docs/more"} {
		_, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", base, []*github.TreeEntry{del("a.txt"), del(missing)})
		if missing == "docs/more" {
			// A directory is a path that exists: deleting it is fine.
			if err != nil {
				t.Errorf("deleting a directory: %v", err)
			}
			continue
		}
		if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "GitRPC::BadObjectState" {
			t.Errorf("deleting %s: message %q", missing, er.Message)
		}
	}
	tree, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", base, []*github.TreeEntry{del("a.txt"), del("docs/only.md"), del("docs/more/b.md")})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Entries) != 0 {
		t.Errorf("tree = %+v, want empty: the emptied directories go", tree.Entries)
	}
}

// TestContentsFollowsASymlinkToAFileAndRefusesLargeFiles: a symlink to a
// normal file answers that file; any other symlink is described. A file
// over 1 MB is refused in the default media type, and served raw or, as
// an object, without its content.
func TestContentsFollowsASymlinkToAFileAndRefusesLargeFiles(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20+1)
	head := s.CommitFiles("acme", "widgets", "main", map[string]string{"docs/guide.md": "guide\n", "big.txt": big}, "seed")
	gh := appInstallClient(t, s, 1)
	base, _, err := gh.Git.GetCommit(ctx, "acme", "widgets", head)
	if err != nil {
		t.Fatal(err)
	}
	link := func(p, target string) *github.TreeEntry {
		return &github.TreeEntry{Path: github.String(p), Mode: github.String("120000"), Type: github.String("blob"), Content: github.String(target)}
	}
	tree, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", base.GetTree().GetSHA(), []*github.TreeEntry{
		link("AGENTS.md", "docs/guide.md"), link("dirlink", "docs"), link("outside", "../etc/passwd"), link("docs/up.md", "../docs/guide.md"),
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{Message: github.String("links"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(head)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("refs/heads/main"), Object: &github.GitObject{SHA: commit.SHA}}, false); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"AGENTS.md": "file docs/guide.md", "docs/up.md": "file docs/guide.md", "dirlink": "symlink dirlink", "outside": "symlink outside"} {
		f, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", p, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := f.GetType() + " " + f.GetPath(); got != want {
			t.Errorf("%s: %s, want %s", p, got, want)
		}
		if want == "file docs/guide.md" {
			if text, _ := f.GetContent(); text != "guide\n" {
				t.Errorf("%s: content %q", p, text)
			}
		}
	}

	_, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "big.txt", nil)
	if er := wantStatus(t, err, http.StatusForbidden); len(er.Errors) != 1 || er.Errors[0].Code != "too_large" {
		t.Errorf("a large file in the default media type: %+v", er.Errors)
	}
	for accept, want := range map[string]int{"application/vnd.github.raw+json": len(big), "application/vnd.github.object+json": 0} {
		req, _ := gh.NewRequest("GET", "repos/acme/widgets/contents/big.txt", nil)
		req.Header.Set("Accept", accept)
		var buf strings.Builder
		resp, err := gh.Do(ctx, req, &buf)
		if err != nil {
			t.Fatalf("%s: %v", accept, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", accept, resp.StatusCode)
		}
		if want > 0 && buf.Len() != want {
			t.Errorf("%s: %d bytes, want %d", accept, buf.Len(), want)
		}
		if want == 0 && !strings.Contains(buf.String(), `"encoding":"none"`) {
			t.Errorf("%s: %.200s", accept, buf.String())
		}
	}
}
