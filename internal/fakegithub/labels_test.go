package fakegithub

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// rawDo sends a request with an installation token and a literal body,
// for bodies go-github would not send, and answers the status and body.
func rawDo(t *testing.T, s *Server, tok, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.APIURL()+strings.TrimPrefix(path, "/"), rd)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "token "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func labelNames(ls []*github.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

func TestIssueLabels(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "bug", Labels: []string{"bug"}})
	s.AddPull("acme", "widgets", Pull{Number: 2, HeadRef: "fix", Labels: []string{"needs-review"}})

	// Seeded labels show on the issue, the pull request, and both as issues.
	is, _, err := gh.Issues.Get(ctx, "acme", "widgets", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(is.Labels) != 1 || is.Labels[0].GetName() != "bug" || is.Labels[0].GetColor() != "ededed" ||
		is.Labels[0].GetDefault() || is.Labels[0].GetID() == 0 {
		t.Errorf("issue labels = %+v", is.Labels)
	}
	pr, _, err := gh.PullRequests.Get(ctx, "acme", "widgets", 2)
	if err != nil || !reflect.DeepEqual(labelNames(pr.Labels), []string{"needs-review"}) {
		t.Errorf("pull labels = %v, %v", labelNames(pr.Labels), err)
	}

	// Adding: names compare case-insensitively, a label keeps its first
	// spelling, and unknown labels are created.
	got, resp, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 1, []string{"Bug", "triage", "Triage", "needs review"})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("add: %v %v", resp, err)
	}
	if want := []string{"bug", "triage", "needs review"}; !reflect.DeepEqual(labelNames(got), want) {
		t.Errorf("after add = %v, want %v", labelNames(got), want)
	}
	if want := []string{"bug", "triage", "needs review"}; !reflect.DeepEqual(s.IssueLabels("acme", "widgets", 1), want) {
		t.Errorf("IssueLabels = %v", s.IssueLabels("acme", "widgets", 1))
	}
	// A pull request's labels are its issue's.
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 2, []string{"TRIAGE"}); err != nil {
		t.Fatal(err)
	}
	prs, _, err := gh.PullRequests.List(ctx, "acme", "widgets", nil)
	if err != nil || len(prs) != 1 || !reflect.DeepEqual(labelNames(prs[0].Labels), []string{"needs-review", "triage"}) {
		t.Errorf("listed pull labels = %v, %v", prs, err)
	}

	// Listing, paginated.
	list, resp, err := gh.Issues.ListLabelsByIssue(ctx, "acme", "widgets", 1, &github.ListOptions{PerPage: 2})
	if err != nil || len(list) != 2 || resp.NextPage != 2 {
		t.Errorf("list page 1: %v next %d %v", labelNames(list), resp.NextPage, err)
	}
	// Listing issues by label; pull requests are issues too.
	issues, _, err := gh.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{Labels: []string{"TRIAGE"}, Direction: "asc"})
	if err != nil || len(issues) != 2 || issues[0].GetNumber() != 1 || !issues[1].IsPullRequest() {
		t.Errorf("issues labelled triage = %v, %v", issues, err)
	}
	issues, _, err = gh.Issues.ListByRepo(ctx, "acme", "widgets", &github.IssueListByRepoOptions{Labels: []string{"triage", "bug"}})
	if err != nil || len(issues) != 1 || issues[0].GetNumber() != 1 {
		t.Errorf("issues labelled triage and bug = %v, %v", issues, err)
	}
	repoLabels, _, err := gh.Issues.ListLabels(ctx, "acme", "widgets", nil)
	if want := []string{"bug", "needs review", "needs-review", "triage"}; err != nil || !reflect.DeepEqual(labelNames(repoLabels), want) {
		t.Errorf("repo labels = %v, %v", labelNames(repoLabels), err)
	}

	// Removing one answers those left; removing one the issue lacks is a 404.
	req, _ := gh.NewRequest("DELETE", "repos/acme/widgets/issues/1/labels/TRIAGE", nil)
	var left []*github.Label
	resp, err = gh.Do(ctx, req, &left)
	if err != nil || resp.StatusCode != http.StatusOK || !reflect.DeepEqual(labelNames(left), []string{"bug", "needs review"}) {
		t.Fatalf("remove: %v %v %v", labelNames(left), resp, err)
	}
	_, err = gh.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", 1, "triage")
	if er := wantStatus(t, err, http.StatusNotFound); er.Message != "Label does not exist" {
		t.Errorf("message = %q", er.Message)
	}
	// A name with a space, escaped.
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", 1, "needs%20review"); err != nil {
		t.Fatal(err)
	}

	// Setting replaces; removing all empties.
	set, _, err := gh.Issues.ReplaceLabelsForIssue(ctx, "acme", "widgets", 1, []string{"wontfix", "bug"})
	if err != nil || !reflect.DeepEqual(labelNames(set), []string{"wontfix", "bug"}) {
		t.Errorf("set = %v, %v", labelNames(set), err)
	}
	if resp, err := gh.Issues.RemoveLabelsForIssue(ctx, "acme", "widgets", 1); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("remove all: %v %v", resp, err)
	}
	if got := s.IssueLabels("acme", "widgets", 1); len(got) != 0 {
		t.Errorf("after remove all: %v", got)
	}

	// The seeding helper, and re-seeding, which replaces the labels.
	s.SetIssueLabels("acme", "widgets", 1, "p1", "P1", "area/api")
	if got := s.IssueLabels("acme", "widgets", 1); !reflect.DeepEqual(got, []string{"p1", "area/api"}) {
		t.Errorf("SetIssueLabels: %v", got)
	}
	// A name with a slash reaches the three-segment DELETE too.
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", 1, "area/api"); err != nil {
		t.Errorf("remove area/api: %v", err)
	}
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "bug"})
	if got := s.IssueLabels("acme", "widgets", 1); got != nil {
		t.Errorf("after re-seeding: %v", got)
	}

	// Unknown issues.
	_, _, err = gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 99, []string{"x"})
	wantStatus(t, err, http.StatusNotFound)
	_, _, err = gh.Issues.ListLabelsByIssue(ctx, "acme", "widgets", 99, nil)
	wantStatus(t, err, http.StatusNotFound)
	_, err = gh.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", 99, "x")
	wantStatus(t, err, http.StatusNotFound)

	// Comments still work on the shared pattern.
	if _, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("hi")}); err != nil {
		t.Fatal(err)
	}
	if cs, _, err := gh.Issues.ListComments(ctx, "acme", "widgets", 1, nil); err != nil || len(cs) != 1 {
		t.Errorf("comments = %v, %v", cs, err)
	}
}

