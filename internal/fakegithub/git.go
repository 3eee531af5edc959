package fakegithub

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Every repository is backed by a real bare git repository, created on
// first use in a temporary directory the Server owns and removes on Close.
// Branches, the contents API, the Git Data API and git over HTTP all read
// and write it, so they agree, and every object id is the one git computes.
//
// git runs through exec.Command with an argv, never a shell, with the
// user's and the system's git configuration ignored, a fixed identity and
// date unless a commit says otherwise, and settings that keep git from
// doing anything in the background (no auto gc, no maintenance).

const (
	zeroSHA      = "0000000000000000000000000000000000000000"
	workflowsDir = ".github/workflows"

	// Commits seeded by SetFile, DeleteFile, CommitFiles and CreateBranch
	// are made by this identity, one second apart from fixtureEpoch, so a
	// test's fixture has the same object ids on every run.
	fixtureName  = "octocat"
	fixtureEmail = "octocat@users.noreply.github.com"
)

var fixtureEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// gitSafeConfig is passed to every git this package runs.
var gitSafeConfig = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.autocrlf=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "commit.gpgSign=false",
	"-c", "protocol.allow=never", // this package's own git never fetches
}

// preReceiveHook is the one hook each bare repository gets. It is a fixed
// text, with nothing from a request in it: git over HTTP tells it whether
// the pusher's token holds "workflows: write" through an environment
// variable, and it refuses, as GitHub does, a push whose new commits change
// anything under .github/workflows/ otherwise.
var preReceiveHook = strings.ReplaceAll(`#!/bin/sh
# Installed by fakegithub. Refuses new commits that change .github/workflows/
# unless the pusher's token holds the workflows permission.
test "$INSPECT_FAKE_ALLOW_WORKFLOWS" = 1 && exit 0
status=0
while read -r old new ref; do
	test "$new" = `+zeroSHA+` && continue
	file=$(git log --no-renames --format= --name-only --root --diff-merges=first-parent "$new" --not --all -- `+workflowsDir+` | head -n 1)
	if test -n "$file"; then
		echo 'refusing to allow a GitHub App to create or update workflow {bt}'"$file"'{bt} without {bt}workflows{bt} permission' >&2
		status=1
	fi
done
exit $status
`, "{bt}", "`")

// repoGitConfig is appended to each bare repository's config.
const repoGitConfig = `[gc]
	auto = 0
[receive]
	autogc = false
[http]
	receivepack = true
[uploadpack]
	allowAnySHA1InWant = true
`

var (
	gitBinOnce sync.Once
	gitBin     string
	gitBinErr  error
)

// gitBinary is the absolute path of git. The stand-in cannot work without
// it, so its absence is a panic with a clear message.
func gitBinary() string {
	gitBinOnce.Do(func() { gitBin, gitBinErr = exec.LookPath("git") })
	if gitBinErr != nil {
		panic(fmt.Sprintf("fakegithub: the git binary is needed: %v", gitBinErr))
	}
	return gitBin
}

// gitRef is one ref of a bare repository.
type gitRef struct {
	sha    string // what the ref points at
	typ    string // that object's type: commit, or tag for an annotated tag
	peeled string // for an annotated tag, the object it tags
}

// commitSHA is the commit a ref ends at.
func (g gitRef) commitSHA() string {
	if g.peeled != "" {
		return g.peeled
	}
	return g.sha
}

// ident is a commit's author or committer.
type ident struct {
	name, email string
	when        time.Time
}

func (id ident) env(role string) []string {
	return []string{
		"GIT_" + role + "_NAME=" + id.name,
		"GIT_" + role + "_EMAIL=" + id.email,
		"GIT_" + role + "_DATE=" + fmt.Sprintf("@%d %s", id.when.Unix(), id.when.Format("-0700")),
	}
}

// gitError is a git command that failed.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, strings.TrimSpace(e.stderr))
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is the exit status of a failed git, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// ensureGitRoot creates the Server's temporary directory. Callers hold s.mu.
func (s *Server) ensureGitRoot() string {
	if s.gitRoot == "" {
		dir, err := os.MkdirTemp("", "fakegithub-")
		if err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
		s.gitRoot = dir
	}
	return s.gitRoot
}

