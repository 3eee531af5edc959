package supervisor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/hostgit"
)

// The supervisor's git. It runs outside the sandbox, as the supervisor, and
// never trusts anything the agent could have written:
//
//   - The repository it fetches into and diffs with (the attempt's "git"
//     directory) lies outside /workspace and is never mounted into the
//     sandbox. The workspace gets its own .git, a local copy the agent may
//     use or wreck as it likes; the supervisor never runs git in it after
//     the agent has started, because an agent-written .git/config
//     (core.fsmonitor, hooks, filters) would run commands as the
//     supervisor.
//   - No user or system configuration is read (GIT_CONFIG_NOSYSTEM,
//     GIT_CONFIG_GLOBAL, an empty HOME), and settings that could run
//     something or reach elsewhere are pinned on the command line.
//   - The read token reaches git only through GIT_CONFIG_* environment
//     variables as an http.extraHeader, for the one fetch: never in argv
//     (visible in ps), a URL (kept in FETCH_HEAD and error messages) or a
//     file.

// git runs git with a controlled environment (runner/internal/hostgit).
type git struct {
	bin  string
	home string // an empty directory: HOME, so no ~/.gitconfig or credential store is read
	path string // PATH, for git's own helpers (git-remote-https)
}

// gitError is a failed git, with its stderr (which the caller redacts
// before it goes anywhere).
type gitError = hostgit.Error

// run runs git in dir with args after the safe configuration, extra
// environment entries and optional stdin, and returns stdout.
func (g *git) run(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, args ...string) ([]byte, error) {
	return hostgit.Git{Bin: g.bin, Home: g.home, Path: g.path}.Run(ctx, dir, extraEnv, stdin, args...)
}

// runPrefix is run for output that may be large: the first keep bytes of
// stdout, and whether there was more (hostgit.Git.RunPrefix).
func (g *git) runPrefix(ctx context.Context, dir string, keep int, args ...string) ([]byte, bool, error) {
	return hostgit.Git{Bin: g.bin, Home: g.home, Path: g.path}.RunPrefix(ctx, dir, nil, nil, keep, args...)
}

// authEnv is the environment that makes git send the read token as GitHub
// documents it, HTTP Basic "x-access-token:<token>", on the fetch only.
func authEnv(token string) []string {
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + basicCredential(token),
	}
}

// basicCredential is the Basic credential for token; it is as secret as the
// token, and the Redactor is taught it too.
func basicCredential(token string) string {
	return base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
}

// shaGoneError is a pinned commit the remote no longer has (a force-push
// dropped it, or the branch was deleted and collected).
type shaGoneError struct{ err error }

func (e *shaGoneError) Error() string { return e.err.Error() }
func (e *shaGoneError) Unwrap() error { return e.err }

// shaGoneHints are what git prints when a remote refuses or lacks a
// wanted commit.
var shaGoneHints = []string{
	"not our ref",
	"couldn't find remote ref",
	"no such remote ref",
	"unadvertised object",
	"did not send all necessary objects",
	"reference is not a tree",
}

// workspace is one attempt's directories on the host.
type workspace struct {
	dir     string // the attempt's directory: 0711 so the sandbox uid can reach workspace/
	work    string // dir/workspace: /workspace in the sandbox
	gitDir  string // dir/git: the supervisor's private repository, never mounted
	homeDir string // dir/home: git's empty HOME
	// snapshotGit is the restored snapshot's .git as extracted in the
	// layer cache (the supervisor's, never mounted, never the agent's):
	// the private repository borrows its objects instead of fetching them.
	snapshotGit string
	// driftObjects, when the snapshot has drift layers, is the
	// supervisor's own copy of the object store their packs add, and
	// driftShallow the shallow boundary they set (keepDriftObjects).
	driftObjects string
	driftShallow []byte
}

// The pinned commit is kept under this ref, in the private repository and in
// the workspace's copy.
const pinnedRef = "refs/inspect/pinned"

