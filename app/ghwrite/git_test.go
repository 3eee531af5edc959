package ghwrite

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/contract"
)

// fakeGit is a repository's Git Data API: refs by name, and the calls made.
type fakeGit struct {
	calls     []string
	createErr error // CreateRef's
	refs      map[string]string
	getErr    error
	updateErr error
	blobs     []*github.Blob
	entries   []*github.TreeEntry
	commit    *github.Commit
	failAt    string // the call that fails
	// trees are the base's trees by SHA ("basetree" its root); nil: a
	// root holding gone.txt alone.
	trees map[string][]*github.TreeEntry
}

func (f *fakeGit) GetTree(_ context.Context, _, _, sha string, recursive bool) (*github.Tree, *github.Response, error) {
	if err := f.fail(fmt.Sprintf("GetTree %s recursive=%v", sha, recursive)); err != nil {
		return nil, nil, err
	}
	trees := f.trees
	if trees == nil {
		trees = map[string][]*github.TreeEntry{"basetree": {treeEntry("gone.txt", "blob", "b1")}}
	}
	return &github.Tree{SHA: github.String(sha), Entries: trees[sha]}, nil, nil
}

func treeEntry(path, typ, sha string) *github.TreeEntry {
	return &github.TreeEntry{Path: github.String(path), Type: github.String(typ), SHA: github.String(sha)}
}

func (f *fakeGit) fail(call string) error {
	f.calls = append(f.calls, call)
	if call == f.failAt {
		return errors.New(call + " failed")
	}
	return nil
}

func (f *fakeGit) GetCommit(_ context.Context, _, _, sha string) (*github.Commit, *github.Response, error) {
	if err := f.fail("GetCommit " + sha); err != nil {
		return nil, nil, err
	}
	return &github.Commit{SHA: github.String(sha), Tree: &github.Tree{SHA: github.String("basetree")}}, nil, nil
}

func (f *fakeGit) CreateBlob(_ context.Context, _, _ string, b *github.Blob) (*github.Blob, *github.Response, error) {
	f.blobs = append(f.blobs, b)
	if err := f.fail("CreateBlob"); err != nil {
		return nil, nil, err
	}
	return &github.Blob{SHA: github.String(fmt.Sprintf("blob%d", len(f.blobs)))}, nil, nil
}

func (f *fakeGit) CreateTree(_ context.Context, _, _, base string, entries []*github.TreeEntry) (*github.Tree, *github.Response, error) {
	f.entries = entries
	if err := f.fail("CreateTree " + base); err != nil {
		return nil, nil, err
	}
	return &github.Tree{SHA: github.String("newtree")}, nil, nil
}

func (f *fakeGit) CreateCommit(_ context.Context, _, _ string, c *github.Commit, _ *github.CreateCommitOptions) (*github.Commit, *github.Response, error) {
	f.commit = c
	if err := f.fail("CreateCommit"); err != nil {
		return nil, nil, err
	}
	return &github.Commit{SHA: github.String("newcommit")}, nil, nil
}

func (f *fakeGit) CreateRef(_ context.Context, _, _ string, ref *github.Reference) (*github.Reference, *github.Response, error) {
	f.calls = append(f.calls, "CreateRef "+ref.GetRef()+" "+ref.GetObject().GetSHA())
	return ref, nil, f.createErr
}

func (f *fakeGit) GetRef(_ context.Context, _, _, ref string) (*github.Reference, *github.Response, error) {
	f.calls = append(f.calls, "GetRef "+ref)
	if f.getErr != nil {
		return nil, nil, f.getErr
	}
	return &github.Reference{Ref: github.String("refs/" + ref), Object: &github.GitObject{SHA: github.String(f.refs[ref])}}, nil, nil
}

func (f *fakeGit) UpdateRef(_ context.Context, _, _ string, ref *github.Reference, force bool) (*github.Reference, *github.Response, error) {
	f.calls = append(f.calls, fmt.Sprintf("UpdateRef %s %s force=%v", ref.GetRef(), ref.GetObject().GetSHA(), force))
	return ref, nil, f.updateErr
}

