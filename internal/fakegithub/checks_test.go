package fakegithub

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestCheckRuns(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	s.AddPull("acme", "widgets", Pull{Number: 5, HeadSHA: sha, HeadRef: "feature"})

	cr, resp, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name:       "Inspect",
		HeadSHA:    sha,
		ExternalID: github.String("session-1"),
		DetailsURL: github.String("https://inspect.example/s/1"),
		Output:     &github.CheckRunOutput{Title: github.String("Working"), Summary: github.String("Started")},
	})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	if cr.GetStatus() != "queued" || cr.Conclusion != nil || cr.GetExternalID() != "session-1" || cr.GetApp().GetID() != 4242 {
		t.Errorf("created = %+v", cr)
	}
	if len(cr.PullRequests) != 1 || cr.PullRequests[0].GetNumber() != 5 {
		t.Errorf("pull_requests = %+v", cr.PullRequests)
	}

	// Completed needs a conclusion.
	_, _, err = gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "Inspect", Status: github.String("completed"),
	})
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) == 0 || er.Errors[0].Field != "conclusion" {
		t.Errorf("errors = %+v", er.Errors)
	}
	// A conclusion completes the run.
	up, resp, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name:       "Inspect",
		Conclusion: github.String("success"),
		Output:     &github.CheckRunOutput{Title: github.String("Done"), Summary: github.String("All good"), Text: github.String("details")},
	})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %v %v", resp, err)
	}
	if up.GetStatus() != "completed" || up.GetConclusion() != "success" || up.CompletedAt == nil || up.GetOutput().GetTitle() != "Done" {
		t.Errorf("updated = %+v", up)
	}
	got, _, err := gh.Checks.GetCheckRun(ctx, "acme", "widgets", cr.GetID())
	if err != nil || got.GetConclusion() != "success" {
		t.Errorf("get = %+v, %v", got, err)
	}
	runs := s.CheckRuns("acme", "widgets")
	want := CheckRun{ID: cr.GetID(), Name: "Inspect", HeadSHA: sha, Status: "completed", Conclusion: "success",
		ExternalID: "session-1", DetailsURL: "https://inspect.example/s/1", Title: "Done", Summary: "All good", Text: "details", Updates: 1,
		AppSlug: "inspect-app", AppID: 4242, SuiteID: cr.GetCheckSuite().GetID()}
	if len(runs) != 1 || want.SuiteID == 0 || !reflect.DeepEqual(runs[0], want) {
		t.Errorf("inspected = %+v, want %+v", runs, want)
	}

	// A re-run of the same name, and another check.
	rerun, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: sha, Status: github.String("in_progress")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "lint", HeadSHA: sha}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "lint", HeadSHA: "ffff"}); err != nil {
		t.Fatal(err)
	}

	list, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", sha, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.GetTotal() != 2 {
		t.Errorf("latest: total %d, runs %v", list.GetTotal(), list.CheckRuns)
	}
	list, _, err = gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", sha, &github.ListCheckRunsOptions{Filter: github.String("all")})
	if err != nil || list.GetTotal() != 3 {
		t.Errorf("all: %v, %v", list, err)
	}
	// By branch name and check name.
	list, _, err = gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", "feature", &github.ListCheckRunsOptions{CheckName: github.String("Inspect")})
	if err != nil || list.GetTotal() != 1 || list.CheckRuns[0].GetID() != rerun.GetID() {
		t.Errorf("by branch and name: %v, %v", list, err)
	}
	// Paginated.
	list, resp, err = gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", sha, &github.ListCheckRunsOptions{
		Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 2},
	})
	if err != nil || list.GetTotal() != 3 || len(list.CheckRuns) != 2 || resp.NextPage != 2 {
		t.Errorf("page 1: %v, next %d, %v", list, resp.NextPage, err)
	}
}

