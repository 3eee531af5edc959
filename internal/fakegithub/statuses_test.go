package fakegithub

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestCommitStatuses(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	sha := s.CommitFiles("acme", "widgets", "feature/x", map[string]string{"a.txt": "a\n"}, "a")

	// The App is granted "statuses: read" only, as by default.
	_, _, err := appInstallClient(t, s, 1).Repositories.CreateStatus(ctx, "acme", "widgets", sha, &github.RepoStatus{State: github.String("success")})
	if er := wantStatus(t, err, http.StatusForbidden); er.Response.Header.Get("X-Accepted-Github-Permissions") != "statuses=write" {
		t.Errorf("accepted permissions = %q", er.Response.Header.Get("X-Accepted-Github-Permissions"))
	}
	s.SetAppPermission("statuses", "write")
	gh := appInstallClient(t, s, 1)

	post := func(ref string, st *github.RepoStatus) *github.RepoStatus {
		t.Helper()
		out, resp, err := gh.Repositories.CreateStatus(ctx, "acme", "widgets", ref, st)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %+v: %v %v", st, resp, err)
		}
		return out
	}
	first := post(sha, &github.RepoStatus{State: github.String("pending"), Context: github.String("ci/build"),
		Description: github.String("building"), TargetURL: github.String("https://ci.example/1")})
	if first.GetState() != "pending" || first.GetContext() != "ci/build" || first.GetDescription() != "building" ||
		first.GetTargetURL() != "https://ci.example/1" || first.GetCreator().GetLogin() != "inspect-app[bot]" ||
		first.GetID() == 0 || first.CreatedAt == nil || first.UpdatedAt == nil {
		t.Errorf("created = %+v", first)
	}
	post(sha[:7], &github.RepoStatus{State: github.String("success"), Context: github.String("ci/build")}) // abbreviated
	post(strings.ToUpper(sha), &github.RepoStatus{State: github.String("failure"), Context: github.String("lint")})
	def := post(sha, &github.RepoStatus{State: github.String("success")})
	if def.GetContext() != "default" || def.Description != nil || def.TargetURL != nil {
		t.Errorf("defaults = %+v", def)
	}

	// Refused: a state missing or not in the list, a SHA of no commit.
	for _, tc := range []struct {
		name, ref string
		st        *github.RepoStatus
	}{
		{"no state", sha, &github.RepoStatus{Context: github.String("x")}},
		{"bad state", sha, &github.RepoStatus{State: github.String("passed")}},
		{"not a commit", "no-such-branch", &github.RepoStatus{State: github.String("success")}},
		{"unknown abbreviation", "abcdef1", &github.RepoStatus{State: github.String("success")}},
	} {
		_, _, err := gh.Repositories.CreateStatus(ctx, "acme", "widgets", tc.ref, tc.st)
		wantStatus(t, err, http.StatusUnprocessableEntity)
	}

	// Newest first, by SHA or branch (with a slash), paginated.
	list, resp, err := gh.Repositories.ListStatuses(ctx, "acme", "widgets", "feature/x", &github.ListOptions{PerPage: 3})
	if err != nil || len(list) != 3 || resp.NextPage != 2 || list[0].GetID() != def.GetID() || list[2].GetState() != "success" {
		t.Fatalf("list: %v next %d %v", list, resp.NextPage, err)
	}
	list, _, err = gh.Repositories.ListStatuses(ctx, "acme", "widgets", sha, &github.ListOptions{Page: 2, PerPage: 3})
	if err != nil || len(list) != 1 || list[0].GetID() != first.GetID() {
		t.Errorf("list page 2: %v %v", list, err)
	}

	// Combined: the latest per context; lint failed.
	comb, _, err := gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", "feature/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if comb.GetState() != "failure" || comb.GetTotalCount() != 3 || comb.GetSHA() != sha || len(comb.Statuses) != 3 {
		t.Fatalf("combined = %+v", comb)
	}
	byContext := map[string]string{}
	for _, st := range comb.Statuses {
		byContext[st.GetContext()] = st.GetState()
	}
	if want := map[string]string{"ci/build": "success", "lint": "failure", "default": "success"}; !reflect.DeepEqual(byContext, want) {
		t.Errorf("combined statuses = %v", byContext)
	}

	if got := s.Statuses("acme", "widgets", sha); len(got) != 4 || got[0] != (Status{Context: "ci/build", State: "pending",
		Description: "building", TargetURL: "https://ci.example/1", Creator: "inspect-app[bot]"}) {
		t.Errorf("Statuses = %+v", got)
	}

	// A ref with no commit.
	_, _, err = gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", "no-such-branch", nil)
	wantStatus(t, err, http.StatusNotFound)
	// A commit with no status: pending, none.
	other := s.CommitFiles("acme", "widgets", "main", map[string]string{"b.txt": "b\n"}, "b")
	comb, _, err = gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", other, nil)
	if err != nil || comb.GetState() != "pending" || comb.GetTotalCount() != 0 {
		t.Errorf("no statuses: %+v %v", comb, err)
	}
	// Reading needs "statuses: read".
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	_, _, err = ro.Repositories.ListStatuses(ctx, "acme", "widgets", sha, nil)
	wantStatus(t, err, http.StatusForbidden)
}

func TestCombinedState(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	for i, tc := range []struct {
		seed []Status
		want string
	}{
		{nil, "pending"},
		{[]Status{{Context: "a", State: "success"}}, "success"},
		{[]Status{{Context: "a", State: "success"}, {Context: "b", State: "pending"}}, "pending"},
		{[]Status{{Context: "a", State: "pending"}, {Context: "b", State: "error"}}, "failure"},
		{[]Status{{Context: "a", State: "failure"}, {Context: "a", State: "success"}}, "success"}, // the latest counts
		{[]Status{{Context: "a", State: "success"}, {Context: "a", State: "failure"}}, "failure"},
	} {
		sha := fakeSHA("combined", string(rune('a'+i)))
		for _, st := range tc.seed {
			if s.AddStatus("acme", "widgets", sha, st) == 0 {
				t.Fatal("no id")
			}
		}
		comb, _, err := gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", sha, nil)
		if err != nil || comb.GetState() != tc.want {
			t.Errorf("case %d: state %q, want %q (%v)", i, comb.GetState(), tc.want, err)
		}
		if got := s.Statuses("acme", "widgets", sha); len(got) != len(tc.seed) || (len(got) > 0 && got[0].Creator != "octocat") {
			t.Errorf("case %d: Statuses = %+v", i, got)
		}
	}
}
