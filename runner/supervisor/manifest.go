package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// The change is found by the supervisor's own git, outside the sandbox,
// without honouring anything the agent could have written to decide it:
//
//   - the private repository's info/attributes neutralises every
//     .gitattributes (neutralAttributes), so nothing is filtered or
//     converted and binary is decided by content;
//   - what is ignored comes from the pinned commit's .gitignore files
//     (baseignore.go), not the workspace's, nor its .git/info;
//   - every file the change would carry is lstat'ed before git reads it
//     (sizecheck.go), so a huge file is refused at once.
//
// Tracked files are staged with `git add --update`, which consults no
// ignore rule, and the untracked files the pinned commit does not ignore
// by name, forced past the workspace's ignore files (.inspect/ and the
// workspace caches left out); then the index is compared with the pinned
// commit. The content and mode of each changed file are read back from the
// blobs git stored, not from the workspace, so a symlink is recorded as a
// symlink (mode 120000, its target as content) and never followed. The
// diffstat and the patch are of the same blobs, with attributes
// neutralised.

// inspectDir is the workspace's directory for the supervisor's files (the
// prompt, the agent's answer). It is never part of a change: a repository's
// own top-level .inspect/ directory is reserved.
const inspectDir = ".inspect"

// changeError is a change the manifest cannot carry: over the session's
// limits, a nested repository, a path the contract refuses. The attempt
// still reports its commands; the manifest is withheld.
type changeError struct{ msg string }

func (e *changeError) Error() string { return e.msg }

// rawChange is one line of `git diff --raw`.
type rawChange struct {
	status  byte // A, M, D or T
	newMode string
	newBlob string
	path    string
}

// collected is a change as collectChange found it: the manifest (nil when
// the change cannot be carried), its diffstat and its patch, redacted
// (nil when nothing changed).
type collected struct {
	manifest *contract.Manifest
	diffstat []contract.ChangedFile
	diff     *contract.Diff
}

