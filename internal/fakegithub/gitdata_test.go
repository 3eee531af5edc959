package fakegithub

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// realGit runs the git binary with an argv, isolated from the user's
// configuration and unable to prompt, and returns its trimmed stdout.
func realGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := realGitErr(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// realGitErr is realGit for a command that may fail; it returns stdout
// and stderr together.
func realGitErr(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Tess Ter", "GIT_AUTHOR_EMAIL=tess@example.com",
		"GIT_COMMITTER_NAME=Tess Ter", "GIT_COMMITTER_EMAIL=tess@example.com",
		"LC_ALL=C",
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mintToken mints a raw installation token for installation 1, optionally
// narrowed to some permissions.
func mintRawToken(t *testing.T, s *Server, perms *github.InstallationPermissions) string {
	t.Helper()
	var opts *github.InstallationTokenOptions
	if perms != nil {
		opts = &github.InstallationTokenOptions{Permissions: perms}
	}
	tok, _, err := appClient(t, s).Apps.CreateInstallationToken(context.Background(), 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tok.GetToken()
}

// inlineCommit makes a commit on top of branch from inline tree content
// through the Git Data API, without author or committer, and returns it.
func inlineCommit(t *testing.T, gh *github.Client, branch string, entries []*github.TreeEntry, msg string) *github.Commit {
	t.Helper()
	ctx := context.Background()
	ref, _, err := gh.Git.GetRef(ctx, "acme", "widgets", "heads/"+branch)
	if err != nil {
		t.Fatal(err)
	}
	parent, _, err := gh.Git.GetCommit(ctx, "acme", "widgets", ref.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	tree, resp, err := gh.Git.CreateTree(ctx, "acme", "widgets", parent.GetTree().GetSHA(), entries)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tree: %v %v", resp, err)
	}
	commit, resp, err := gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{
		Message: github.String(msg), Tree: tree, Parents: []*github.Commit{{SHA: parent.SHA}},
	}, nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create commit: %v %v", resp, err)
	}
	return commit
}

func TestCommitFromInlineTreeIsARealSignedBotCommit(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	base := s.CommitFiles("acme", "widgets", "main", map[string]string{
		"README.md":   "hello\n",
		"src/old.go":  "package src\n",
		"src/keep.go": "package src // keep\n",
	}, "Initial files")
	gh := appInstallClient(t, s, 1)

	const msg = "Fix the bug\n\nCo-authored-by: Alice <1+alice@users.noreply.github.com>\nInspect-Session: s-1\n"
	commit := inlineCommit(t, gh, "main", []*github.TreeEntry{
		{Path: github.String("src/new.go"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("package src // new\n")},
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("hello, world\n")},
		{Path: github.String("run.sh"), Mode: github.String("100755"), Type: github.String("blob"), Content: github.String("#!/bin/sh\n")},
		{Path: github.String("src/old.go")}, // no sha, no content: sha null deletes
	}, msg)

	// The answer: the bot, signed, verified.
	if commit.GetAuthor().GetName() != "inspect-app[bot]" || commit.GetAuthor().GetEmail() != s.BotEmail() ||
		commit.GetCommitter().GetEmail() != s.BotEmail() {
		t.Errorf("author %+v committer %+v", commit.GetAuthor(), commit.GetCommitter())
	}
	if !strings.HasSuffix(s.BotEmail(), "+inspect-app[bot]@users.noreply.github.com") {
		t.Errorf("bot email = %q", s.BotEmail())
	}
	if v := commit.GetVerification(); !v.GetVerified() || v.GetReason() != "valid" {
		t.Errorf("verification = %+v", v)
	}
	if len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != base || commit.GetMessage() != msg {
		t.Errorf("commit = %+v", commit)
	}

	// Moving the branch is a fast-forward.
	ref, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/main"), Object: &github.GitObject{SHA: commit.SHA},
	}, false)
	if err != nil || ref.GetObject().GetSHA() != commit.GetSHA() {
		t.Fatalf("update ref: %v %v", ref, err)
	}
	if s.BranchSHA("acme", "widgets", "main") != commit.GetSHA() {
		t.Errorf("BranchSHA = %s", s.BranchSHA("acme", "widgets", "main"))
	}

	// Real git agrees: the commit, its author, its message and its tree.
	dir := s.GitDir("acme", "widgets")
	if got := realGit(t, "", "--git-dir="+dir, "rev-parse", "refs/heads/main"); got != commit.GetSHA() {
		t.Errorf("git says main is %s", got)
	}
	if got := realGit(t, "", "--git-dir="+dir, "log", "-1", "--format=%an <%ae>|%cn|%B", "main"); got != "inspect-app[bot] <"+s.BotEmail()+">|inspect-app[bot]|"+strings.TrimSpace(msg) {
		t.Errorf("git log = %q", got)
	}
	if got := realGit(t, "", "--git-dir="+dir, "ls-tree", "-r", "--format=%(objectmode) %(path)", "main"); got != "100644 README.md\n100755 run.sh\n100644 src/keep.go\n100644 src/new.go" {
		t.Errorf("tree:\n%s", got)
	}
	if got := realGit(t, "", "--git-dir="+dir, "show", "main:README.md"); got != "hello, world" {
		t.Errorf("README.md = %q", got)
	}
	if got := realGit(t, "", "--git-dir="+dir, "rev-parse", "main^{tree}"); got != commit.GetTree().GetSHA() {
		t.Errorf("tree sha: git %s, API %s", got, commit.GetTree().GetSHA())
	}

	// Reading back: the git commit, the REST commit, the tree, the contents.
	got, _, err := gh.Git.GetCommit(ctx, "acme", "widgets", commit.GetSHA())
	if err != nil || !got.GetVerification().GetVerified() || got.GetVerification().GetPayload() == "" {
		t.Errorf("git commit = %+v, %v", got, err)
	}
	rc, _, err := gh.Repositories.GetCommit(ctx, "acme", "widgets", "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rc.GetSHA() != commit.GetSHA() || !rc.GetCommit().GetVerification().GetVerified() ||
		rc.GetCommit().GetVerification().GetReason() != "valid" || rc.GetAuthor().GetLogin() != "inspect-app[bot]" {
		t.Errorf("REST commit = %+v", rc)
	}
	tree, _, err := gh.Git.GetTree(ctx, "acme", "widgets", commit.GetSHA(), true)
	if err != nil || len(tree.Entries) != 5 { // README.md, run.sh, src, src/keep.go, src/new.go
		t.Errorf("recursive tree = %v, %v", tree, err)
	}
	f, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "src/new.go", nil)
	if err != nil {
		t.Fatal(err)
	}
	if content, _ := f.GetContent(); content != "package src // new\n" {
		t.Errorf("contents API = %q", content)
	}
	_, _, _, err = gh.Repositories.GetContents(ctx, "acme", "widgets", "src/old.go", nil)
	wantStatus(t, err, http.StatusNotFound)

	// The seeded commit is unsigned.
	rc, _, err = gh.Repositories.GetCommit(ctx, "acme", "widgets", base, nil)
	if err != nil || rc.GetCommit().GetVerification().GetVerified() || rc.GetCommit().GetVerification().GetReason() != "unsigned" {
		t.Errorf("seeded commit = %+v, %v", rc, err)
	}
}

