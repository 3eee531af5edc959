package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// What counts as ignored when the change is collected comes from the
// pinned commit's .gitignore files, read from the supervisor's private
// repository, never from the workspace the agent left: an agent's
// .gitignore (or a .git/info/exclude it wrote) could otherwise hide a file
// verify used from the change. The files are turned into one exclude file
// for `git ls-files --others --exclude-from`, which reads no per-directory
// file, no info/exclude and no core.excludesFile.

// baseEntry is one entry of the pinned commit's tree.
type baseEntry struct {
	mode string
	blob string
	size int64 // -1 for a gitlink
}

// maxIgnoreFileBytes bounds one .gitignore of the pinned commit that is
// read; git itself ignores larger ones (100 MB), a repository's are tiny.
const maxIgnoreFileBytes = 1 << 20

// baseTree lists the pinned commit's tree: path to entry.
func baseTree(ctx context.Context, g *git, w *workspace, sha string) (map[string]baseEntry, error) {
	out, err := w.private(ctx, g, nil, nil, "ls-tree", "-r", "-z", "-l", "--full-tree", sha)
	if err != nil {
		return nil, err
	}
	tree := map[string]baseEntry{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		// "<mode> SP <type> SP <object> SP+ <size> TAB <path>"
		head, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(head)
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("unexpected git ls-tree output %q", rec)
		}
		size := int64(-1)
		if f[3] != "-" {
			if size, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				return nil, fmt.Errorf("unexpected git ls-tree size %q", f[3])
			}
		}
		tree[p] = baseEntry{mode: f[0], blob: f[2], size: size}
	}
	return tree, nil
}

// writeBaseExcludes writes baseExcludes for sha to a file of the private
// repository and returns its path, and sha's tree.
func writeBaseExcludes(ctx context.Context, g *git, w *workspace, sha string) (string, map[string]baseEntry, error) {
	tree, err := baseTree(ctx, g, w, sha)
	if err != nil {
		return "", nil, fmt.Errorf("listing the pinned commit: %w", err)
	}
	rules, err := baseExcludes(ctx, g, w, tree)
	if err != nil {
		return "", nil, err
	}
	excludeFile := filepath.Join(w.gitDir, "info", "inspect-exclude")
	if err := os.WriteFile(excludeFile, rules, 0o600); err != nil {
		return "", nil, err
	}
	return excludeFile, tree, nil
}

// baseExcludes is the pinned commit's .gitignore files as one exclude
// file, each pattern rewritten to be relative to the top of the tree, in
// git's order of precedence (a deeper file's patterns come later and win).
func baseExcludes(ctx context.Context, g *git, w *workspace, tree map[string]baseEntry) ([]byte, error) {
	var files []string
	for p, e := range tree {
		// A symlinked .gitignore is not read by git either.
		if (p == ".gitignore" || strings.HasSuffix(p, "/.gitignore")) && (e.mode == "100644" || e.mode == "100755") && e.size <= maxIgnoreFileBytes {
			files = append(files, p)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		di, dj := strings.Count(files[i], "/"), strings.Count(files[j], "/")
		if di != dj {
			return di < dj
		}
		return files[i] < files[j]
	})
	var out bytes.Buffer
	for _, f := range files {
		content, err := catBlob(ctx, g, w, tree[f].blob)
		if err != nil {
			return nil, fmt.Errorf("reading the pinned commit's %s: %w", f, err)
		}
		dir := path.Dir(f)
		if dir == "." {
			dir = ""
		}
		sc := bufio.NewScanner(bytes.NewReader(content))
		sc.Buffer(make([]byte, 0, 4096), maxIgnoreFileBytes+1)
		for sc.Scan() {
			if line, ok := rebaseIgnorePattern(dir, sc.Text()); ok {
				out.WriteString(line)
				out.WriteByte('\n')
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("reading the pinned commit's %s: %w", f, err)
		}
	}
	return out.Bytes(), nil
}

// rebaseIgnorePattern rewrites one line of dir/.gitignore (dir "" for the
// top) as a pattern relative to the top of the tree, following
// gitignore(5): a pattern with a slash at its start or middle is relative
// to its file's directory, one without matches at any depth below it.
// Blank lines and comments are dropped.
func rebaseIgnorePattern(dir, line string) (string, bool) {
	line = strings.TrimSuffix(line, "\r")
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
		return "", false
	}
	if dir == "" {
		return line, true
	}
	neg := ""
	if strings.HasPrefix(line, "!") {
		neg, line = "!", line[1:]
	}
	body := strings.TrimRight(line, " ")
	body = strings.TrimSuffix(body, "/")
	if strings.Contains(body, "/") {
		return neg + dir + "/" + strings.TrimPrefix(line, "/"), true
	}
	return neg + dir + "/**/" + line, true
}

// catBlob reads one blob of the private repository.
func catBlob(ctx context.Context, g *git, w *workspace, blob string) ([]byte, error) {
	return w.private(ctx, g, nil, nil, "cat-file", "blob", blob)
}

// untrackedFiles lists the workspace's files the pinned commit does not
// track and its .gitignore files do not ignore (a nested repository shows
// as its directory, with a trailing slash), leaving out the excluded
// directories. excludeFile holds baseExcludes.
func untrackedFiles(ctx context.Context, g *git, w *workspace, excludeFile string, exclude []string) ([]string, error) {
	args := []string{"ls-files", "-z", "--others", "--exclude-from=" + excludeFile, "--", ".", ":(exclude)" + inspectDir}
	for _, e := range exclude {
		args = append(args, ":(exclude,literal)"+e)
	}
	out, err := w.private(ctx, g, nil, nil, args...)
	if err != nil {
		return nil, err
	}
	var files []string
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		p, err := r.ReadString(0)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		files = append(files, strings.TrimSuffix(p, "\x00"))
	}
	return files, nil
}