// gitEnv is the whole environment of a git this package runs: no user or
// system configuration, no prompts, the fixture identity unless extra
// overrides it (the last value of a key wins).
func (s *Server) gitEnv(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.gitRoot,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_LITERAL_PATHSPECS=1",
		"LC_ALL=C",
		"TZ=UTC",
	}
	fixture := ident{name: fixtureName, email: fixtureEmail, when: fixtureEpoch}
	env = append(env, fixture.env("AUTHOR")...)
	env = append(env, fixture.env("COMMITTER")...)
	return append(env, extra...)
}

// git runs git on a repo's bare repository and returns its stdout.
// Callers hold s.mu.
func (s *Server) git(r *repoState, stdin []byte, env []string, args ...string) ([]byte, error) {
	dir := s.ensureGit(r)
	return s.runGit(dir, stdin, env, args...)
}

func (s *Server) runGit(gitDir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	var argv []string
	if gitDir != "" {
		argv = append(argv, "--git-dir="+gitDir)
	}
	argv = append(argv, gitSafeConfig...)
	argv = append(argv, args...)
	cmd := exec.Command(gitBinary(), argv...)
	cmd.Dir = s.ensureGitRoot()
	cmd.Env = s.gitEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// mustGit is git for the seeding methods, where a failure is a bug.
func (s *Server) mustGit(r *repoState, stdin []byte, env []string, args ...string) []byte {
	out, err := s.git(r, stdin, env, args...)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %s: %v", r.fullName(), err))
	}
	return out
}

// ensureGit creates the repo's bare repository on first use and returns
// its path. Callers hold s.mu.
func (s *Server) ensureGit(r *repoState) string {
	if r.gitDir != "" {
		return r.gitDir
	}
	root := s.ensureGitRoot()
	dir := filepath.Join(root, "repos", strings.ToLower(r.Owner), strings.ToLower(r.Name)+".git")
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	// An empty template: no sample hooks, no description file.
	if _, err := s.runGit("", nil, nil, "init", "--bare", "--quiet", "--template=", "--initial-branch="+r.DefaultBranch, dir); err != nil {
		panic(fmt.Sprintf("fakegithub: %s: %v", r.fullName(), err))
	}
	cfg, err := os.OpenFile(filepath.Join(dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = cfg.WriteString(repoGitConfig)
		if cerr := cfg.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "hooks", "pre-receive"), []byte(preReceiveHook), 0o755)
	}
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %s: %v", r.fullName(), err))
	}
	r.gitDir = dir
	r.refs = map[string]gitRef{}
	return dir
}

// setHEAD points the bare repository's HEAD at the default branch, which
// is the branch a clone checks out. Callers hold s.mu.
func (s *Server) setHEAD(r *repoState) {
	if r.gitDir != "" {
		s.mustGit(r, nil, nil, "symbolic-ref", "HEAD", "refs/heads/"+r.DefaultBranch)
	}
}

// syncRefs rereads the refs after anything may have moved them, and moves
// the head of every open pull request that follows its branch. Callers
// hold s.mu.
func (s *Server) syncRefs(r *repoState) error {
	if r.gitDir == "" {
		return nil
	}
	out, err := s.git(r, nil, nil, "for-each-ref", "--format=%(objectname) %(objecttype) %(*objectname) %(refname)")
	if err != nil {
		return err
	}
	refs := map[string]gitRef{}
	for line := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 4)
		if len(f) != 4 {
			continue
		}
		refs[f[3]] = gitRef{sha: f[0], typ: f[1], peeled: f[2]}
	}
	r.refs = refs
	for _, it := range r.issues {
		s.followHead(r, it)
	}
	return nil
}

// followHead moves an open, same-repo pull request's head to its branch,
// when the pull follows its branch (every pull made through the API, and
// seeded ones whose head is a real commit or was left empty). A seeded pull
// with a made-up head SHA keeps it. Callers hold s.mu.
func (s *Server) followHead(r *repoState, it *issue) {
	if it.pull == nil || !it.followsHead || it.State != "open" || !sameRepoHead(r, it.pull) {
		return
	}
	if g, ok := r.refs["refs/heads/"+it.pull.HeadRef]; ok {
		it.pull.HeadSHA = g.commitSHA()
	}
}

func sameRepoHead(r *repoState, p *Pull) bool {
	return p.HeadRepoFullName == "" || strings.EqualFold(p.HeadRepoFullName, r.fullName())
}

