package fakegithub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestForeignCheckRunsAndSuites(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const other = "89abcdef0123456789abcdef0123456789abcdef"

	ci := s.AddForeignCheckRun("acme", "widgets", CheckRun{
		AppSlug: "buildkite", AppID: 77, Name: "ci/test", HeadSHA: sha, Conclusion: "failure",
		Title: "2 failed", Summary: "TestA, TestB", DetailsURL: "https://buildkite.example/1",
	}, Annotation{Path: "a_test.go", StartLine: 3, EndLine: 3, Level: "failure", Message: "TestA failed"})
	if ci.ID == 0 || ci.SuiteID == 0 || ci.Status != "completed" || ci.Conclusion != "failure" || len(ci.Annotations) != 1 {
		t.Fatalf("seeded = %+v", ci)
	}
	lint := s.AddForeignCheckRun("acme", "widgets", CheckRun{AppSlug: "buildkite", AppID: 77, Name: "ci/lint", HeadSHA: sha})
	actionsJob := s.AddForeignCheckRun("acme", "widgets", CheckRun{AppSlug: "github-actions", AppID: 15368, Name: "build", HeadSHA: sha, Status: "in_progress"})
	elsewhere := s.AddForeignCheckRun("acme", "widgets", CheckRun{AppSlug: "buildkite", AppID: 77, Name: "ci/test", HeadSHA: other})
	if lint.Conclusion != "success" || lint.SuiteID != ci.SuiteID {
		t.Errorf("one suite per app and commit: %+v vs %+v", lint, ci)
	}
	if actionsJob.SuiteID == ci.SuiteID || elsewhere.SuiteID == ci.SuiteID || actionsJob.Conclusion != "" {
		t.Errorf("suites: actions %d, other commit %d, ci %d", actionsJob.SuiteID, elsewhere.SuiteID, ci.SuiteID)
	}
	ours, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: sha})
	if err != nil {
		t.Fatal(err)
	}
	if ours.GetApp().GetSlug() != "inspect-app" || ours.GetCheckSuite().GetID() == ci.SuiteID || ours.GetCheckSuite().GetID() == 0 {
		t.Errorf("ours: app %q suite %d", ours.GetApp().GetSlug(), ours.GetCheckSuite().GetID())
	}

	// A foreign run as GitHub shows it.
	got, _, err := gh.Checks.GetCheckRun(ctx, "acme", "widgets", ci.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetApp().GetSlug() != "buildkite" || got.GetApp().GetID() != 77 || got.GetCheckSuite().GetID() != ci.SuiteID ||
		got.GetConclusion() != "failure" || got.GetOutput().GetTitle() != "2 failed" || got.GetOutput().GetAnnotationsCount() != 1 ||
		got.GetDetailsURL() != "https://buildkite.example/1" {
		t.Errorf("foreign run = %+v", got)
	}
	anns, _, err := gh.Checks.ListCheckRunAnnotations(ctx, "acme", "widgets", ci.ID, nil)
	if err != nil || len(anns) != 1 || anns[0].GetMessage() != "TestA failed" {
		t.Errorf("annotations = %v, %v", anns, err)
	}

	// Listing for the ref has every App's runs, and filters.
	names := func(res *github.ListCheckRunsResults) []string {
		var out []string
		for _, cr := range res.CheckRuns {
			out = append(out, cr.GetApp().GetSlug()+":"+cr.GetName())
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts *github.ListCheckRunsOptions
		want []string
	}{
		{"all apps", nil, []string{"inspect-app:Inspect", "github-actions:build", "buildkite:ci/lint", "buildkite:ci/test"}},
		{"completed", &github.ListCheckRunsOptions{Status: github.String("completed")}, []string{"buildkite:ci/lint", "buildkite:ci/test"}},
		{"by name", &github.ListCheckRunsOptions{CheckName: github.String("ci/test")}, []string{"buildkite:ci/test"}},
		{"by app", &github.ListCheckRunsOptions{AppID: github.Int64(15368)}, []string{"github-actions:build"}},
	} {
		res, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", sha, tc.opts)
		if err != nil || res.GetTotal() != len(tc.want) || !reflect.DeepEqual(names(res), tc.want) {
			t.Errorf("%s: %v (total %d), want %v (%v)", tc.name, names(res), res.GetTotal(), tc.want, err)
		}
	}
	_, _, err = gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", sha, &github.ListCheckRunsOptions{Status: github.String("done")})
	wantStatus(t, err, http.StatusUnprocessableEntity)

	// A re-run in the suite: latest keeps the newest of each name.
	rerun := s.AddForeignCheckRun("acme", "widgets", CheckRun{AppSlug: "buildkite", AppID: 77, Name: "ci/test", HeadSHA: sha})
	suite, resp, err := gh.Checks.ListCheckRunsCheckSuite(ctx, "acme", "widgets", ci.SuiteID, &github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: 1}})
	if err != nil || suite.GetTotal() != 2 || len(suite.CheckRuns) != 1 || suite.CheckRuns[0].GetID() != rerun.ID || resp.NextPage != 2 {
		t.Errorf("suite, latest: %v next %d %v", names(suite), resp.NextPage, err)
	}
	suite, _, err = gh.Checks.ListCheckRunsCheckSuite(ctx, "acme", "widgets", ci.SuiteID, &github.ListCheckRunsOptions{Filter: github.String("all")})
	if err != nil || suite.GetTotal() != 3 {
		t.Errorf("suite, all: %v %v", names(suite), err)
	}
	suite, _, err = gh.Checks.ListCheckRunsCheckSuite(ctx, "acme", "widgets", ci.SuiteID, &github.ListCheckRunsOptions{
		Filter: github.String("all"), CheckName: github.String("ci/lint"), Status: github.String("completed"),
	})
	if err != nil || suite.GetTotal() != 1 || suite.CheckRuns[0].GetID() != lint.ID {
		t.Errorf("suite, by name: %v %v", names(suite), err)
	}
	suite, _, err = gh.Checks.ListCheckRunsCheckSuite(ctx, "acme", "widgets", ours.GetCheckSuite().GetID(), nil)
	if err != nil || suite.GetTotal() != 1 || suite.CheckRuns[0].GetID() != ours.GetID() {
		t.Errorf("our suite: %v %v", names(suite), err)
	}
	_, _, err = gh.Checks.ListCheckRunsCheckSuite(ctx, "acme", "widgets", 999999, nil)
	wantStatus(t, err, http.StatusNotFound)

	// The App may not update another App's run.
	_, _, err = gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", ci.ID, github.UpdateCheckRunOptions{Name: "ci/test", Conclusion: github.String("success")})
	if er := wantStatus(t, err, http.StatusForbidden); !strings.Contains(er.Message, "can only be modified by the GitHub App that created it") {
		t.Errorf("message = %q", er.Message)
	}

	// Inspection has them all, with their Apps.
	runs := s.CheckRuns("acme", "widgets")
	if len(runs) != 6 || runs[0].AppSlug != "buildkite" || runs[0].Conclusion != "failure" || runs[4].AppID != 4242 || runs[4].SuiteID != ours.GetCheckSuite().GetID() {
		t.Errorf("CheckRuns = %+v", runs)
	}
}