func TestCommitManifestMakesOneTreeAndOneCommitOnThePinnedCommit(t *testing.T) {
	binary := []byte{0xff, 0x00, 0xfe}
	files := []contract.FileChange{
		{Path: "a.go", Mode: contract.ModeFile, Content: []byte("package a\n")},
		{Path: "bin/x", Mode: contract.ModeExecutable, Content: binary},
		{Path: "gone.txt", Mode: contract.ModeExecutable, Deleted: true},
	}
	git := &fakeGit{}
	sha, err := CommitManifest(context.Background(), git, "o", "r", "pinned", "fix it", files)
	if err != nil {
		t.Fatal(err)
	}
	if sha != "newcommit" {
		t.Errorf("sha = %q", sha)
	}
	if want := []string{"GetCommit pinned", "CreateBlob", "GetTree basetree recursive=false", "CreateTree basetree", "CreateCommit"}; !slices.Equal(git.calls, want) {
		t.Errorf("calls %q, want %q", git.calls, want)
	}
	if len(git.blobs) != 1 || git.blobs[0].GetEncoding() != "base64" || git.blobs[0].GetContent() != base64.StdEncoding.EncodeToString(binary) {
		t.Errorf("blobs %+v, want the binary file alone, base64", git.blobs)
	}
	want := []string{
		"a.go 100644 content=\"package a\\n\" sha=",
		"bin/x 100755 content=\"\" sha=blob1",
		"gone.txt 100644 content=\"\" sha=", // a deletion: a mode, no content, the null sha
	}
	var got []string
	for _, e := range git.entries {
		if e.GetType() != "blob" {
			t.Errorf("entry %s has type %q", e.GetPath(), e.GetType())
		}
		got = append(got, fmt.Sprintf("%s %s content=%q sha=%s", e.GetPath(), e.GetMode(), e.GetContent(), e.GetSHA()))
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%q\nwant\n%q", got, want)
	}
	if git.entries[2].Content != nil || git.entries[2].SHA != nil {
		t.Errorf("the deletion carries content or a sha: %+v", git.entries[2])
	}
	c := git.commit
	if c.GetMessage() != "fix it" || c.GetTree().GetSHA() != "newtree" || len(c.Parents) != 1 || c.Parents[0].GetSHA() != "pinned" || c.Author != nil {
		t.Errorf("commit %+v, want the message, the new tree, the pinned parent and no author", c)
	}
}

// TestCommitManifestSendsNoDeletionOfAnAbsentPath: GitHub fails the whole
// tree on one; only the directories on the way are read, each once.
func TestCommitManifestSendsNoDeletionOfAnAbsentPath(t *testing.T) {
	git := &fakeGit{trees: map[string][]*github.TreeEntry{
		"basetree": {treeEntry("docs", "tree", "t-docs"), treeEntry("README", "blob", "b0"), treeEntry("vendor", "tree", "t-vendor")},
		"t-docs":   {treeEntry("a.md", "blob", "b1"), treeEntry("b.md", "blob", "b2")},
	}}
	var files []contract.FileChange
	for _, p := range []string{"docs/a.md", "docs/missing.md", "README/x", "nowhere/deep/x", "docs/b.md", "README", "gone"} {
		files = append(files, contract.FileChange{Path: p, Mode: contract.ModeFile, Deleted: true})
	}
	if _, err := CommitManifest(context.Background(), git, "o", "r", "pinned", "m", files); err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, e := range git.entries {
		sent = append(sent, e.GetPath())
	}
	if want := []string{"docs/a.md", "docs/b.md", "README"}; !slices.Equal(sent, want) {
		t.Errorf("deletions sent %q, want %q", sent, want)
	}
	want := []string{"GetCommit pinned", "GetTree basetree recursive=false", "GetTree t-docs recursive=false", "CreateTree basetree", "CreateCommit"}
	if !slices.Equal(git.calls, want) {
		t.Errorf("calls %q, want %q", git.calls, want)
	}
}

