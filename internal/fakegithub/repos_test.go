package fakegithub

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestCollaboratorPermissionFoldsRoles(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)

	// go-github v62's RepositoryPermissionLevel has no role_name, so decode
	// the body ourselves, as the app has to.
	type perm struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
		User       struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	get := func(repo, login string) (perm, error) {
		req, err := gh.NewRequest("GET", "repos/acme/"+repo+"/collaborators/"+login+"/permission", nil)
		if err != nil {
			t.Fatal(err)
		}
		var p perm
		_, err = gh.Do(ctx, req, &p)
		return p, err
	}

	for role, folded := range map[string]string{
		"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none",
	} {
		login := "user-" + role
		s.SetPermission("acme", "widgets", login, role)
		p, err := get("widgets", login)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if p.Permission != folded || p.RoleName != role || p.User.Login != login {
			t.Errorf("role %s: got %+v, want permission %s", role, p, folded)
		}
	}

	// The go-github call still works for the folded permission.
	level, _, err := gh.Repositories.GetPermissionLevel(ctx, "acme", "widgets", "user-maintain")
	if err != nil || level.GetPermission() != "write" {
		t.Errorf("GetPermissionLevel = %v, %v", level, err)
	}

	// An existing user without a role: none on a private repo, read on a
	// public one. A login that is no user: 404.
	s.AddUser("stranger", 555, "User")
	if p, err := get("widgets", "stranger"); err != nil || p.Permission != "none" {
		t.Errorf("stranger on private repo: %+v %v", p, err)
	}
	if p, err := get("gadgets", "stranger"); err != nil || p.Permission != "read" {
		t.Errorf("stranger on public repo: %+v %v", p, err)
	}
	_, err = get("widgets", "ghost")
	if er := wantStatus(t, err, http.StatusNotFound); !strings.Contains(er.Message, "is not a user") {
		t.Errorf("message = %q", er.Message)
	}
}

func TestContents(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	long := strings.Repeat("0123456789", 20)
	s.SetFile("acme", "widgets", "main", ".github/inspect.yml", []byte("hello\n"))
	s.SetFile("acme", "widgets", "main", "AGENTS.md", []byte(long))
	s.SetFile("acme", "widgets", "feature", ".github/inspect.yml", []byte("feature\n"))

	f, dir, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", ".github/inspect.yml", nil)
	if err != nil || dir != nil {
		t.Fatalf("file: %v %v", dir, err)
	}
	content, err := f.GetContent()
	if err != nil || content != "hello\n" {
		t.Errorf("content = %q, %v", content, err)
	}
	// The git blob id of "hello\n", as `git hash-object` prints it.
	if f.GetSHA() != "ce013625030ba8dba906f756967f9e9ca394464a" || f.GetSize() != 6 || f.GetType() != "file" || f.GetEncoding() != "base64" {
		t.Errorf("file = %+v", f)
	}

	// GitHub wraps base64 at 60 characters; go-github decodes it anyway.
	f, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "AGENTS.md", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Content == nil || !strings.Contains(*f.Content, "\n") {
		t.Errorf("content not wrapped: %v", f.Content)
	}
	if got, _ := f.GetContent(); got != long {
		t.Errorf("long content = %q", got)
	}

	// A ref names a branch.
	f, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", ".github/inspect.yml", &github.RepositoryContentGetOptions{Ref: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.GetContent(); got != "feature\n" {
		t.Errorf("feature content = %q", got)
	}

	// Directories list their entries.
	_, dir, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(dir) != 2 || dir[0].GetName() != ".github" || dir[0].GetType() != "dir" || dir[1].GetName() != "AGENTS.md" {
		t.Errorf("root = %v", dir)
	}

	// Missing files, deleted files and unknown refs are 404s.
	_, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "nope.txt", nil)
	if er := wantStatus(t, err, http.StatusNotFound); er.Message != "Not Found" {
		t.Errorf("message = %q", er.Message)
	}
	s.DeleteFile("acme", "widgets", "main", "AGENTS.md")
	_, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "AGENTS.md", nil)
	wantStatus(t, err, http.StatusNotFound)
	_, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "AGENTS.md", &github.RepositoryContentGetOptions{Ref: "nope"})
	wantStatus(t, err, http.StatusNotFound)
}