// newWorkspace creates an attempt directory under root.
func newWorkspace(root, attemptID string) (*workspace, error) {
	dir, err := os.MkdirTemp(root, "inspect-"+attemptID+"-")
	if err != nil {
		return nil, err
	}
	// Others may only traverse it, to reach workspace/, which the sandbox
	// uid owns and no one else may enter (it holds a private repository's
	// files); git/ and home/ stay the supervisor's own.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	w := &workspace{
		dir:     dir,
		work:    filepath.Join(dir, "workspace"),
		gitDir:  filepath.Join(dir, "git"),
		homeDir: filepath.Join(dir, "home"),
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{w.work, 0o700}, {w.gitDir, 0o700}, {w.homeDir, 0o700}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			return nil, err
		}
		if err := os.Chmod(d.path, d.mode); err != nil { // past the umask
			return nil, err
		}
	}
	return w, nil
}

// private runs git on the private repository with the workspace as its
// work tree, from inside the work tree (so pathspecs are relative to it).
func (w *workspace) private(ctx context.Context, g *git, extraEnv []string, stdin io.Reader, args ...string) ([]byte, error) {
	return g.run(ctx, w.work, extraEnv, stdin, append([]string{"--git-dir=" + w.gitDir, "--work-tree=" + w.work}, args...)...)
}

// privatePrefix is private for output that may be large (runPrefix).
func (w *workspace) privatePrefix(ctx context.Context, g *git, keep int, args ...string) ([]byte, bool, error) {
	return g.runPrefix(ctx, w.work, keep, append([]string{"--git-dir=" + w.gitDir, "--work-tree=" + w.work}, args...)...)
}

// fetch fills the workspace with the pinned commit of cloneURL, fetched with
// token, and gives it its own .git at that commit with no remote and no
// credential. A commit the remote no longer has is a *shaGoneError.
func (w *workspace) fetch(ctx context.Context, g *git, cloneURL, sha, token string) error {
	_, err := w.fetchOnto(ctx, g, cloneURL, sha, token, "")
	return err
}