func TestIssueLabelBodies(t *testing.T) {
	s := newServer(t)
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	tok := mintRawToken(t, s, nil)
	for _, tc := range []struct {
		name, method, body string
		status             int
		want               []string // the issue's labels afterwards
	}{
		{"bare array", "POST", `["a"]`, 200, []string{"a"}},
		{"object of names", "POST", `{"labels":["b"]}`, 200, []string{"a", "b"}},
		{"object of objects", "POST", `{"labels":[{"name":"c"}]}`, 200, []string{"a", "b", "c"}},
		{"array of objects", "POST", `[{"name":"d"}]`, 200, []string{"a", "b", "c", "d"}},
		{"one string", "POST", `"e"`, 200, []string{"a", "b", "c", "d", "e"}},
		{"empty add", "POST", `[]`, 422, []string{"a", "b", "c", "d", "e"}},
		{"no labels key", "POST", `{}`, 422, []string{"a", "b", "c", "d", "e"}},
		{"no body", "POST", ``, 422, []string{"a", "b", "c", "d", "e"}},
		{"empty name", "POST", `["x", ""]`, 422, []string{"a", "b", "c", "d", "e"}},
		{"not a list", "POST", `{"labels":42}`, 422, []string{"a", "b", "c", "d", "e"}},
		{"not JSON", "POST", `[a`, 400, []string{"a", "b", "c", "d", "e"}},
		{"set", "PUT", `{"labels":["z"]}`, 200, []string{"z"}},
		{"set none", "PUT", `[]`, 200, nil},
	} {
		status, body := rawDo(t, s, tok, tc.method, "repos/acme/widgets/issues/1/labels", tc.body)
		if status != tc.status {
			t.Errorf("%s: status %d (%s), want %d", tc.name, status, body, tc.status)
		}
		if got := s.IssueLabels("acme", "widgets", 1); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: labels %v, want %v", tc.name, got, tc.want)
		}
		if status == 422 {
			var e apiError
			if json.Unmarshal(body, &e) != nil || e.Message == "" || e.DocumentationURL == "" {
				t.Errorf("%s: error body %s", tc.name, body)
			}
		}
	}
}

func TestIssueLabelPermissions(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.AddIssue("acme", "widgets", Issue{Number: 1, Labels: []string{"bug"}})
	perms := func(p github.InstallationPermissions) *github.Client {
		return installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &p})
	}
	for _, tc := range []struct {
		name              string
		client            *github.Client
		readOK, writeOK   bool
		writeStatusWanted int
	}{
		{"issues write", perms(github.InstallationPermissions{Issues: github.String("write")}), true, true, 0},
		{"pull requests write", perms(github.InstallationPermissions{PullRequests: github.String("write")}), true, true, 0},
		{"issues read", perms(github.InstallationPermissions{Issues: github.String("read")}), true, false, http.StatusForbidden},
		{"contents only", perms(github.InstallationPermissions{Contents: github.String("write")}), false, false, http.StatusForbidden},
	} {
		_, _, err := tc.client.Issues.ListLabelsByIssue(ctx, "acme", "widgets", 1, nil)
		if (err == nil) != tc.readOK {
			t.Errorf("%s: list: %v", tc.name, err)
		}
		_, _, err = tc.client.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 1, []string{"x"})
		if tc.writeOK {
			if err != nil {
				t.Errorf("%s: add: %v", tc.name, err)
			}
		} else {
			wantStatus(t, err, tc.writeStatusWanted)
		}
		_, err = tc.client.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", 1, "x")
		if tc.writeOK && err != nil {
			t.Errorf("%s: remove: %v", tc.name, err)
		} else if !tc.writeOK {
			wantStatus(t, err, tc.writeStatusWanted)
		}
	}
	// Another installation's repo is not there at all.
	_, _, err := appInstallClient(t, s, 2).Issues.AddLabelsToIssue(ctx, "acme", "widgets", 1, []string{"x"})
	wantStatus(t, err, http.StatusNotFound)
	// No credential.
	if status, _ := rawDo(t, s, "", "DELETE", "repos/acme/widgets/issues/1/labels/bug", ""); status != http.StatusUnauthorized {
		t.Errorf("unauthenticated delete: %d", status)
	}
	if got := s.IssueLabels("acme", "widgets", 1); !reflect.DeepEqual(got, []string{"bug"}) {
		t.Errorf("labels = %v", got)
	}
}