func TestUserOwnedRepo(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.AddRepo(Repo{Owner: "carol", Name: "dotfiles", InstallationID: 3, OwnerType: "User", Private: true})
	s.SetFile("carol", "dotfiles", "main", "x.txt", []byte("raw bytes"))

	in, _, err := appClient(t, s).Apps.FindRepositoryInstallation(ctx, "carol", "dotfiles")
	if err != nil || in.GetID() != 3 || in.GetAccount().GetType() != "User" || in.GetTargetType() != "User" {
		t.Fatalf("installation = %+v, %v", in, err)
	}
	gh := appInstallClient(t, s, 3)
	// The owner of a user-owned repo is its admin.
	level, _, err := gh.Repositories.GetPermissionLevel(ctx, "carol", "dotfiles", "carol")
	if err != nil || level.GetPermission() != "admin" {
		t.Errorf("owner permission = %v, %v", level, err)
	}
	// The raw media type answers the bytes themselves.
	req, _ := gh.NewRequest("GET", "repos/carol/dotfiles/contents/x.txt", nil)
	req.Header.Set("Accept", "application/vnd.github.raw+json")
	var buf strings.Builder
	if _, err := gh.Do(ctx, req, &buf); err != nil || buf.String() != "raw bytes" {
		t.Errorf("raw = %q, %v", buf.String(), err)
	}
}

func TestSetFileMakesRealCommits(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)

	// An empty repo: no branch, and the contents API says so.
	if s.BranchSHA("acme", "widgets", "main") != "" {
		t.Fatal("a new repo has a main branch")
	}
	_, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "", nil)
	if er := wantStatus(t, err, http.StatusNotFound); er.Message != "This repository is empty." {
		t.Errorf("message = %q", er.Message)
	}

	s.SetFile("acme", "widgets", "main", "go.mod", []byte("module widgets\n"))
	s.SetFile("acme", "widgets", "main", "pkg/add.go", []byte("package pkg\n"))
	s.SetFile("acme", "widgets", "main", "pkg/add.go", []byte("package pkg\n")) // unchanged: no commit
	dir := s.GitDir("acme", "widgets")
	if got := realGit(t, "", "--git-dir="+dir, "log", "--format=%s|%an", "main"); got != "Update pkg/add.go|octocat\nUpdate go.mod|octocat" {
		t.Errorf("git log:\n%s", got)
	}
	main := s.BranchSHA("acme", "widgets", "main")
	if got := realGit(t, "", "--git-dir="+dir, "rev-parse", "main"); got != main {
		t.Errorf("git main %s, BranchSHA %s", got, main)
	}
	// The same fixture gives the same SHAs on every run.
	s2 := newServer(t)
	s2.SetFile("acme", "widgets", "main", "go.mod", []byte("module widgets\n"))
	s2.SetFile("acme", "widgets", "main", "pkg/add.go", []byte("package pkg\n"))
	if s2.BranchSHA("acme", "widgets", "main") != main {
		t.Errorf("fixture SHAs differ: %s vs %s", s2.BranchSHA("acme", "widgets", "main"), main)
	}

	// The contents API reads that commit: a directory's sha is git's tree.
	_, root, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "", nil)
	if err != nil || len(root) != 2 || root[0].GetName() != "go.mod" || root[1].GetName() != "pkg" || root[1].GetType() != "dir" {
		t.Fatalf("root = %v, %v", root, err)
	}
	if want := realGit(t, "", "--git-dir="+dir, "rev-parse", "main:pkg"); root[1].GetSHA() != want {
		t.Errorf("pkg sha %s, git %s", root[1].GetSHA(), want)
	}
	// And a ref may be a commit SHA, full or abbreviated.
	for _, ref := range []string{main, main[:10], "refs/heads/main"} {
		if _, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "pkg/add.go", &github.RepositoryContentGetOptions{Ref: ref}); err != nil {
			t.Errorf("ref %s: %v", ref, err)
		}
	}

	// A new branch starts from main.
	feature := s.CreateBranch("acme", "widgets", "feature", "main")
	if feature != main {
		t.Errorf("CreateBranch = %s, want %s", feature, main)
	}
	s.SetFile("acme", "widgets", "feature", "pkg/add.go", []byte("package pkg // feature\n"))
	if got := realGit(t, "", "--git-dir="+dir, "rev-list", "--count", "main..feature"); got != "1" {
		t.Errorf("feature is %s commits ahead of main", got)
	}
	s.DeleteFile("acme", "widgets", "main", "pkg")
	if got := realGit(t, "", "--git-dir="+dir, "ls-tree", "--name-only", "main"); got != "go.mod" {
		t.Errorf("main after deleting pkg: %q", got)
	}
	s.DeleteFile("acme", "widgets", "nope", "go.mod") // no such branch: nothing happens
	if s.BranchSHA("acme", "widgets", "nope") != "" {
		t.Error("DeleteFile created a branch")
	}

	// CreateBranch in an empty repo makes an initial commit first.
	s.AddRepo(Repo{Owner: "acme", Name: "empty", InstallationID: 1})
	sha := s.CreateBranch("acme", "empty", "work", "")
	if sha == "" || s.BranchSHA("acme", "empty", "main") != sha {
		t.Errorf("CreateBranch in an empty repo = %q", sha)
	}
}