func TestExplicitAuthorIsUnsigned(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n"}, "seed")
	gh := appInstallClient(t, s, 1)
	blob, resp, err := gh.Git.CreateBlob(ctx, "acme", "widgets", &github.Blob{Content: github.String("YmluYXJ5AAE="), Encoding: github.String("base64")})
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("blob: %v %v", resp, err)
	}
	b, _, err := gh.Git.GetBlob(ctx, "acme", "widgets", blob.GetSHA())
	if err != nil || b.GetSize() != 8 || b.GetEncoding() != "base64" {
		t.Fatalf("get blob = %+v, %v", b, err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", "", []*github.TreeEntry{
		{Path: github.String("bin/data"), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA},
	})
	if err != nil {
		t.Fatal(err)
	}
	when := github.Timestamp{Time: fixtureEpoch.AddDate(0, 1, 0)}
	c, _, err := gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{
		Message: github.String("by hand"), Tree: tree,
		Author: &github.CommitAuthor{Name: github.String("Alice"), Email: github.String("alice@example.com"), Date: &when},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.GetVerification(); v.GetVerified() || v.GetReason() != "unsigned" {
		t.Errorf("verification = %+v", v)
	}
	if c.GetAuthor().GetName() != "Alice" || c.GetCommitter().GetName() != "Alice" || !c.GetAuthor().GetDate().Equal(when) || len(c.Parents) != 0 {
		t.Errorf("commit = %+v", c)
	}
	if got := realGit(t, "", "--git-dir="+s.GitDir("acme", "widgets"), "cat-file", "-p", c.GetSHA()+":bin/data"); got != "binary\x00\x01" {
		t.Errorf("blob content = %q", got)
	}
}

