package fakegithub

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v62/github"
)

// authArgs makes git send the token as GitHub documents it, HTTP Basic
// "x-access-token:<token>", on every request.
func authArgs(tok string) []string {
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok))
	return []string{"-c", "http.extraHeader=Authorization: Basic " + basic}
}

func gitArgs(tok string, args ...string) []string {
	return append(authArgs(tok), args...)
}

func TestGitCloneAndPushWithInstallationTokens(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n", "go.mod": "module widgets\n"}, "seed")
	remote := s.URL() + "/acme/widgets.git"
	readTok := mintRawToken(t, s, &github.InstallationPermissions{Contents: github.String("read")})
	writeTok := mintRawToken(t, s, &github.InstallationPermissions{Contents: github.String("write"), PullRequests: github.String("write")})

	// Clone with a read token.
	work := filepath.Join(t.TempDir(), "widgets")
	realGit(t, "", gitArgs(readTok, "clone", "--quiet", remote, work)...)
	if b, err := os.ReadFile(filepath.Join(work, "README.md")); err != nil || string(b) != "hi\n" {
		t.Fatalf("cloned README.md = %q, %v", b, err)
	}
	if got := realGit(t, work, "rev-parse", "HEAD"); got != s.BranchSHA("acme", "widgets", "main") {
		t.Errorf("clone HEAD %s, server main %s", got, s.BranchSHA("acme", "widgets", "main"))
	}

	// A branch, and a pull request for it through the API.
	realGit(t, work, "checkout", "--quiet", "-b", "feature")
	if err := os.WriteFile(filepath.Join(work, "fix.go"), []byte("package widgets\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit(t, work, "add", "fix.go")
	realGit(t, work, "commit", "--quiet", "-m", "Add fix")
	first := realGit(t, work, "rev-parse", "HEAD")

	// Pushing with the read token is refused by receive-pack's endpoint.
	out, err := realGitErr(t, work, gitArgs(readTok, "push", "origin", "feature")...)
	if err == nil || !strings.Contains(out, "403") {
		t.Fatalf("push with a read token: %v\n%s", err, out)
	}
	if s.BranchSHA("acme", "widgets", "feature") != "" {
		t.Fatal("a refused push created the branch")
	}

	// With a contents: write token it goes through; the URL form works too.
	authed := strings.Replace(remote, "http://", "http://x-access-token:"+writeTok+"@", 1)
	realGit(t, work, "push", "--quiet", authed, "feature")
	if got := s.BranchSHA("acme", "widgets", "feature"); got != first {
		t.Fatalf("server feature = %s, pushed %s", got, first)
	}
	gh := tokenClient(t, s, writeTok)
	pr, _, err := gh.PullRequests.Create(ctx, "acme", "widgets", &github.NewPullRequest{
		Title: github.String("Fix"), Head: github.String("feature"), Base: github.String("main"),
	})
	if err != nil || pr.GetHead().GetSHA() != first {
		t.Fatalf("pull = %+v, %v", pr.GetHead(), err)
	}

	// A second push moves the pull request's head with the branch.
	if err := os.WriteFile(filepath.Join(work, "fix.go"), []byte("package widgets // v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit(t, work, "commit", "--quiet", "-am", "Fix more")
	second := realGit(t, work, "rev-parse", "HEAD")
	realGit(t, work, gitArgs(writeTok, "push", "--quiet", "origin", "feature")...)
	pr, _, err = gh.PullRequests.Get(ctx, "acme", "widgets", pr.GetNumber())
	if err != nil || pr.GetHead().GetSHA() != second {
		t.Errorf("pull head after push = %s, want %s (%v)", pr.GetHead().GetSHA(), second, err)
	}
	// The contents API sees the pushed file.
	f, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "fix.go", &github.RepositoryContentGetOptions{Ref: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := f.GetContent(); c != "package widgets // v2\n" {
		t.Errorf("contents after push = %q", c)
	}
	// Pushed commits carry no GitHub signature.
	rc, _, err := gh.Repositories.GetCommit(ctx, "acme", "widgets", second, nil)
	if err != nil || rc.GetCommit().GetVerification().GetReason() != "unsigned" || rc.GetAuthor() != nil {
		t.Errorf("pushed commit = %+v, %v", rc, err)
	}

	// A fetch by SHA works, as the supervisor pins one.
	pinned := filepath.Join(t.TempDir(), "pinned")
	realGit(t, "", "init", "--quiet", pinned)
	realGit(t, pinned, gitArgs(readTok, "fetch", "--quiet", "--depth=1", remote, first)...)
	if got := realGit(t, pinned, "rev-parse", "FETCH_HEAD"); got != first {
		t.Errorf("fetched %s, want %s", got, first)
	}

	// Requests are recorded, as installation requests, by git path.
	var uploads, receives int
	for _, r := range s.Requests() {
		switch r.Path {
		case "/acme/widgets.git/git-upload-pack":
			uploads++
		case "/acme/widgets.git/git-receive-pack":
			receives++
		}
		if strings.Contains(r.Path, ".git/") && r.Status == http.StatusOK && (r.Auth != "installation" || r.InstallationID != 1) {
			t.Errorf("git request recorded as %+v", r)
		}
	}
	if uploads < 2 || receives != 2 {
		t.Errorf("recorded %d upload-pack and %d receive-pack requests", uploads, receives)
	}
	info := s.RequestsMatching("GET", "/acme/widgets.git/info/refs")
	if len(info) == 0 || !strings.HasPrefix(info[0].RawQuery, "service=git-") {
		t.Errorf("info/refs recorded as %+v", info)
	}
}

func TestGitHTTPRefusals(t *testing.T) {
	s := newServer(t)
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	s.CommitFiles("other", "thing", "main", map[string]string{"README.md": "theirs\n"}, "seed")
	tok := mintRawToken(t, s, nil)
	issuesOnly := mintRawToken(t, s, &github.InstallationPermissions{Issues: github.String("write")})

	get := func(url, user, pass string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" || pass != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	refs := func(repo string) string {
		return s.URL() + "/" + repo + ".git/info/refs?service=git-upload-pack"
	}

	// No credential, or a bad one: 401 with a Basic challenge.
	for _, pass := range []string{"", "ghs_notminted", "hunter2"} {
		resp := get(refs("acme/widgets"), "x-access-token", pass)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("password %q: %d %q", pass, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// Another installation's repo, or none: 404.
	if resp := get(refs("other/thing"), "x-access-token", tok); resp.StatusCode != http.StatusNotFound {
		t.Errorf("other installation's repo: %d", resp.StatusCode)
	}
	if resp := get(refs("acme/nope"), "x-access-token", tok); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown repo: %d", resp.StatusCode)
	}
	// No contents permission: 403.
	if resp := get(refs("acme/widgets"), "x-access-token", issuesOnly); resp.StatusCode != http.StatusForbidden {
		t.Errorf("token without contents: %d", resp.StatusCode)
	}
	// The smart protocol only.
	if resp := get(s.URL()+"/acme/widgets.git/info/refs", "x-access-token", tok); resp.StatusCode != http.StatusNotFound {
		t.Errorf("dumb info/refs: %d", resp.StatusCode)
	}
	if resp := get(refs("acme/widgets"), "x-access-token", tok); resp.StatusCode != http.StatusOK ||
		resp.Header.Get("Content-Type") != "application/x-git-upload-pack-advertisement" {
		t.Errorf("good token: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	// A clone without credentials fails (and cannot prompt).
	out, err := realGitErr(t, "", "clone", "--quiet", s.URL()+"/acme/widgets.git", filepath.Join(t.TempDir(), "w"))
	if err == nil {
		t.Errorf("clone without credentials succeeded:\n%s", out)
	}
	for _, r := range s.RequestsMatching("GET", "/acme/widgets.git/") {
		if r.Status == http.StatusUnauthorized && r.InstallationID != 0 {
			t.Errorf("refused request recorded with an installation: %+v", r)
		}
	}
}

func TestGitPushOfWorkflowsNeedsTheWorkflowsPermission(t *testing.T) {
	s := newServer(t)
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n", ".github/workflows/ci.yml": "on: push\n"}, "seed")
	remote := s.URL() + "/acme/widgets.git"
	tok := mintRawToken(t, s, nil) // contents: write, and no workflows

	work := filepath.Join(t.TempDir(), "widgets")
	realGit(t, "", gitArgs(tok, "clone", "--quiet", remote, work)...)
	if err := os.WriteFile(filepath.Join(work, ".github", "workflows", "ci.yml"), []byte("on: pull_request\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit(t, work, "commit", "--quiet", "-am", "Change CI")
	out, err := realGitErr(t, work, gitArgs(tok, "push", "origin", "HEAD:refs/heads/ci")...)
	if err == nil || !strings.Contains(out, "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission") {
		t.Fatalf("push of a workflow change without the permission: %v\n%s", err, out)
	}
	if s.BranchSHA("acme", "widgets", "ci") != "" {
		t.Fatal("the refused push created the branch")
	}
	// Other files still push.
	realGit(t, work, "reset", "--quiet", "--hard", "origin/main")
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit(t, work, "commit", "--quiet", "-am", "Readme")
	realGit(t, work, gitArgs(tok, "push", "--quiet", "origin", "HEAD:refs/heads/readme")...)
	if s.BranchSHA("acme", "widgets", "readme") == "" {
		t.Fatal("an ordinary push did not land")
	}

	// With the App configured for workflows: write, a new token may.
	s.SetAppPermission("workflows", "write")
	wf := mintRawToken(t, s, nil)
	realGit(t, work, "commit", "--quiet", "--allow-empty", "-m", "noop")
	if err := os.WriteFile(filepath.Join(work, ".github", "workflows", "ci.yml"), []byte("on: pull_request\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	realGit(t, work, "commit", "--quiet", "-am", "Change CI")
	realGit(t, work, gitArgs(wf, "push", "--quiet", "origin", "HEAD:refs/heads/ci")...)
	if s.BranchSHA("acme", "widgets", "ci") != realGit(t, work, "rev-parse", "HEAD") {
		t.Fatal("the permitted push did not land")
	}
}

func TestGitAndRESTConcurrently(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"README.md": "hi\n"}, "seed")
	tok := mintRawToken(t, s, nil)
	gh := tokenClient(t, s, tok)
	base := t.TempDir()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if out, err := realGitErr(t, "", gitArgs(tok, "clone", "--quiet", s.URL()+"/acme/widgets.git", filepath.Join(base, fmt.Sprint(i)))...); err != nil {
				t.Errorf("clone %d: %v\n%s", i, err, out)
			}
		}()
		go func() {
			defer wg.Done()
			main := s.BranchSHA("acme", "widgets", "main")
			_, _, err := gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{
				Ref: github.String(fmt.Sprintf("refs/heads/b%d", i)), Object: &github.GitObject{SHA: github.String(main)},
			})
			if err != nil {
				t.Errorf("create ref %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	refs, _, err := gh.Git.ListMatchingRefs(ctx, "acme", "widgets", &github.ReferenceListOptions{Ref: "heads/b"})
	if err != nil || len(refs) != 3 {
		t.Errorf("refs = %v, %v", refs, err)
	}
}