func TestCheckRunValidation(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	for name, opts := range map[string]github.CreateCheckRunOptions{
		"no head_sha":         {Name: "x"},
		"no name":             {HeadSHA: "abc"},
		"completed, no end":   {Name: "x", HeadSHA: "abc", Status: github.String("completed")},
		"status only actions": {Name: "x", HeadSHA: "abc", Status: github.String("waiting")},
		"stale":               {Name: "x", HeadSHA: "abc", Conclusion: github.String("stale")},
		"bad conclusion":      {Name: "x", HeadSHA: "abc", Conclusion: github.String("great")},
		"output no summary":   {Name: "x", HeadSHA: "abc", Output: &github.CheckRunOutput{Title: github.String("t")}},
		"summary too long": {Name: "x", HeadSHA: "abc", Output: &github.CheckRunOutput{
			Title: github.String("t"), Summary: github.String(strings.Repeat("a", 65536)),
		}},
	} {
		_, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", opts)
		if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) == 0 {
			t.Errorf("%s: no errors array", name)
		}
	}
	if got := s.CheckRuns("acme", "widgets"); len(got) != 0 {
		t.Errorf("refused creates left runs: %+v", got)
	}

	// go-github v62 always sends "name" on update; an empty one is refused.
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Status: github.String("in_progress")})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = gh.Checks.GetCheckRun(ctx, "acme", "widgets", 999999)
	wantStatus(t, err, http.StatusNotFound)
}

func TestCheckRunAnnotations(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	ann := func(i int, level string) *github.CheckRunAnnotation {
		return &github.CheckRunAnnotation{
			Path: github.String(fmt.Sprintf("pkg/f%d_test.go", i)), StartLine: github.Int(i + 1), EndLine: github.Int(i + 1),
			AnnotationLevel: github.String(level), Message: github.String(fmt.Sprintf("TestF%d failed", i)), Title: github.String("test failed"),
		}
	}
	output := func(anns ...*github.CheckRunAnnotation) *github.CheckRunOutput {
		return &github.CheckRunOutput{Title: github.String("Tests"), Summary: github.String("some failed"), Annotations: anns}
	}

	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "Inspect", HeadSHA: sha, Output: output(ann(0, "failure"), ann(1, "warning")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if cr.GetOutput().GetAnnotationsCount() != 2 {
		t.Errorf("annotations_count = %d", cr.GetOutput().GetAnnotationsCount())
	}
	// Updates add to them.
	up, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "Inspect", Conclusion: github.String("failure"), Output: output(ann(2, "notice")),
	})
	if err != nil || up.GetOutput().GetAnnotationsCount() != 3 {
		t.Fatalf("update: %v %v", up.GetOutput(), err)
	}

	// More than 50 in one request, or a bad one: 422, and nothing added.
	var many []*github.CheckRunAnnotation
	for i := range 51 {
		many = append(many, ann(i, "failure"))
	}
	for name, o := range map[string]*github.CheckRunOutput{
		"51 annotations": output(many...),
		"bad level":      output(ann(0, "error")),
		"no path":        output(&github.CheckRunAnnotation{StartLine: github.Int(1), EndLine: github.Int(1), AnnotationLevel: github.String("notice"), Message: github.String("m")}),
		"columns on two lines": output(&github.CheckRunAnnotation{Path: github.String("a"), StartLine: github.Int(1), EndLine: github.Int(2),
			StartColumn: github.Int(1), EndColumn: github.Int(3), AnnotationLevel: github.String("notice"), Message: github.String("m")}),
	} {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "Inspect", Output: o})
		if er := wantStatus(t, err, http.StatusUnprocessableEntity); len(er.Errors) == 0 {
			t.Errorf("%s: no errors array", name)
		}
	}
	// Exactly 50 is fine.
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "Inspect", Output: output(many[:50]...)}); err != nil {
		t.Fatal(err)
	}

	runs := s.CheckRuns("acme", "widgets")
	if len(runs) != 1 || len(runs[0].Annotations) != 53 {
		t.Fatalf("inspected %d runs, %d annotations", len(runs), len(runs[0].Annotations))
	}
	want := Annotation{Path: "pkg/f1_test.go", StartLine: 2, EndLine: 2, Level: "warning", Message: "TestF1 failed", Title: "test failed"}
	if runs[0].Annotations[1] != want {
		t.Errorf("annotation = %+v, want %+v", runs[0].Annotations[1], want)
	}

	list, resp, err := gh.Checks.ListCheckRunAnnotations(ctx, "acme", "widgets", cr.GetID(), &github.ListOptions{PerPage: 50})
	if err != nil || len(list) != 50 || resp.NextPage != 2 {
		t.Fatalf("list: %d, next %d, %v", len(list), resp.NextPage, err)
	}
	if a := list[2]; a.GetPath() != "pkg/f2_test.go" || a.GetAnnotationLevel() != "notice" || a.GetStartLine() != 3 || a.GetTitle() != "test failed" {
		t.Errorf("listed = %+v", a)
	}
	// Annotations need checks permission.
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	_, _, err = ro.Checks.ListCheckRunAnnotations(ctx, "acme", "widgets", cr.GetID(), nil)
	wantStatus(t, err, http.StatusForbidden)
}