func TestCheckRunActions(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const sha = "0123456789abcdef0123456789abcdef01234567"
	fix := &github.CheckRunAction{Label: "Fix it", Description: "Let Inspect fix the failure", Identifier: "fix"}
	retry := &github.CheckRunAction{Label: "Retry", Description: "Run again", Identifier: "retry"}

	cr, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "Inspect", HeadSHA: sha, Actions: []*github.CheckRunAction{fix, retry},
	})
	if err != nil {
		t.Fatal(err)
	}
	actions := func() []CheckAction { return s.CheckRuns("acme", "widgets")[0].Actions }
	want := []CheckAction{{"Fix it", "Let Inspect fix the failure", "fix"}, {"Retry", "Run again", "retry"}}
	if !reflect.DeepEqual(actions(), want) {
		t.Errorf("after create: %+v", actions())
	}
	// An update without actions keeps them; one with actions replaces them.
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "Inspect", Status: github.String("in_progress")}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(actions(), want) {
		t.Errorf("after update without actions: %+v", actions())
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{
		Name: "Inspect", Conclusion: github.String("failure"), Actions: []*github.CheckRunAction{retry},
	}); err != nil {
		t.Fatal(err)
	}
	if want := []CheckAction{{"Retry", "Run again", "retry"}}; !reflect.DeepEqual(actions(), want) {
		t.Errorf("after replacing: %+v", actions())
	}
	// GitHub does not show them in the run.
	var raw map[string]json.RawMessage
	req, _ := gh.NewRequest("GET", fmt.Sprintf("repos/acme/widgets/check-runs/%d", cr.GetID()), nil)
	if _, err := gh.Do(ctx, req, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["actions"]; ok {
		t.Errorf("the run's JSON has actions: %s", raw["actions"])
	}

	// Refused, and nothing changes: more than three, fields missing or too long.
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name    string
		actions []*github.CheckRunAction
		field   string
	}{
		{"four", []*github.CheckRunAction{fix, retry, fix, retry}, "actions"},
		{"label 21", []*github.CheckRunAction{{Label: long(21), Description: "d", Identifier: "i"}}, "actions[0].label"},
		{"description 41", []*github.CheckRunAction{{Label: "l", Description: long(41), Identifier: "i"}}, "actions[0].description"},
		{"identifier 21", []*github.CheckRunAction{{Label: "l", Description: "d", Identifier: long(21)}}, "actions[0].identifier"},
		{"no label", []*github.CheckRunAction{retry, {Description: "d", Identifier: "i"}}, "actions[1].label"},
	} {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "Inspect", Actions: tc.actions})
		er := wantStatus(t, err, http.StatusUnprocessableEntity)
		if len(er.Errors) == 0 || er.Errors[0].Field != tc.field {
			t.Errorf("%s: errors %+v, want field %s", tc.name, er.Errors, tc.field)
		}
		_, _, err = gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "x", HeadSHA: sha, Actions: tc.actions})
		wantStatus(t, err, http.StatusUnprocessableEntity)
	}
	// Exactly at the limits is fine.
	edge := []*github.CheckRunAction{{Label: long(20), Description: long(40), Identifier: long(20)}, fix, retry}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", cr.GetID(), github.UpdateCheckRunOptions{Name: "Inspect", Actions: edge}); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	if got := actions(); len(got) != 3 || got[0].Label != long(20) {
		t.Errorf("at the limits: %+v", got)
	}
	// An explicit empty list removes them.
	tok := mintRawToken(t, s, nil)
	if status, body := rawDo(t, s, tok, "PATCH", fmt.Sprintf("repos/acme/widgets/check-runs/%d", cr.GetID()), `{"name":"Inspect","actions":[]}`); status != http.StatusOK {
		t.Fatalf("clearing: %d %s", status, body)
	}
	if got := actions(); len(got) != 0 {
		t.Errorf("after clearing: %+v", got)
	}
	if runs := s.CheckRuns("acme", "widgets"); len(runs) != 1 {
		t.Errorf("refused creates made runs: %d", len(runs))
	}
}