// fetchOnto is fetch for a workspace that may already hold a restored
// snapshot at commit base ("" for none): the objects base has are taken
// from the workspace's own .git, so the remote sends only what changed
// since: the commits made since base's commit time and their new objects
// (nothing at all when sha is base), and
// the files are moved from base's tree to sha's, deleting what sha
// deleted and keeping untracked files (caches such as node_modules). It
// returns how many commits sha is ahead of base.
func (w *workspace) fetchOnto(ctx context.Context, g *git, cloneURL, sha, token, base string) (drift int, err error) {
	if _, err := g.run(ctx, w.dir, nil, nil, "--git-dir="+w.gitDir, "init", "--quiet"); err != nil {
		return 0, err
	}
	if _, err := w.private(ctx, g, nil, nil, "config", "core.bare", "false"); err != nil {
		return 0, err
	}
	if err := neutralAttributes(w.gitDir); err != nil {
		return 0, err
	}
	depth := []string{"--depth=1"}
	if base != "" {
		// The snapshot's commit, as a "have" for the remote fetch: its
		// objects borrowed from the layer cache, its shallow boundary
		// copied, a ref naming it. No copy and no fetch.
		if err := w.borrowSnapshotObjects(); err != nil {
			return 0, fmt.Errorf("reading the snapshot's commit: %w", err)
		}
		if _, err := w.private(ctx, g, nil, nil, "update-ref", "refs/inspect/snapshot", base); err != nil {
			return 0, fmt.Errorf("reading the snapshot's commit: %w", err)
		}
		if _, err := w.private(ctx, g, nil, nil, "read-tree", base); err != nil {
			return 0, fmt.Errorf("reading the snapshot's tree: %w", err)
		}
		// Stat data for the restored files, so the checkout below rewrites
		// only what the drift changed (and an overlay copies up only that).
		// Files that differ are left for the checkout: the exit status says
		// so, and is not an error here.
		_, _ = w.private(ctx, g, nil, nil, "update-index", "-q", "--refresh")
		// Only the history after the snapshot's commit: with base as a
		// "have", the remote sends just what those commits brought.
		out, err := w.private(ctx, g, nil, nil, "log", "-1", "--format=%ct", base)
		if err != nil {
			return 0, fmt.Errorf("reading the snapshot's commit time: %w", err)
		}
		depth = []string{"--shallow-since=" + strings.TrimSpace(string(out))}
	}
	if sha != base {
		err = w.fetchRemote(ctx, g, cloneURL, sha, token, depth)
		if err != nil && base != "" {
			// History older than the snapshot (a rebase, a clock that
			// ran back) selects no commit since: fetch the commit alone;
			// the drift then counts what it can.
			err = w.fetchRemote(ctx, g, cloneURL, sha, token, []string{"--depth=1"})
		}
	}
	if err != nil {
		return 0, err
	}
	if _, err := w.private(ctx, g, nil, nil, "cat-file", "-e", sha+"^{commit}"); err != nil {
		return 0, &shaGoneError{fmt.Errorf("the fetch did not bring it: %w", err)}
	}
	if base != "" {
		out, err := w.private(ctx, g, nil, nil, "rev-list", "--count", sha, "^"+base)
		if err != nil {
			return 0, fmt.Errorf("counting the snapshot's drift: %w", err)
		}
		if drift, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			return 0, fmt.Errorf("counting the snapshot's drift: %q", out)
		}
	}
	if _, err := w.private(ctx, g, nil, nil, "update-ref", pinnedRef, sha); err != nil {
		return 0, err
	}
	if base != "" && sha == base {
		// Pinned at the snapshot's own commit: the restored files and the
		// restored .git (made by the snapshot build exactly as below) are
		// already what a checkout would give, but for the index, which no
		// layer carries (it is volatile): without one, git in the
		// workspace would call every file deleted. The private
		// repository's, read from the same commit and refreshed against
		// these files above, is that index.
		return 0, copyIndex(filepath.Join(w.gitDir, "index"), filepath.Join(w.work, ".git"))
	}
	if _, err := w.private(ctx, g, nil, nil, "checkout", "--quiet", "--force", "--detach", sha); err != nil {
		return 0, err
	}
	// The workspace's own .git, for the agent: a local, shallow copy of the
	// pinned commit, detached, with no remote configured. A restored
	// snapshot's .git is replaced, so the agent sees the same either way.
	if err := w.ownGit(ctx, g, w.work, sha); err != nil {
		return 0, err
	}
	return drift, nil
}

// ownGit gives the tree at dir a .git of its own (replacing any): a
// local, shallow copy of the pinned commit sha from the private
// repository, detached, with no remote configured, its index matching
// sha's tree.
func (w *workspace) ownGit(ctx context.Context, g *git, dir, sha string) error {
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, nil, nil, "init", "--quiet"); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, nil, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--depth=1", w.gitDir, pinnedRef+":"+pinnedRef); err != nil {
		return err
	}
	if _, err := g.run(ctx, dir, nil, nil, "update-ref", "--no-deref", "HEAD", sha); err != nil {
		return err
	}
	_, err := g.run(ctx, dir, nil, nil, "reset", "--quiet")
	return err
}

// neutralAttributes writes the private repository's info/attributes,
// which outranks every .gitattributes of the tree: no filter, no end-of-
// line conversion, no ident expansion, no diff driver (binary is decided by
// content), so what the supervisor's git checks out, stages and diffs is
// the blobs' bytes whatever the pinned commit or the agent put in a
// .gitattributes.
func neutralAttributes(gitDir string) error {
	dir := filepath.Join(gitDir, "info")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "attributes"), []byte(neutralAttributeLine), 0o600)
}

// neutralAttributeLine unsets (-) or unspecifies (!) every attribute git
// acts on when it reads or writes a work tree or diffs.
const neutralAttributeLine = "* -text !eol !crlf -ident !filter !diff !merge !working-tree-encoding !whitespace\n"