// branchSHA is a branch's commit, or "". Callers hold s.mu.
func (r *repoState) branchSHA(branch string) string {
	return r.refs["refs/heads/"+strings.TrimPrefix(branch, "refs/heads/")].commitSHA()
}

// branchSHAOrFake is a branch's commit, or for a branch that has no commit
// yet (such as the default branch of a repo nothing was committed to) the
// stable made-up SHA this stand-in always reported for it.
func (r *repoState) branchSHAOrFake(branch string) string {
	if sha := r.branchSHA(branch); sha != "" {
		return sha
	}
	return fakeSHA(r.fullName(), "branch", branch)
}

// isSHA tells a full, lower-case object id.
func isSHA(v string) bool {
	if len(v) != 40 {
		return false
	}
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isHex(v string) bool {
	for _, c := range v {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return v != ""
}

// objectTypes answers each id's object type ("" when the repository does
// not have it), with one git. Callers hold s.mu.
func (s *Server) objectTypes(r *repoState, ids ...string) (map[string]string, error) {
	types := map[string]string{}
	if len(ids) == 0 {
		return types, nil
	}
	var in bytes.Buffer
	for _, id := range ids {
		in.WriteString(id + "\n")
	}
	out, err := s.git(r, in.Bytes(), nil, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, id := range ids {
		if i < len(lines) {
			if name, typ, ok := strings.Cut(lines[i], " "); ok && name == id && typ != "missing" {
				types[id] = typ
			}
		}
	}
	return types, nil
}

// objectType is the type of one object, or "".
func (s *Server) objectType(r *repoState, id string) string {
	if !isSHA(id) {
		return ""
	}
	types, err := s.objectTypes(r, id)
	if err != nil {
		return ""
	}
	return types[id]
}

// resolveCommit turns a ref as the REST API takes it into a commit: empty
// means the default branch; "refs/…" is a full ref; a name is a branch,
// then a tag; a hex string of 4 to 40 digits is a commit id (abbreviated or
// not). A seeded pull request's made-up head SHA names its head branch, as
// it always did. ok is false when nothing matches. Callers hold s.mu.
func (s *Server) resolveCommit(r *repoState, ref string) (sha string, ok bool) {
	if ref == "" {
		ref = r.DefaultBranch
	}
	var names []string
	if strings.HasPrefix(ref, "refs/") {
		names = []string{ref}
	} else {
		names = []string{"refs/heads/" + ref, "refs/tags/" + ref}
	}
	for _, n := range names {
		if g, ok := r.refs[n]; ok {
			return g.commitSHA(), true
		}
	}
	if r.gitDir != "" && len(ref) >= 4 && len(ref) <= 40 && isHex(ref) {
		if out, err := s.git(r, nil, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err == nil {
			return strings.TrimSpace(string(out)), true
		}
	}
	for _, it := range r.issues {
		if it.pull != nil && it.pull.HeadSHA == ref && sameRepoHead(r, it.pull) {
			if sha := r.branchSHA(it.pull.HeadRef); sha != "" {
				return sha, true
			}
		}
	}
	return "", false
}

// lsEntry is one entry of a tree listing.
type lsEntry struct {
	mode, typ, sha string
	size           int64 // blobs only
	path           string
}

// lsTree lists a tree-ish: its entries, or with recursive every entry
// beneath it, trees included, in git's order. Callers hold s.mu.
func (s *Server) lsTree(r *repoState, treeish string, recursive bool) ([]lsEntry, error) {
	args := []string{"ls-tree", "-z", "--long"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	out, err := s.git(r, nil, nil, append(args, treeish)...)
	if err != nil {
		return nil, err
	}
	var entries []lsEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		e := lsEntry{mode: f[0], typ: f[1], sha: f[2], path: name}
		e.size, _ = strconv.ParseInt(f[3], 10, 64)
		entries = append(entries, e)
	}
	return entries, nil
}

// commitTree lists a commit's whole tree, cached by commit id: a commit
// never changes. Callers hold s.mu.
func (s *Server) commitTree(r *repoState, commit string) ([]lsEntry, error) {
	if entries, ok := r.treeCache[commit]; ok {
		return entries, nil
	}
	entries, err := s.lsTree(r, commit, true)
	if err != nil {
		return nil, err
	}
	if r.treeCache == nil {
		r.treeCache = map[string][]lsEntry{}
	}
	r.treeCache[commit] = entries
	return entries, nil
}

// treeDir is a tree being edited: entries by name, each either an object
// id or, once something beneath it was edited, an edited subtree.
type treeDir struct {
	entries map[string]*treeEnt
}

type treeEnt struct {
	mode, typ, sha string
	sub            *treeDir // non-nil: an edited subtree, written by writeTree
}

// readTree loads one level of a tree for editing. An empty id is the
// empty tree. Callers hold s.mu.
func (s *Server) readTree(r *repoState, sha string) (*treeDir, error) {
	d := &treeDir{entries: map[string]*treeEnt{}}
	if sha == "" {
		return d, nil
	}
	entries, err := s.lsTree(r, sha, false)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		d.entries[e.path] = &treeEnt{mode: e.mode, typ: e.typ, sha: e.sha}
	}
	return d, nil
}

// errNoSuchPath is a deletion of a path the tree does not have.
var errNoSuchPath = errors.New("no such path")

// editPath sets (ent non-nil) or deletes (ent nil) the entry at a slash
// separated path, creating directories on the way and replacing anything
// that is not a directory where one is needed. Deleting a path that is not
// there is errNoSuchPath, and changes nothing. Callers hold s.mu.
func (s *Server) editPath(r *repoState, root *treeDir, p string, ent *treeEnt) error {
	parts := strings.Split(p, "/")
	d := root
	for _, name := range parts[:len(parts)-1] {
		e, ok := d.entries[name]
		if !ok || e.typ != "tree" {
			if ent == nil {
				return errNoSuchPath
			}
			e = &treeEnt{mode: "040000", typ: "tree", sub: &treeDir{entries: map[string]*treeEnt{}}}
			d.entries[name] = e
		}
		if e.sub == nil {
			sub, err := s.readTree(r, e.sha)
			if err != nil {
				return err
			}
			e.sub = sub
		}
		d = e.sub
	}
	last := parts[len(parts)-1]
	if ent == nil {
		if _, ok := d.entries[last]; !ok {
			return errNoSuchPath
		}
		delete(d.entries, last)
	} else {
		d.entries[last] = ent
	}
	return nil
}

// lookupPath finds the entry at a path of an edited tree, or nil.
func (s *Server) lookupPath(r *repoState, root *treeDir, p string) (*treeEnt, error) {
	parts := strings.Split(p, "/")
	d := root
	for i, name := range parts {
		e, ok := d.entries[name]
		if !ok {
			return nil, nil
		}
		if i == len(parts)-1 {
			return e, nil
		}
		if e.typ != "tree" {
			return nil, nil
		}
		if e.sub == nil {
			sub, err := s.readTree(r, e.sha)
			if err != nil {
				return nil, err
			}
			e.sub = sub
		}
		d = e.sub
	}
	return nil, nil
}

// writeTree writes an edited tree with git mktree, subtrees first, and
// returns its id. A directory left empty disappears, as git has no empty
// directories; the root may be the empty tree. Callers hold s.mu.
// emptyTreeSHA is git's id of the empty tree.
const emptyTreeSHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

func (s *Server) writeTree(r *repoState, d *treeDir) (string, error) {
	names := make([]string, 0, len(d.entries))
	for name := range d.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var in bytes.Buffer
	for _, name := range names {
		e := d.entries[name]
		if e.sub != nil {
			sha, err := s.writeTree(r, e.sub)
			if err != nil {
				return "", err
			}
			if sha == emptyTreeSHA {
				continue // git keeps no empty directory, nested or not
			}
			e.sha = sha
		}
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", e.mode, e.typ, e.sha, name)
	}
	out, err := s.git(r, in.Bytes(), nil, "mktree", "-z")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// hashBlob writes a blob and returns its id. Callers hold s.mu.
func (s *Server) hashBlob(r *repoState, content []byte) (string, error) {
	out, err := s.git(r, content, nil, "hash-object", "-t", "blob", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// makeCommit writes a commit with git commit-tree. Callers hold s.mu.
func (s *Server) makeCommit(r *repoState, tree string, parents []string, message string, author, committer ident) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	env := append(author.env("AUTHOR"), committer.env("COMMITTER")...)
	out, err := s.git(r, []byte(message), env, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// updateRef moves (or with newSHA zeroSHA deletes) a ref, only if it still
// points at oldSHA (zeroSHA: only if it does not exist), then rereads the
// refs. Callers hold s.mu.
func (s *Server) updateRef(r *repoState, ref, newSHA, oldSHA string) error {
	var err error
	if newSHA == zeroSHA {
		_, err = s.git(r, nil, nil, "update-ref", "-d", ref, oldSHA)
	} else {
		_, err = s.git(r, nil, nil, "update-ref", ref, newSHA, oldSHA)
	}
	if serr := s.syncRefs(r); err == nil {
		err = serr
	}
	return err
}

// workflowChange names the first file under .github/workflows/ that the
// commits new to the repository (reachable from newSHA and from no ref)
// add, change or delete, or "" when they leave the directory alone. It is
// the same test the pre-receive hook makes for a push. Callers hold s.mu.
func (s *Server) workflowChange(r *repoState, newSHA string) (string, error) {
	out, err := s.git(r, nil, nil, "log", "--no-renames", "--format=", "--name-only", "--root",
		"--diff-merges=first-parent", newSHA, "--not", "--all", "--", workflowsDir)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); line != "" {
			return line, nil
		}
	}
	return "", nil
}

// isAncestor tells whether a is an ancestor of b (or b itself).
func (s *Server) isAncestor(r *repoState, a, b string) (bool, error) {
	_, err := s.git(r, nil, nil, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// parsedCommit is a commit object, read with git cat-file.
type parsedCommit struct {
	sha               string
	tree              string
	parents           []string
	author, committer ident
	message           string
	signature         string // a gpgsig header, if the object carries one
	payload           string // the object without its signature
}

// readCommit reads a commit, or answers nil when there is no commit of
// that id. Callers hold s.mu.
func (s *Server) readCommit(r *repoState, sha string) (*parsedCommit, error) {
	if s.objectType(r, sha) != "commit" {
		return nil, nil
	}
	out, err := s.git(r, nil, nil, "cat-file", "commit", sha)
	if err != nil {
		return nil, err
	}
	c := &parsedCommit{sha: sha}
	head, msg, _ := strings.Cut(string(out), "\n\n")
	c.message = msg
	var payload strings.Builder
	var inSig bool
	var sig []string
	for _, line := range strings.Split(head, "\n") {
		if inSig && strings.HasPrefix(line, " ") {
			sig = append(sig, line[1:])
			continue
		}
		inSig = false
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.tree = val
		case "parent":
			c.parents = append(c.parents, val)
		case "author":
			c.author = parseIdent(val)
		case "committer":
			c.committer = parseIdent(val)
		case "gpgsig", "gpgsig-sha256":
			inSig = true
			sig = []string{val}
			continue
		}
		payload.WriteString(line + "\n")
	}
	if sig != nil {
		c.signature = strings.Join(sig, "\n") + "\n"
	}
	c.payload = payload.String() + "\n" + msg
	return c, nil
}

// parseIdent parses "Name <email> 1700000000 +0100".
func parseIdent(v string) ident {
	var id ident
	lt, gt := strings.Index(v, "<"), strings.LastIndex(v, ">")
	if lt < 0 || gt < lt {
		return id
	}
	id.name = strings.TrimSpace(v[:lt])
	id.email = v[lt+1 : gt]
	f := strings.Fields(v[gt+1:])
	if len(f) >= 1 {
		if ts, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			id.when = time.Unix(ts, 0).UTC()
		}
	}
	return id
}

// Seeding: test-side helpers that write real history.

// seedCommit commits changes (path → content; nil content deletes the
// path) onto a branch, as the fixture identity. A branch that does not
// exist yet starts from the default branch, or as a root commit when the
// default branch has no commit either. A change that leaves the tree as it
// was makes no commit (but still creates a missing branch). It returns the
// branch's commit. Callers hold s.mu.
func (s *Server) seedCommit(r *repoState, branch string, changes map[string][]byte, message string) string {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	s.ensureGit(r)
	ref := "refs/heads/" + branch
	old := r.branchSHA(branch)
	parent := old
	if parent == "" {
		parent = r.branchSHA(r.DefaultBranch)
	}
	baseTree := ""
	if parent != "" {
		baseTree = strings.TrimSpace(string(s.mustGit(r, nil, nil, "rev-parse", parent+"^{tree}")))
	}
	root, err := s.readTree(r, baseTree)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	paths := make([]string, 0, len(changes))
	for p := range changes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		clean := strings.Trim(p, "/")
		if !validTreePath(clean) {
			panic(fmt.Sprintf("fakegithub: bad path %q", p))
		}
		content := changes[p]
		if content == nil {
			if err = s.editPath(r, root, clean, nil); errors.Is(err, errNoSuchPath) {
				err = nil // seeding: deleting what is not there is no mistake
			}
		} else {
			mode := "100644"
			if e, _ := s.lookupPath(r, root, clean); e != nil && (e.mode == "100755" || e.mode == "120000") {
				mode = e.mode
			}
			var sha string
			if sha, err = s.hashBlob(r, content); err == nil {
				err = s.editPath(r, root, clean, &treeEnt{mode: mode, typ: "blob", sha: sha})
			}
		}
		if err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	tree, err := s.writeTree(r, root)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	head := parent
	if tree != baseTree || parent == "" {
		var parents []string
		if parent != "" {
			parents = []string{parent}
		}
		fixture := ident{name: fixtureName, email: fixtureEmail, when: fixtureEpoch.Add(time.Duration(r.seeded) * time.Second)}
		r.seeded++
		if head, err = s.makeCommit(r, tree, parents, message, fixture, fixture); err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	if head != old {
		if old == "" {
			old = zeroSHA
		}
		if err := s.updateRef(r, ref, head, old); err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	return head
}

// CommitFiles commits files (path → content) onto a branch of a repo in
// one commit and returns the commit's SHA. A branch that does not exist
// yet starts from the default branch (or as a root commit in an empty
// repo). The commit is made by a fixed fixture identity ("octocat") at a
// fixed date, so fixtures have the same SHAs on every run; it is unsigned.
// Files keep an executable or symlink mode they already had.
func (s *Server) CommitFiles(owner, repo, branch string, files map[string]string, message string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	changes := make(map[string][]byte, len(files))
	for p, content := range files {
		changes[p] = []byte(content)
	}
	if message == "" {
		message = "Update files"
	}
	return s.seedCommit(s.mustRepo(owner, repo), branch, changes, message)
}

// CreateBranch points branch at the commit fromRef names (a branch, a tag
// or a SHA; "" is the default branch) and returns that commit's SHA. A
// branch that exists is moved. In a repo with no commit at all, it first
// makes an empty root commit on the default branch. Naming a ref that does
// not exist is a panic.
func (s *Server) CreateBranch(owner, repo, branch, fromRef string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(owner, repo)
	s.ensureGit(r)
	if len(r.refs) == 0 && (fromRef == "" || fromRef == r.DefaultBranch) {
		s.seedCommit(r, r.DefaultBranch, nil, "Initial commit")
	}
	sha, ok := s.resolveCommit(r, fromRef)
	if !ok {
		panic(fmt.Sprintf("fakegithub: %s has no ref %q", r.fullName(), fromRef))
	}
	branch = strings.TrimPrefix(branch, "refs/heads/")
	old := r.branchSHA(branch)
	if old == "" {
		old = zeroSHA
	}
	if old != sha {
		if err := s.updateRef(r, "refs/heads/"+branch, sha, old); err != nil {
			panic(fmt.Sprintf("fakegithub: %v", err))
		}
	}
	return sha
}

// BranchSHA is the commit a branch points at, or "" when the repo has no
// such branch.
func (s *Server) BranchSHA(owner, repo, branch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, repo)
	if r == nil {
		return ""
	}
	return r.branchSHA(branch)
}

// GitDir is the path of the repo's bare git repository (created if it did
// not exist yet), for assertions with the real git. It lives in a
// temporary directory that Close removes. A test that writes to it
// directly should call ResyncRefs afterwards.
func (s *Server) GitDir(owner, repo string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensureGit(s.mustRepo(owner, repo))
}

// ResyncRefs rereads a repo's refs from its bare repository, for a test
// that changed them behind the server's back (with git, in GitDir).
func (s *Server) ResyncRefs(owner, repo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncRefs(s.mustRepo(owner, repo)); err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
}

// refNames lists ref names with a prefix, sorted.
func (r *repoState) refNames(prefix string) []string {
	var names []string
	for n := range r.refs {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}
