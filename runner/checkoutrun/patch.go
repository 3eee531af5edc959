package checkoutrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/hostgit"
)

// The patch is built from the change manifest alone (what the app would
// commit), never from the attempt's workspace: in a scratch repository of
// our own whose object store borrows the user's through
// objects/info/alternates, the pinned commit's tree is read into the
// index, each manifest entry is written over it (update-index, so modes
// and symlinks are exactly the manifest's, with no checkout, filter or
// attribute of the user's repository in the way), and the index is diffed
// against the pinned commit with `git diff --cached --binary`. The patch is
// then checked to apply to that commit with `git apply --cached --check`.
// Nothing is written to the user's repository.

// scratchGit runs git in a scratch repository, reading no user or system
// configuration, so that nothing (diff.noprefix, color.ui, an external diff
// driver) changes the patch's shape.
type scratchGit struct {
	bin  string
	dir  string
	home string
}

func (g *scratchGit) run(ctx context.Context, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	return hostgit.Git{Bin: g.bin, Home: g.home, Path: os.Getenv("PATH")}.Run(ctx, g.dir, env, stdin, args...)
}

// BuildPatch returns the change m makes to its base commit as a git patch
// (`git apply`, or `git am` after adding a header), with binary files
// included; empty when m changes nothing. objectsDir is the object
// directory of a repository that holds m.BaseSHA; it is only read.
func BuildPatch(ctx context.Context, gitBin, objectsDir string, m *contract.Manifest) ([]byte, error) {
	if err := m.Validate(contract.ManifestLimits{}); err != nil {
		return nil, err
	}
	if len(m.Files) == 0 {
		return nil, nil
	}
	if gitBin == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return nil, errors.New("git is not on PATH")
		}
		gitBin = p
	}
	tmp, err := os.MkdirTemp("", "inspect-patch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	g := &scratchGit{bin: gitBin, dir: filepath.Join(tmp, "repo"), home: filepath.Join(tmp, "home")}
	for _, d := range []string{g.dir, g.home, filepath.Join(tmp, "blobs")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	if _, err := g.run(ctx, nil, nil, "init", "--quiet"); err != nil {
		return nil, err
	}
	alternates := filepath.Join(g.dir, ".git", "objects", "info", "alternates")
	if err := os.WriteFile(alternates, []byte(objectsDir+"\n"), 0o600); err != nil {
		return nil, err
	}
	if _, err := g.run(ctx, nil, nil, "cat-file", "-e", m.BaseSHA+"^{commit}"); err != nil {
		return nil, fmt.Errorf("the base commit %s is not in the repository: %w", m.BaseSHA, err)
	}
	if _, err := g.run(ctx, nil, nil, "read-tree", m.BaseSHA); err != nil {
		return nil, err
	}

	// The blobs: one file each, hashed in one git process.
	var names bytes.Buffer
	var written []contract.FileChange
	for _, f := range m.Files {
		if f.Deleted {
			continue
		}
		p := filepath.Join(tmp, "blobs", strconv.Itoa(len(written)))
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			return nil, err
		}
		names.WriteString(p + "\n")
		written = append(written, f)
	}
	var blobs []string
	if len(written) > 0 {
		out, err := g.run(ctx, nil, &names, "hash-object", "-w", "--no-filters", "--stdin-paths")
		if err != nil {
			return nil, err
		}
		blobs = strings.Fields(string(out))
		if len(blobs) != len(written) {
			return nil, fmt.Errorf("git hash-object returned %d ids for %d files", len(blobs), len(written))
		}
	}

	// Deletions first, so that a file may replace a directory it empties.
	var info bytes.Buffer
	zero := strings.Repeat("0", 40)
	for _, f := range m.Files {
		if f.Deleted {
			fmt.Fprintf(&info, "0 %s\t%s\x00", zero, f.Path)
		}
	}
	if info.Len() > 0 {
		if _, err := g.run(ctx, nil, &info, "update-index", "-z", "--index-info"); err != nil {
			return nil, err
		}
	}
	info.Reset()
	for i, f := range written {
		fmt.Fprintf(&info, "%s %s\t%s\x00", f.Mode, blobs[i], f.Path)
	}
	if info.Len() > 0 {
		if _, err := g.run(ctx, nil, &info, "update-index", "--add", "--replace", "-z", "--index-info"); err != nil {
			return nil, err
		}
	}

	patch, err := g.run(ctx, nil, nil, "diff", "--cached", "--binary", "--full-index", "--no-renames",
		"--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/", m.BaseSHA, "--")
	if err != nil {
		return nil, err
	}
	if len(patch) == 0 {
		return nil, nil // the manifest rewrote files with their own content
	}

	// The patch must apply to a clean checkout of the base commit.
	check := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "check-index")}
	if _, err := g.run(ctx, check, nil, "read-tree", m.BaseSHA); err != nil {
		return nil, err
	}
	if _, err := g.run(ctx, check, bytes.NewReader(patch), "apply", "--cached", "--check", "-"); err != nil {
		return nil, fmt.Errorf("the patch does not apply to %s: %w", m.BaseSHA, err)
	}
	return patch, nil
}
