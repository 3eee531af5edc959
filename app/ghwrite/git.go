package ghwrite

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/contract"
)

// GitData is what CommitManifest needs of *github.GitService.
type GitData interface {
	GetCommit(ctx context.Context, owner, repo, sha string) (*github.Commit, *github.Response, error)
	CreateBlob(ctx context.Context, owner, repo string, blob *github.Blob) (*github.Blob, *github.Response, error)
	CreateTree(ctx context.Context, owner, repo, baseTree string, entries []*github.TreeEntry) (*github.Tree, *github.Response, error)
	GetTree(ctx context.Context, owner, repo, sha string, recursive bool) (*github.Tree, *github.Response, error)
	CreateCommit(ctx context.Context, owner, repo string, commit *github.Commit, opts *github.CreateCommitOptions) (*github.Commit, *github.Response, error)
}

// RefCreator is what EnsureBranch needs of *github.GitService.
type RefCreator interface {
	CreateRef(ctx context.Context, owner, repo string, ref *github.Reference) (*github.Reference, *github.Response, error)
	GetRef(ctx context.Context, owner, repo, ref string) (*github.Reference, *github.Response, error)
}

// RefUpdater is what FastForward needs of *github.GitService.
type RefUpdater interface {
	UpdateRef(ctx context.Context, owner, repo string, ref *github.Reference, force bool) (*github.Reference, *github.Response, error)
}

// CommitManifest builds one tree from files on top of the pinned commit's
// and commits it with message and no author, so GitHub signs it as the
// App's bot. It returns the new commit's SHA. Git objects are content
// addressed, so a replay makes the same objects again, harmlessly; the
// caller records the SHA so that it is made once.
func CommitManifest(ctx context.Context, git GitData, owner, repo, pinnedSHA, message string, files []contract.FileChange) (string, error) {
	base, _, err := git.GetCommit(ctx, owner, repo, pinnedSHA)
	if err != nil {
		return "", fmt.Errorf("reading the pinned commit: %w", err)
	}
	var entries []*github.TreeEntry
	present := baseLookup{git: git, owner: owner, repo: repo,
		dirs: map[string]map[string]bool{}, shas: map[string]string{"": base.GetTree().GetSHA()}}
	for _, f := range files {
		e := &github.TreeEntry{Path: github.String(f.Path), Mode: github.String(string(f.Mode)), Type: github.String("blob")}
		switch {
		case f.Deleted:
			// GitHub fails the whole tree when asked to delete a path that
			// does not exist ("GitRPC::BadObjectState"): a deletion of
			// what the base lacks is already done.
			ok, err := present.has(ctx, f.Path)
			if err != nil {
				return "", err
			}
			if !ok {
				continue
			}
			e.Mode = github.String("100644") // GitHub wants a mode even for a deletion; the null sha deletes
		case utf8.Valid(f.Content):
			e.Content = github.String(string(f.Content))
		default:
			blob, _, err := git.CreateBlob(ctx, owner, repo, &github.Blob{Content: github.String(base64.StdEncoding.EncodeToString(f.Content)), Encoding: github.String("base64")})
			if err != nil {
				return "", fmt.Errorf("creating a blob: %w", err)
			}
			e.SHA = blob.SHA
		}
		entries = append(entries, e)
	}
	tree, _, err := git.CreateTree(ctx, owner, repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("creating the tree: %w", err)
	}
	commit, _, err := git.CreateCommit(ctx, owner, repo, &github.Commit{
		Message: github.String(message),
		Tree:    &github.Tree{SHA: tree.SHA},
		Parents: []*github.Commit{{SHA: github.String(pinnedSHA)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("creating the commit: %w", err)
	}
	return commit.GetSHA(), nil
}

// baseLookup tells which paths the base tree has, reading only the
// directories on the way to the paths asked about, each once: a recursive
// read of a large repository's tree is slow and may come back truncated.
type baseLookup struct {
	git         GitData
	owner, repo string
	// dirs are the directories read, by path ("" the root): each entry's
	// name and whether it is a tree.
	dirs map[string]map[string]bool
	shas map[string]string // directory path → its tree's SHA, as found
}

// has tells whether the base tree has a file (or anything) at path.
func (b *baseLookup) has(ctx context.Context, path string) (bool, error) {
	dir := ""
	parts := strings.Split(path, "/")
	for i, name := range parts {
		entries, err := b.read(ctx, dir)
		if err != nil {
			return false, err
		}
		isTree, ok := entries[name]
		if !ok {
			return false, nil
		}
		if i == len(parts)-1 {
			return true, nil
		}
		if !isTree {
			return false, nil
		}
		dir = strings.TrimPrefix(dir+"/"+name, "/")
	}
	return false, nil
}

// read lists directory dir of the base tree, once.
func (b *baseLookup) read(ctx context.Context, dir string) (map[string]bool, error) {
	if got := b.dirs[dir]; got != nil {
		return got, nil
	}
	tree, _, err := b.git.GetTree(ctx, b.owner, b.repo, b.shas[dir], false)
	if err != nil {
		return nil, fmt.Errorf("reading the pinned commit's tree: %w", err)
	}
	entries := map[string]bool{}
	for _, e := range tree.Entries {
		entries[e.GetPath()] = e.GetType() == "tree"
		if e.GetType() == "tree" {
			b.shas[strings.TrimPrefix(dir+"/"+e.GetPath(), "/")] = e.GetSHA()
		}
	}
	b.dirs[dir] = entries
	return entries, nil
}

// EnsureBranch creates the branch at sha. A branch that exists already is
// accepted only when it points at sha (a replay); it is never moved.
func EnsureBranch(ctx context.Context, git RefCreator, owner, repo, branch, sha string) error {
	_, _, err := git.CreateRef(ctx, owner, repo, &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)}})
	if err == nil {
		return nil
	}
	if !IsStatus(err, http.StatusUnprocessableEntity) {
		return fmt.Errorf("creating branch %s: %w", branch, err)
	}
	ref, _, gerr := git.GetRef(ctx, owner, repo, "heads/"+branch)
	if gerr != nil {
		return fmt.Errorf("creating branch %s: %w", branch, err)
	}
	if ref.GetObject().GetSHA() != sha {
		return fmt.Errorf("branch %s exists and points at %s, not our commit; refusing to move it", branch, ref.GetObject().GetSHA())
	}
	return nil
}

// FastForward moves branch to sha if that is a fast-forward. GitHub's 422
// (not a fast-forward: the branch moved) is ok=false and no error; any
// other error is GitHub's, not wrapped, for the caller to say which
// branch it was. A replay after a fast-forward is a no-op update.
func FastForward(ctx context.Context, git RefUpdater, owner, repo, branch, sha string) (bool, error) {
	_, _, err := git.UpdateRef(ctx, owner, repo, &github.Reference{
		Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: github.String(sha)},
	}, false)
	switch {
	case err == nil:
		return true, nil
	case IsStatus(err, http.StatusUnprocessableEntity):
		return false, nil
	}
	return false, err
}