// borrowSnapshotObjects points the private repository at the extracted
// snapshot's object store (objects/info/alternates), and at the drift
// layers' objects when there are some, and gives it the shallow boundary
// of all it borrows, so the snapshot's commit is there without a fetch.
//
// That boundary is the union of the workspace layer's and the drifts'
// (issue 35). The drifts' alone is not enough: git takes the refs of an
// alternate's repository as commits it has (core.alternateRefsCommand,
// https://git-scm.com/docs/git-config), so the catch-up fetch and its
// connectivity check walk from the workspace layer's own commit too, and
// without that commit in the boundary they walk into its parents, which no
// layer holds ("Failed to traverse parents of commit …").
func (w *workspace) borrowSnapshotObjects() error {
	if w.snapshotGit == "" {
		return errors.New("no snapshot .git to borrow from")
	}
	objects := filepath.Join(w.snapshotGit, "objects")
	// Lstat: a symlink the image put there must not send git elsewhere.
	if fi, err := os.Lstat(objects); err != nil || !fi.IsDir() {
		return fmt.Errorf("the snapshot has no object store of its own (%v)", err)
	}
	alternates := objects + "\n"
	if w.driftObjects != "" {
		alternates += w.driftObjects + "\n"
	}
	if err := os.WriteFile(filepath.Join(w.gitDir, "objects", "info", "alternates"), []byte(alternates), 0o600); err != nil {
		return err
	}
	shallowFile := filepath.Join(w.snapshotGit, "shallow")
	if fi, err := os.Lstat(shallowFile); err == nil && !fi.Mode().IsRegular() {
		return errors.New("the snapshot's shallow file is not a file")
	}
	layerShallow, err := os.ReadFile(shallowFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// No file is a full history: no boundary of its own. With no drift,
	// driftShallow is nil and the layer's boundary is taken as it is.
	shallow, err := mergeShallow(layerShallow, w.driftShallow)
	if err != nil {
		return err
	}
	if len(shallow) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(w.gitDir, "shallow"), shallow, 0o600)
}

// mergeShallow is the union of shallow files, as git keeps one: each line
// exactly one commit's object name (https://git-scm.com/docs/shallow),
// sorted, without repeats. A line that is not an object name is an error,
// not something to pass on to git.
func mergeShallow(files ...[]byte) ([]byte, error) {
	var commits []string
	for _, f := range files {
		for line := range strings.Lines(string(f)) {
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				continue
			}
			if !contract.IsObjectName(line) {
				return nil, fmt.Errorf("the snapshot's shallow boundary has a line that is not a commit id (%d bytes)", len(line))
			}
			commits = append(commits, line)
		}
	}
	slices.Sort(commits)
	commits = slices.Compact(commits)
	var out strings.Builder
	for _, c := range commits {
		out.WriteString(c + "\n")
	}
	return []byte(out.String()), nil
}

// fetchRemote fetches sha from cloneURL into the private repository with
// token, limited by depth (git fetch options). A commit the remote no
// longer has is a *shaGoneError.
func (w *workspace) fetchRemote(ctx context.Context, g *git, cloneURL, sha, token string, depth []string) error {
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head"}, depth...)
	_, err := w.private(ctx, g, authEnv(token), nil, append(args, cloneURL, sha)...)
	var ge *gitError
	if errors.As(err, &ge) {
		low := strings.ToLower(ge.Stderr)
		for _, h := range shaGoneHints {
			if strings.Contains(low, h) {
				return &shaGoneError{err}
			}
		}
	}
	return err
}

// chownTree gives the workspace to the sandbox's uid and gid, so the agent
// can write to it (a root supervisor only; one running unprivileged runs
// the sandbox as itself).
func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// removeAll removes an attempt's directory. An agent may leave directories
// without write or search permission, which stop an unprivileged
// supervisor's RemoveAll, so those are opened up and the removal retried.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() && d.Type()&os.ModeSymlink == 0 {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// copyIndex puts a copy of the index file src into the .git directory
// gitDir (which must be a real directory), replacing any index there.
func copyIndex(src, gitDir string) error {
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("the workspace's .git is not a directory (%v)", err)
	}
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // every write is checked
	if err := root.Remove("index"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return copyFileIn(root, src, "index", 0o644)
}