func TestRefUpdatesFastForwardOrForce(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	base := s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n"}, "seed")
	side := s.CommitFiles("acme", "widgets", "side", map[string]string{"b.txt": "b\n"}, "side")
	ahead := s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a2\n"}, "ahead")
	gh := appInstallClient(t, s, 1)
	update := func(ref, sha string, force bool) (*github.Reference, error) {
		r, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String(ref), Object: &github.GitObject{SHA: github.String(sha)}}, force)
		return r, err
	}

	// side is not a descendant of main: refused without force.
	_, err := update("refs/heads/main", side, false)
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Update is not a fast forward" {
		t.Errorf("message = %q", er.Message)
	}
	if s.BranchSHA("acme", "widgets", "main") != ahead {
		t.Error("a refused update moved the branch")
	}
	// Going back is not a fast-forward either; force does it.
	_, err = update("heads/main", base, false)
	wantStatus(t, err, http.StatusUnprocessableEntity)
	if r, err := update("heads/main", base, true); err != nil || r.GetObject().GetSHA() != base {
		t.Fatalf("forced update: %v %v", r, err)
	}
	// A fast-forward needs no force.
	if _, err := update("heads/main", ahead, false); err != nil {
		t.Fatal(err)
	}
	// Unknown refs and objects.
	_, err = update("heads/nope", ahead, false)
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Reference does not exist" {
		t.Errorf("message = %q", er.Message)
	}
	_, err = update("heads/main", strings.Repeat("ab", 20), true)
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Object does not exist" {
		t.Errorf("message = %q", er.Message)
	}

	// Create: a new branch, then the same again.
	newRef := &github.Reference{Ref: github.String("refs/heads/inspect/1-abc"), Object: &github.GitObject{SHA: github.String(base)}}
	created, resp, err := gh.Git.CreateRef(ctx, "acme", "widgets", newRef)
	if err != nil || resp.StatusCode != http.StatusCreated || created.GetRef() != "refs/heads/inspect/1-abc" || created.GetObject().GetType() != "commit" {
		t.Fatalf("create: %+v %v %v", created, resp, err)
	}
	_, _, err = gh.Git.CreateRef(ctx, "acme", "widgets", newRef)
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Reference already exists" {
		t.Errorf("message = %q", er.Message)
	}
	got, _, err := gh.Git.GetRef(ctx, "acme", "widgets", "heads/inspect/1-abc")
	if err != nil || got.GetObject().GetSHA() != base {
		t.Errorf("get: %+v %v", got, err)
	}
	refs, _, err := gh.Git.ListMatchingRefs(ctx, "acme", "widgets", &github.ReferenceListOptions{Ref: "heads/"})
	if err != nil || len(refs) != 3 {
		t.Errorf("matching refs = %v, %v", refs, err)
	}

	// Delete, then it is gone.
	if resp, err := gh.Git.DeleteRef(ctx, "acme", "widgets", "heads/inspect/1-abc"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v %v", resp, err)
	}
	_, _, err = gh.Git.GetRef(ctx, "acme", "widgets", "heads/inspect/1-abc")
	wantStatus(t, err, http.StatusNotFound)
	_, err = gh.Git.DeleteRef(ctx, "acme", "widgets", "heads/inspect/1-abc")
	wantStatus(t, err, http.StatusUnprocessableEntity)
	if out := realGit(t, "", "--git-dir="+s.GitDir("acme", "widgets"), "for-each-ref", "--format=%(refname)"); out != "refs/heads/main\nrefs/heads/side" {
		t.Errorf("git refs:\n%s", out)
	}
}

