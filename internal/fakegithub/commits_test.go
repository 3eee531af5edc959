package fakegithub

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-github/v62/github"
)

// TestCommitRoutes checks that GET .../commits/{ref}, its check runs, its
// statuses, its combined status and its pull requests each reach their
// own handler, for a SHA, a branch, and a branch with a slash sent as
// go-github sends it (unescaped) and escaped.
func TestCommitRoutes(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.SetAppPermission("statuses", "write")
	sha := s.CommitFiles("acme", "widgets", "feature/x", map[string]string{"a.txt": "a\n"}, "a")
	s.AddPull("acme", "widgets", Pull{Number: 4, HeadRef: "feature/x"})
	gh := appInstallClient(t, s, 1)
	if _, _, err := gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: sha}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gh.Repositories.CreateStatus(ctx, "acme", "widgets", sha, &github.RepoStatus{State: github.String("success")}); err != nil {
		t.Fatal(err)
	}
	tok := mintRawToken(t, s, nil)

	for _, ref := range []string{sha, "feature/x", "feature%2Fx"} {
		t.Run(ref, func(t *testing.T) {
			goRef := ref
			if ref == "feature%2Fx" {
				goRef = "" // go-github cannot send it: raw requests only
			}
			if goRef != "" {
				commit, _, err := gh.Repositories.GetCommit(ctx, "acme", "widgets", goRef, nil)
				if err != nil || commit.GetSHA() != sha {
					t.Errorf("commit: %v %v", commit.GetSHA(), err)
				}
				runs, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", goRef, nil)
				if err != nil || runs.GetTotal() != 1 {
					t.Errorf("check runs: %+v %v", runs, err)
				}
				sts, _, err := gh.Repositories.ListStatuses(ctx, "acme", "widgets", goRef, nil)
				if err != nil || len(sts) != 1 {
					t.Errorf("statuses: %v %v", sts, err)
				}
				comb, _, err := gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", goRef, nil)
				if err != nil || comb.GetState() != "success" || comb.GetSHA() != sha {
					t.Errorf("combined: %+v %v", comb, err)
				}
				pulls, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", goRef, nil)
				if err != nil || len(pulls) != 1 || pulls[0].GetNumber() != 4 {
					t.Errorf("pulls: %v %v", pulls, err)
				}
			}
			for suffix, check := range map[string]func([]byte) bool{
				"": func(b []byte) bool {
					var v github.RepositoryCommit
					return json.Unmarshal(b, &v) == nil && v.GetSHA() == sha
				},
				"/check-runs": func(b []byte) bool {
					var v github.ListCheckRunsResults
					return json.Unmarshal(b, &v) == nil && v.GetTotal() == 1
				},
				"/statuses": func(b []byte) bool { var v []github.RepoStatus; return json.Unmarshal(b, &v) == nil && len(v) == 1 },
				"/status": func(b []byte) bool {
					var v github.CombinedStatus
					return json.Unmarshal(b, &v) == nil && v.GetSHA() == sha
				},
				"/pulls": func(b []byte) bool { var v []github.PullRequest; return json.Unmarshal(b, &v) == nil && len(v) == 1 },
			} {
				status, body := rawDo(t, s, tok, "GET", "repos/acme/widgets/commits/"+ref+suffix, "")
				if status != http.StatusOK || !check(body) {
					t.Errorf("GET commits/%s%s: %d %s", ref, suffix, status, body)
				}
			}
		})
	}

	// Each suffix keeps its own permission: a contents-only token reads the
	// commit but not its statuses or check runs.
	ro := mintRawToken(t, s, &github.InstallationPermissions{Contents: github.String("read")})
	for suffix, want := range map[string]int{"": 200, "/statuses": 403, "/status": 403, "/check-runs": 403, "/pulls": 403} {
		for _, ref := range []string{sha, "feature/x"} {
			if status, body := rawDo(t, s, ro, "GET", "repos/acme/widgets/commits/"+ref+suffix, ""); status != want {
				t.Errorf("contents-only GET commits/%s%s: %d %s, want %d", ref, suffix, status, body, want)
			}
		}
	}
}

func TestPullsForCommit(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const head = "1111111111111111111111111111111111111111"
	s.AddPull("acme", "widgets", Pull{Number: 1, HeadSHA: head, HeadRef: "topic", State: "closed"})
	s.AddPull("acme", "widgets", Pull{Number: 2, HeadSHA: head, HeadRef: "topic"})
	s.AddPull("acme", "widgets", Pull{Number: 3, HeadSHA: "2222222222222222222222222222222222222222", HeadRef: "other"})
	s.AddPull("acme", "widgets", Pull{Number: 4, HeadSHA: head, HeadRef: "topic", HeadRepoFullName: "mallory/widgets", Merged: true})

	pulls, resp, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", head, &github.ListOptions{PerPage: 2})
	if err != nil || len(pulls) != 2 || resp.NextPage != 2 {
		t.Fatalf("page 1: %v next %d %v", pulls, resp.NextPage, err)
	}
	rest, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", head, &github.ListOptions{PerPage: 2, Page: 2})
	if err != nil || len(rest) != 1 {
		t.Fatalf("page 2: %v %v", rest, err)
	}
	var numbers []int
	for _, p := range append(pulls, rest...) {
		numbers = append(numbers, p.GetNumber())
		if p.GetHead().GetSHA() != head {
			t.Errorf("pull %d head %s", p.GetNumber(), p.GetHead().GetSHA())
		}
	}
	if len(numbers) != 3 || numbers[0] != 4 || numbers[2] != 1 {
		t.Errorf("numbers = %v, want newest first", numbers)
	}
	// A commit no pull request has: none. A ref that is no commit: 422.
	none, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", "3333333333333333333333333333333333333333", nil)
	if err != nil || len(none) != 0 {
		t.Errorf("none = %v, %v", none, err)
	}
	_, _, err = gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", "no-such-branch", nil)
	wantStatus(t, err, http.StatusUnprocessableEntity)
	// A head branch name lists its pulls.
	byBranch, _, err := gh.PullRequests.ListPullRequestsWithCommit(ctx, "acme", "widgets", "other", nil)
	if err != nil || len(byBranch) != 1 || byBranch[0].GetNumber() != 3 {
		t.Errorf("by branch = %v, %v", byBranch, err)
	}
}