func TestCommitManifestSaysWhichStepFailed(t *testing.T) {
	files := []contract.FileChange{{Path: "bin/x", Mode: contract.ModeFile, Content: []byte{0xff}}}
	for failAt, prefix := range map[string]string{
		"GetCommit pinned":    "reading the pinned commit: ",
		"CreateBlob":          "creating a blob: ",
		"CreateTree basetree": "creating the tree: ",
		"CreateCommit":        "creating the commit: ",
	} {
		git := &fakeGit{failAt: failAt}
		_, err := CommitManifest(context.Background(), git, "o", "r", "pinned", "m", files)
		if err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("failing at %s: error %v, want prefix %q", failAt, err, prefix)
		}
		if git.calls[len(git.calls)-1] != failAt {
			t.Errorf("failing at %s: went on to %q", failAt, git.calls)
		}
	}
}

func TestEnsureBranch(t *testing.T) {
	other := errors.New("boom")
	tests := []struct {
		name      string
		createErr error
		refs      map[string]string
		getErr    error
		wantErr   string // "" for none
		wantCalls []string
	}{
		{name: "created", wantCalls: []string{"CreateRef refs/heads/inspect/1-x ours"}},
		{name: "exists at our commit: a replay", createErr: statusErr(http.StatusUnprocessableEntity), refs: map[string]string{"heads/inspect/1-x": "ours"},
			wantCalls: []string{"CreateRef refs/heads/inspect/1-x ours", "GetRef heads/inspect/1-x"}},
		{name: "exists elsewhere: never moved", createErr: statusErr(http.StatusUnprocessableEntity), refs: map[string]string{"heads/inspect/1-x": "theirs"},
			wantErr:   "branch inspect/1-x exists and points at theirs, not our commit; refusing to move it",
			wantCalls: []string{"CreateRef refs/heads/inspect/1-x ours", "GetRef heads/inspect/1-x"}},
		{name: "exists and cannot be read", createErr: statusErr(http.StatusUnprocessableEntity), getErr: other,
			wantErr:   "creating branch inspect/1-x: 422 Unprocessable Entity []",
			wantCalls: []string{"CreateRef refs/heads/inspect/1-x ours", "GetRef heads/inspect/1-x"}},
		{name: "another error", createErr: other, wantErr: "creating branch inspect/1-x: boom",
			wantCalls: []string{"CreateRef refs/heads/inspect/1-x ours"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := &fakeGit{createErr: tt.createErr, refs: tt.refs, getErr: tt.getErr}
			err := EnsureBranch(context.Background(), git, "o", "r", "inspect/1-x", "ours")
			if got := errText(err); got != tt.wantErr {
				t.Errorf("EnsureBranch error %q, want %q", got, tt.wantErr)
			}
			if !slices.Equal(git.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", git.calls, tt.wantCalls)
			}
			if tt.createErr != nil && tt.wantErr != "" && !strings.Contains(tt.wantErr, "refusing") && !errors.Is(err, tt.createErr) {
				t.Errorf("error %v does not wrap CreateRef's", err)
			}
		})
	}
}

func TestFastForward(t *testing.T) {
	boom := statusErr(http.StatusForbidden)
	tests := []struct {
		name      string
		updateErr error
		wantOK    bool
		wantErr   error
	}{
		{name: "moved", wantOK: true},
		{name: "not a fast-forward", updateErr: statusErr(http.StatusUnprocessableEntity)},
		{name: "another error is GitHub's", updateErr: boom, wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			git := &fakeGit{updateErr: tt.updateErr}
			ok, err := FastForward(context.Background(), git, "o", "r", "feature", "ours")
			if ok != tt.wantOK || err != tt.wantErr {
				t.Errorf("FastForward = %v, %v; want %v, %v", ok, err, tt.wantOK, tt.wantErr)
			}
			if want := []string{"UpdateRef refs/heads/feature ours force=false"}; !slices.Equal(git.calls, want) {
				t.Errorf("calls %q, want %q", git.calls, want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