func TestTreeValidation(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n"}, "seed")
	gh := appInstallClient(t, s, 1)
	blob, _, err := gh.Git.CreateBlob(ctx, "acme", "widgets", &github.Blob{Content: github.String("x")})
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]*github.TreeEntry{
		"unknown mode":       {Path: github.String("x"), Mode: github.String("100600"), Type: github.String("blob"), Content: github.String("x")},
		"mode/type mismatch": {Path: github.String("x"), Mode: github.String("040000"), Type: github.String("blob"), SHA: blob.SHA},
		"unknown type":       {Path: github.String("x"), Mode: github.String("100644"), Type: github.String("file"), Content: github.String("x")},
		"blob is no tree":    {Path: github.String("x"), Mode: github.String("040000"), Type: github.String("tree"), SHA: blob.SHA},
		"missing object":     {Path: github.String("x"), Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String(strings.Repeat("0", 40))},
		"sha and content":    {Path: github.String("x"), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA, Content: github.String("x")},
		"dot-dot path":       {Path: github.String("a/../x"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x")},
		"leading slash":      {Path: github.String("/x"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x")},
		".git path":          {Path: github.String(".git/config"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x")},
		"content for a tree": {Path: github.String("x"), Mode: github.String("040000"), Type: github.String("tree"), Content: github.String("x")},
	} {
		_, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", "", []*github.TreeEntry{e})
		if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message == "" {
			t.Errorf("%s: no message", name)
		}
	}
	_, _, err = gh.Git.CreateTree(ctx, "acme", "widgets", strings.Repeat("1", 40), []*github.TreeEntry{
		{Path: github.String("x"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x")},
	})
	wantStatus(t, err, http.StatusUnprocessableEntity)

	// Submodules and symlinks are fine.
	tree, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", "", []*github.TreeEntry{
		{Path: github.String("vendor/lib"), Mode: github.String("160000"), Type: github.String("commit"), SHA: github.String(strings.Repeat("7", 40))},
		{Path: github.String("link"), Mode: github.String("120000"), Type: github.String("blob"), Content: github.String("a.txt")},
	})
	if err != nil || len(tree.Entries) != 2 {
		t.Fatalf("tree = %+v, %v", tree, err)
	}

	// Commits need a tree and commit parents.
	_, _, err = gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{Message: github.String("m"), Tree: &github.Tree{SHA: blob.SHA}}, nil)
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{Message: github.String("m"), Tree: tree, Parents: []*github.Commit{{SHA: tree.SHA}}}, nil)
	if er := wantStatus(t, err, http.StatusUnprocessableEntity); er.Message != "Parent SHA does not exist or is not a commit object" {
		t.Errorf("message = %q", er.Message)
	}

	// Writing needs contents: write.
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	_, _, err = ro.Git.CreateBlob(ctx, "acme", "widgets", &github.Blob{Content: github.String("x")})
	if er := wantStatus(t, err, http.StatusForbidden); er.Response.Header.Get("X-Accepted-GitHub-Permissions") != "contents=write" {
		t.Errorf("header = %q", er.Response.Header.Get("X-Accepted-GitHub-Permissions"))
	}
	if _, _, err := ro.Git.GetBlob(ctx, "acme", "widgets", blob.GetSHA()); err != nil {
		t.Errorf("contents:read reading a blob: %v", err)
	}
}

func TestWorkflowChangesNeedTheWorkflowsPermission(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.CommitFiles("acme", "widgets", "main", map[string]string{
		"README.md": "hi\n", ".github/workflows/ci.yml": "on: push\n",
	}, "seed")
	gh := appInstallClient(t, s, 1)

	// Changing README.md is fine; the existing workflow is untouched.
	ok := inlineCommit(t, gh, "main", []*github.TreeEntry{
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("hello\n")},
	}, "readme")
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("heads/main"), Object: &github.GitObject{SHA: ok.SHA}}, false); err != nil {
		t.Fatal(err)
	}

	// Editing, or deleting, a workflow is refused, on update and on create.
	for _, entry := range []*github.TreeEntry{
		{Path: github.String(".github/workflows/ci.yml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("on: pull_request\n")},
		{Path: github.String(".github/workflows/ci.yml")},
		{Path: github.String(".github")},
	} {
		bad := inlineCommit(t, gh, "main", []*github.TreeEntry{entry}, "ci")
		_, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("heads/main"), Object: &github.GitObject{SHA: bad.SHA}}, false)
		er := wantStatus(t, err, http.StatusForbidden)
		if !strings.Contains(er.Message, "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission") {
			t.Errorf("message = %q", er.Message)
		}
		_, _, err = gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("refs/heads/ci"), Object: &github.GitObject{SHA: bad.SHA}})
		wantStatus(t, err, http.StatusForbidden)
	}
	if s.BranchSHA("acme", "widgets", "main") != ok.GetSHA() || s.BranchSHA("acme", "widgets", "ci") != "" {
		t.Fatal("a refused workflow change moved a ref")
	}

	// An App configured with workflows: write may.
	s.SetAppPermission("workflows", "write")
	gh = installClient(t, s, 1, nil)
	good := inlineCommit(t, gh, "main", []*github.TreeEntry{
		{Path: github.String(".github/workflows/ci.yml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("on: pull_request\n")},
	}, "ci")
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("heads/main"), Object: &github.GitObject{SHA: good.SHA}}, false); err != nil {
		t.Fatalf("with workflows: write: %v", err)
	}
	// ...but not with a token narrowed below it.
	narrow := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("write")}})
	again := inlineCommit(t, narrow, "main", []*github.TreeEntry{{Path: github.String(".github/workflows/ci.yml")}}, "rm ci")
	_, _, err := narrow.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("heads/main"), Object: &github.GitObject{SHA: again.SHA}}, false)
	wantStatus(t, err, http.StatusForbidden)
}