// collectChange stages the change (stageChange) and returns it against
// sha as a manifest within limits, its diffstat and its patch (stagedPatch,
// redacted by red), the latter two even when the manifest is refused, so a
// reviewer sees what was refused. verify is the spec's
// verify commands, whose scripts the diffstat flags. artifacts are the
// spec's artifact globs: a file they name is never part of a change, even
// one the agent wrote (decision 0029). exclude are workspace-relative
// directories that are never part of a change (caches inside the
// workspace, which setup fills).
func collectChange(ctx context.Context, g *git, w *workspace, sha string, limits contract.ManifestLimits, verify []contract.Command, artifacts []string, red *contract.Redactor, exclude ...string) (collected, error) {
	var c collected
	maxFiles, maxBytes := limits.MaxFiles, limits.MaxBytes
	if maxFiles <= 0 || maxFiles > contract.HardMaxChangedFiles {
		maxFiles = contract.HardMaxChangedFiles
	}
	if maxBytes <= 0 || maxBytes > contract.HardMaxChangeBytes {
		maxBytes = contract.HardMaxChangeBytes
	}
	if err := stageChange(ctx, g, w, sha, maxBytes, artifacts, exclude); err != nil {
		return c, err
	}
	raw, err := w.private(ctx, g, nil, nil, "diff", "--cached", "--raw", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-abbrev", "-z", sha)
	if err != nil {
		return c, err
	}
	changes, err := parseRaw(raw)
	if err != nil {
		return c, err
	}
	numstat, err := w.private(ctx, g, nil, nil, "diff", "--cached", "--numstat", "--no-renames", "--no-ext-diff", "--no-textconv", "-z", sha)
	if err != nil {
		return c, err
	}
	stats := parseNumstat(numstat)
	if c.diff, err = stagedPatch(ctx, g, w, sha, red, contract.MaxPatchBytes); err != nil {
		return c, err
	}

	c.diffstat = make([]contract.ChangedFile, 0, min(len(changes), contract.HardMaxChangedFiles))
	for _, ch := range changes {
		if len(c.diffstat) == contract.HardMaxChangedFiles {
			break
		}
		if contract.ValidatePath(ch.path) != nil {
			continue // reported below; the diffstat must stay valid
		}
		st := stats[ch.path]
		cf := contract.ChangedFile{
			Path:         ch.path,
			Status:       contract.ChangeModified,
			Additions:    st.add,
			Deletions:    st.del,
			Binary:       st.binary,
			Test:         policy.IsTestFile(ch.path), // the one rule, as the PR body flags it (decision 0047)
			VerifyScript: isVerifyScript(ch.path, verify),
		}
		switch ch.status {
		case 'A':
			cf.Status = contract.ChangeAdded
		case 'D':
			cf.Status = contract.ChangeDeleted
		}
		c.diffstat = append(c.diffstat, cf)
	}

	if len(changes) > maxFiles {
		return c, &changeError{fmt.Sprintf("the change touches %d files, more than the %d this session allows", len(changes), maxFiles)}
	}
	for _, ch := range changes {
		if err := contract.ValidatePath(ch.path); err != nil {
			return c, &changeError{fmt.Sprintf("the change has a path a manifest cannot carry (%v): %s", err, contract.CleanProgressMessage(ch.path))}
		}
		if ch.status != 'D' && ch.newMode == "160000" {
			return c, &changeError{"the change adds a nested git repository at " + ch.path + ", which a manifest cannot carry"}
		}
	}

	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: sha}
	var blobs []string
	for _, ch := range changes {
		if ch.status != 'D' {
			blobs = append(blobs, ch.newBlob)
		}
	}
	contents, err := readBlobs(ctx, g, w, blobs, maxBytes)
	if err != nil {
		return c, err
	}
	for _, ch := range changes {
		fc := contract.FileChange{Path: ch.path}
		switch ch.status {
		case 'D':
			fc.Deleted = true
		default:
			fc.Added = ch.status == 'A'
			fc.Mode = contract.FileMode(ch.newMode)
			fc.Content = contents[ch.newBlob]
		}
		m.Files = append(m.Files, fc)
	}
	m.Normalize()
	if err := m.Validate(limits); err != nil {
		return c, &changeError{err.Error()}
	}
	c.manifest = m
	return c, nil
}

// stageChange stages the change into the private index: tracked files
// (modified, deleted, their mode changed) and the untracked files the
// pinned commit's .gitignore files do not ignore, after their sizes passed;
// never a file the artifact globs name.
func stageChange(ctx context.Context, g *git, w *workspace, sha string, maxBytes int64, artifacts, exclude []string) error {
	excludeFile, tree, err := writeBaseExcludes(ctx, g, w, sha)
	if err != nil {
		return err
	}
	listed, err := untrackedFiles(ctx, g, w, excludeFile, exclude)
	if err != nil {
		return fmt.Errorf("listing the workspace's new files: %w", err)
	}
	untracked := listed[:0]
	for _, p := range listed {
		if !contract.MatchArtifact(artifacts, p) {
			untracked = append(untracked, p)
		}
	}
	for _, p := range untracked {
		if strings.HasSuffix(p, "/") { // git lists a nested repository as its directory
			return &changeError{"the change adds a nested git repository at " + contract.CleanProgressMessage(strings.TrimSuffix(p, "/")) + ", which a manifest cannot carry"}
		}
	}
	excluded := func(p string) bool {
		for _, e := range append([]string{inspectDir}, exclude...) {
			if p == e || strings.HasPrefix(p, e+"/") {
				return true
			}
		}
		return contract.MatchArtifact(artifacts, p)
	}
	if err := checkChangeSizes(ctx, w.work, tree, untracked, excluded, maxBytes); err != nil {
		return err
	}
	update := []string{"add", "--update", "--", ".", ":(exclude)" + inspectDir}
	for _, e := range exclude {
		update = append(update, ":(exclude,literal)"+e)
	}
	for p := range tree {
		if contract.MatchArtifact(artifacts, p) {
			update = append(update, ":(exclude,literal)"+p)
		}
	}
	if _, err := w.private(ctx, g, nil, nil, update...); err != nil {
		return fmt.Errorf("staging the workspace: %w", err)
	}
	if len(untracked) == 0 {
		return nil
	}
	// Literal paths, forced: the workspace's own ignore files have no say.
	list := strings.Join(untracked, "\x00") + "\x00"
	if _, err := w.private(ctx, g, []string{"GIT_LITERAL_PATHSPECS=1"}, strings.NewReader(list), "add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return fmt.Errorf("staging the workspace's new files: %w", err)
	}
	return nil
}

