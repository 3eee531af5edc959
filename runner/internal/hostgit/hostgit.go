// Package hostgit runs git on the host for Inspect's own repositories (the
// supervisor's private repository, inspect run's scratch repository), with
// no user or system configuration and every setting that could run code,
// prompt or follow a redirect turned off: nothing in the environment or in
// a repository's config changes what git does or prints.
package hostgit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// SafeConfig is passed before every git command.
var SafeConfig = []string{
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.autocrlf=false",
	"-c", "core.symlinks=true",
	"-c", "core.quotePath=false",
	"-c", "core.untrackedCache=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "init.defaultBranch=main",
	"-c", "submodule.recurse=false",
	"-c", "fetch.recurseSubmodules=false",
	"-c", "http.followRedirects=false", // a redirect must not carry a token elsewhere
	"-c", "protocol.allow=never",
	"-c", "protocol.https.allow=always",
	"-c", "protocol.http.allow=always", // clone URLs are checked by the spec: http only for a local stand-in
	"-c", "protocol.file.allow=always", // local repositories fill each other
}

// Git runs git with a controlled environment.
type Git struct {
	Bin  string // the git binary
	Home string // an empty directory: HOME, so no ~/.gitconfig or credential store is read
	Path string // PATH, for git's own helpers (git-remote-https)
}

// Error is a failed git, with its stderr (which callers redact before it
// goes anywhere).
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

// Error names the git subcommand only: the options before it hold host
// paths, which have no place in a reason shown on GitHub.
func (e *Error) Error() string {
	sub := "git"
	for _, a := range e.Args {
		if !strings.HasPrefix(a, "-") {
			sub = "git " + a
			break
		}
	}
	return fmt.Sprintf("%s: %v: %s", sub, e.Err, strings.TrimSpace(e.Stderr))
}

func (e *Error) Unwrap() error { return e.Err }

// maxStderr bounds the stderr an Error keeps (its end): it ends up in a
// reason.
const maxStderr = 2048

// Run runs git in dir with args after SafeConfig, extra environment
// entries and optional stdin, and returns stdout. A failure is an *Error.
func (g Git) Run(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, args ...string) ([]byte, error) {
	var stdout bytes.Buffer
	err := g.run(ctx, dir, extraEnv, stdin, &stdout, args...)
	return stdout.Bytes(), err
}

// RunPrefix is Run for output that may be large: it keeps the first keep
// bytes of stdout and discards the rest (git still runs to its end), and
// says whether anything was discarded. Memory stays bounded by keep.
func (g Git) RunPrefix(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, keep int, args ...string) (out []byte, more bool, err error) {
	p := &prefixWriter{keep: keep}
	err = g.run(ctx, dir, extraEnv, stdin, p, args...)
	return p.buf.Bytes(), p.more, err
}

// prefixWriter keeps the first keep bytes written to it and notes that
// more came; it never refuses a write, so git is never cut short.
type prefixWriter struct {
	buf  bytes.Buffer
	keep int
	more bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	if room := max(p.keep-p.buf.Len(), 0); n > room {
		p.more = true
		b = b[:room]
	}
	p.buf.Write(b) // a bytes.Buffer's Write returns no error
	return n, nil
}

func (g Git) run(ctx context.Context, dir string, extraEnv []string, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, g.Bin, append(append([]string(nil), SafeConfig...), args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + g.Path,
		"HOME=" + g.Home,
		"XDG_CONFIG_HOME=" + g.Home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"SSH_ASKPASS=/bin/false",
		"GIT_LFS_SKIP_SMUDGE=1",
		"LC_ALL=C",
		"TZ=UTC",
	}, extraEnv...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		se := stderr.String()
		if len(se) > maxStderr {
			se = "…" + se[len(se)-maxStderr:]
		}
		return &Error{Args: args, Stderr: se, Err: err}
	}
	return nil
}
