package checkoutrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/inspecthq/inspect/config"
)

// checkout is what checkoutrun reads from the user's repository. It only ever
// reads: nothing in the repository, its index or its .git is written.
type checkout struct {
	dir       string // as given, made absolute
	top       string // the work tree's top level ("" for a bare repository)
	objects   string // the object directory (shared by linked worktrees)
	commonDir string // the repository's common git directory: what git http-backend serves
	head      string // the HEAD commit
	branch    string // the current branch's short name, "" when detached
	dirty     bool   // uncommitted or untracked files, which the session does not see
}

// UserGit runs the user's git on the user's repository, with their own
// configuration (it is their repository, so their safe.directory and the
// like apply), but with no GIT_* variable from our environment that could
// point it elsewhere.
func UserGit(ctx context.Context, bin, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-optional-locks", "-C", dir}, args...)...)
	cmd.Env = append(withoutGitEnv(os.Environ()), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return stdout.Bytes(), errors.New(msg)
	}
	return stdout.Bytes(), nil
}

// withoutGitEnv drops GIT_* variables (GIT_DIR, GIT_INDEX_FILE, ...), which
// a hook or an editor may have set, from env.
func withoutGitEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	return out
}

// openCheckout reads the repository at dir. Its errors are *UsageError: a
// directory that is not a git repository, or one with no commit, is the
// user's to fix.
func openCheckout(ctx context.Context, gitBin, dir string) (*checkout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, usageErrorf("--repo %s: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, usageErrorf("--repo %s: %v", dir, err)
	} else if !fi.IsDir() {
		return nil, usageErrorf("--repo %s is not a directory", dir)
	}
	c := &checkout{dir: abs}
	out, err := UserGit(ctx, gitBin, abs, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-path", "objects")
	if err != nil {
		return nil, usageErrorf("%s is not a git checkout: %v", dir, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("git rev-parse printed %q", out)
	}
	c.commonDir, c.objects = filepath.Clean(lines[0]), filepath.Clean(lines[1])
	out, err = UserGit(ctx, gitBin, abs, "rev-parse", "--verify", "--quiet", "--end-of-options", "HEAD^{commit}")
	if err != nil || len(bytes.TrimSpace(out)) != 40 {
		return nil, usageErrorf("%s has no commit yet: the session runs on HEAD, so commit something first", dir)
	}
	c.head = string(bytes.TrimSpace(out))
	if out, err := UserGit(ctx, gitBin, abs, "symbolic-ref", "--quiet", "--short", "HEAD"); err == nil {
		c.branch = strings.TrimSpace(string(out))
	}
	if out, err := UserGit(ctx, gitBin, abs, "rev-parse", "--is-inside-work-tree"); err == nil && strings.TrimSpace(string(out)) == "true" {
		top, err := UserGit(ctx, gitBin, abs, "rev-parse", "--show-toplevel")
		if err != nil {
			return nil, err
		}
		c.top = strings.TrimSpace(string(top))
		status, err := UserGit(ctx, gitBin, abs, "status", "--porcelain", "-z", "--untracked-files=normal")
		if err != nil {
			return nil, fmt.Errorf("git status: %v", err)
		}
		c.dirty = len(status) > 0
	}
	return c, nil
}

// name is a repository name for the spec: the work tree's (or the bare
// repository's) directory name, reduced to what GitHub allows.
func (c *checkout) name() string {
	base := filepath.Base(c.top)
	if c.top == "" {
		base = strings.TrimSuffix(filepath.Base(c.commonDir), ".git")
	}
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		return "repo"
	}
	if len(s) > 100 {
		s = s[:100]
	}
	return s
}

// repoConfig reads the repository config: file when given (a path on this
// host), else .github/inspect.yml (or .yaml) as committed at HEAD, the
// commit the session runs on. ok is false when there is none.
func (c *checkout) repoConfig(ctx context.Context, gitBin, file string) (cfg config.Repo, source string, ok bool, err error) {
	var data []byte
	if file != "" {
		data, err = os.ReadFile(file)
		if err != nil {
			return config.Repo{}, "", false, usageErrorf("--config: %v", err)
		}
		source = file
	} else {
		for _, p := range config.RepoConfigPaths {
			spec := c.head + ":" + p
			if _, err := UserGit(ctx, gitBin, c.dir, "cat-file", "-e", spec); err != nil {
				continue
			}
			data, err = UserGit(ctx, gitBin, c.dir, "cat-file", "blob", spec)
			if err != nil {
				return config.Repo{}, "", false, fmt.Errorf("reading %s at HEAD: %v", p, err)
			}
			source = p + " at HEAD"
			break
		}
		if source == "" {
			return config.Repo{}, "", false, nil
		}
	}
	cfg, err = config.ParseRepo(data)
	if err != nil {
		return config.Repo{}, "", false, usageErrorf("%s: %v", source, err)
	}
	return cfg, source, true, nil
}