// parseRaw reads `git diff --raw --no-abbrev -z`: for each file
// ":oldmode newmode oldsha newsha status\0path\0".
func parseRaw(out []byte) ([]rawChange, error) {
	var changes []rawChange
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		head := strings.Fields(strings.TrimPrefix(string(fields[i]), ":"))
		if len(head) != 5 || head[4] == "" {
			return nil, fmt.Errorf("unexpected git diff --raw output %q", fields[i])
		}
		c := rawChange{status: head[4][0], newMode: head[1], newBlob: head[3], path: string(fields[i+1])}
		switch c.status {
		case 'A', 'M', 'D', 'T':
		default:
			return nil, fmt.Errorf("unexpected change status %q for %q", head[4], c.path)
		}
		changes = append(changes, c)
	}
	return changes, nil
}

type lineStat struct {
	add, del int
	binary   bool
}

// parseNumstat reads `git diff --numstat -z`: "add\tdel\tpath\0", with "-"
// for both counts of a binary file.
func parseNumstat(out []byte) map[string]lineStat {
	stats := map[string]lineStat{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		parts := strings.SplitN(string(rec), "\t", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "-" {
			stats[parts[2]] = lineStat{binary: true}
			continue
		}
		a, _ := strconv.Atoi(parts[0])
		d, _ := strconv.Atoi(parts[1])
		stats[parts[2]] = lineStat{add: a, del: d}
	}
	return stats
}

// readBlobs reads the given blobs from the private repository, refusing more
// than maxBytes in all before reading any content.
func readBlobs(ctx context.Context, g *git, w *workspace, blobs []string, maxBytes int64) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(blobs) == 0 {
		return out, nil
	}
	list := strings.Join(blobs, "\n") + "\n"
	sizes, err := w.private(ctx, g, nil, strings.NewReader(list), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return nil, err
	}
	var total int64
	seen := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(sizes)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("unexpected git cat-file output %q", line)
		}
		n, _ := strconv.ParseInt(f[2], 10, 64)
		if !seen[f[0]] {
			total += n
		}
		seen[f[0]] = true
	}
	if total > maxBytes {
		return nil, &changeError{fmt.Sprintf("the change writes %d bytes, more than the %d this session allows", total, maxBytes)}
	}
	data, err := w.private(ctx, g, nil, strings.NewReader(list), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(data))
	for range blobs {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading git cat-file --batch: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected git cat-file header %q", header)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("unexpected git cat-file header %q", header)
		}
		content := make([]byte, n)
		if _, err := io.ReadFull(r, content); err != nil {
			return nil, fmt.Errorf("reading blob %s: %w", f[0], err)
		}
		if b, err := r.ReadByte(); err != nil || b != '\n' {
			return nil, errors.New("git cat-file --batch: missing newline after a blob")
		}
		out[f[0]] = content
	}
	return out, nil
}

// isVerifyScript reports whether a verify command names p as its program or
// an argument ("./scripts/check.sh", "scripts/check.sh" or
// "/workspace/scripts/check.sh"): the agent changed what verifies it.
func isVerifyScript(p string, verify []contract.Command) bool {
	for _, c := range verify {
		for i, a := range c.Argv {
			if i == 0 && !strings.Contains(a, "/") {
				continue // a program looked up on PATH, not a file of the repository
			}
			a = strings.TrimPrefix(a, "/workspace/")
			if a != "" && path.Clean(a) == p {
				return true
			}
		}
	}
	return false
}
