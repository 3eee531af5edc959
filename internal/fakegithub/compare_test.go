package fakegithub

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// Comparing two commits counts what each side has that the other lacks,
// lists the head's new commits oldest first (the last 250 unpaged, or a
// page of them), the files from the merge base on the first page only,
// and answers 404 for a ref that names nothing, for another owner's side,
// and for commits without a common ancestor.
func TestCompareCommits(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	const o, r = "acme", "widgets"
	root := s.CommitFiles(o, r, "main", map[string]string{"a.txt": "a\n"}, "root")
	s.CreateBranch(o, r, "feature/x", root)
	feature := s.CommitFiles(o, r, "feature/x", map[string]string{"f.txt": "f\n"}, "feature")
	var mainCommits []string
	for i, body := range []string{"a\nb\n", "a\nb\nc\n", "b\nc\n"} {
		files := map[string]string{"a.txt": body}
		if i == 1 {
			files["bin/new.txt"] = "new\n"
		}
		mainCommits = append(mainCommits, s.CommitFiles(o, r, "main", files, "main "+string(rune('1'+i))))
	}
	head := mainCommits[2]

	cmp, _, err := gh.Repositories.CompareCommits(ctx, o, r, root, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmp.Commits {
		got = append(got, c.GetSHA())
	}
	if cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 3 || cmp.GetBehindBy() != 0 || cmp.GetTotalCommits() != 3 || !slices.Equal(got, mainCommits) {
		t.Errorf("root...main: %s ahead %d behind %d total %d commits %v, want ahead 3 %v", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), cmp.GetTotalCommits(), got, mainCommits)
	}
	if cmp.GetBaseCommit().GetSHA() != root || cmp.GetMergeBaseCommit().GetSHA() != root || cmp.Commits[0].GetCommit().GetMessage() != "main 1" {
		t.Errorf("base %s, merge base %s, first message %q", cmp.GetBaseCommit().GetSHA(), cmp.GetMergeBaseCommit().GetSHA(), cmp.Commits[0].GetCommit().GetMessage())
	}
	files := map[string]string{}
	for _, f := range cmp.Files {
		files[f.GetFilename()] = f.GetStatus()
		if f.GetFilename() == "a.txt" && (f.GetAdditions() != 2 || f.GetDeletions() != 1 || f.GetChanges() != 3) {
			t.Errorf("a.txt: +%d -%d (%d), want +2 -1: the merge base's a to b, c", f.GetAdditions(), f.GetDeletions(), f.GetChanges())
		}
	}
	if len(files) != 2 || files["a.txt"] != "modified" || files["bin/new.txt"] != "added" {
		t.Errorf("files = %v", files)
	}

	// Diverged both ways, and the converse; a branch with a slash.
	cmp, _, err = gh.Repositories.CompareCommits(ctx, o, r, "main", "feature/x", nil)
	if err != nil || cmp.GetStatus() != "diverged" || cmp.GetAheadBy() != 1 || cmp.GetBehindBy() != 3 || len(cmp.Commits) != 1 || cmp.Commits[0].GetSHA() != feature {
		t.Errorf("main...feature/x: %+v %v", cmp, err)
	}
	cmp, _, err = gh.Repositories.CompareCommits(ctx, o, r, "main", root[:7], nil)
	if err != nil || cmp.GetStatus() != "behind" || cmp.GetAheadBy() != 0 || cmp.GetBehindBy() != 3 || len(cmp.Commits) != 0 || len(cmp.Files) != 0 {
		t.Errorf("main...root (abbreviated): %+v %v", cmp, err)
	}
	cmp, _, err = gh.Repositories.CompareCommits(ctx, o, r, head, "acme:main", nil)
	if err != nil || cmp.GetStatus() != "identical" || cmp.GetAheadBy() != 0 || cmp.GetBehindBy() != 0 {
		t.Errorf("head...acme:main: %+v %v", cmp, err)
	}

	// Pages: oldest first, a Link header, the files on the first page only.
	page2, resp, err := gh.Repositories.CompareCommits(ctx, o, r, root, "main", &github.ListOptions{Page: 2, PerPage: 2})
	if err != nil || len(page2.Commits) != 1 || page2.Commits[0].GetSHA() != mainCommits[2] || len(page2.Files) != 0 || page2.GetAheadBy() != 3 {
		t.Errorf("page 2 of 2: %+v %v", page2, err)
	}
	if resp == nil || resp.PrevPage != 1 || resp.NextPage != 0 {
		t.Errorf("page 2's links: %+v", resp)
	}
	page1, resp, err := gh.Repositories.CompareCommits(ctx, o, r, root, "main", &github.ListOptions{PerPage: 2})
	if err != nil || len(page1.Commits) != 2 || page1.Commits[0].GetSHA() != mainCommits[0] || len(page1.Files) != 2 || resp.NextPage != 2 || resp.LastPage != 2 {
		t.Errorf("page 1 of 2: %+v %+v %v", page1, resp, err)
	}

	tok := mintRawToken(t, s, nil)
	for _, basehead := range []string{root + "...nope", "nope..." + head, root + ".." + head, "other:main...main", root + "..."} {
		status, body := rawDo(t, s, tok, "GET", "repos/acme/widgets/compare/"+basehead, "")
		var e struct{ Message string }
		if status != http.StatusNotFound || json.Unmarshal(body, &e) != nil || e.Message != "Not Found" {
			t.Errorf("compare/%s: %d %s, want 404 Not Found", basehead, status, body)
		}
	}
	// Another installation's repository is not there at all.
	if status, _ := rawDo(t, s, tok, "GET", "repos/other/thing/compare/main...main", ""); status != http.StatusNotFound {
		t.Errorf("another installation's repo: %d", status)
	}

	// A root commit of its own: no common ancestor.
	dir := s.GitDir(o, r)
	orphan, err := exec.Command("git", "--git-dir="+dir, "-c", "user.name=t", "-c", "user.email=t@example.com",
		"commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "-m", "orphan").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "--git-dir="+dir, "update-ref", "refs/heads/orphan", strings.TrimSpace(string(orphan))).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s.ResyncRefs(o, r)
	status, body := rawDo(t, s, tok, "GET", "repos/acme/widgets/compare/main...orphan", "")
	if status != http.StatusNotFound || !strings.Contains(string(body), "No common ancestor between main and orphan.") {
		t.Errorf("unrelated histories: %d %s", status, body)
	}
}
