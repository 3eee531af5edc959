// Package sandbox runs one command inside a bubblewrap (bwrap) sandbox: the
// sandbox the supervisor (`inspect runner`) starts for the agent and for the
// verify commands. See docs/ARCHITECTURE.md ("Run", "Executors →
// Privileges", "Security model") and shared/notes/sandbox.md.
//
// What the command gets, and nothing else:
//   - its own user, PID, network (loopback only), IPC, UTS and cgroup
//     namespaces (--unshare-all), with nested user namespaces refused
//     (--disable-userns) and no capabilities (--cap-drop ALL); or, Within
//     a session's Environment, that environment's network and IPC
//     namespaces, shared with the session's other commands, and its own
//     (nested) user, PID, UTS and cgroup namespaces (environment_linux.go,
//     decision 0025)
//   - a read-only toolchain: the host's /usr (with /bin, /sbin, /lib… as the
//     host has them), or an extracted image root (Spec.RootFS)
//   - single files from /etc, read-only (Spec.EtcFiles)
//   - a fresh /proc showing only the sandbox's processes, a minimal /dev and
//     an empty /tmp; no /sys, no /home, no /root, no /run beyond what
//     Spec.ExtraMounts puts there
//   - /workspace, read-write, as its working directory
//   - exactly the environment in Spec.Env (--clearenv first)
//   - a root directory that is itself read-only (--remount-ro /), so only
//     /workspace, /tmp and writable extra mounts take writes
//
// The root trap: bwrap started by root maps the sandboxed user to host root
// whatever --uid says, so a root supervisor drops to Spec.UID/GID (with no
// supplementary groups) before it execs bwrap, and Run refuses uid or gid 0.
// An unprivileged supervisor runs bwrap as itself.
//
// Killing: the sandbox's first process (bwrap's own init, PID 1 of the new
// PID namespace) is tracked by a pidfd. When it dies the kernel kills
// everything else in the namespace before it lets the init finish exiting,
// so Run kills that init and waits for it to exit, which proves that no
// process of the sandbox (setsid'd, double-forked or otherwise) is left. Run
// does this on a timeout, on cancellation, and also after a normal exit,
// because bwrap itself returns as soon as the command exits while
// background children would otherwise linger until bwrap's --die-with-parent
// signal reaches them.
//
// Secrets: bwrap's options (mounts and --setenv values) are not put on its
// command line but handed to it on a file descriptor (--args), so neither a
// host `ps` nor the sandbox's own /proc/1/cmdline shows host paths or
// environment values. The command's argv (Spec.Argv) is necessarily visible
// in both. bwrap itself is started with an empty environment: --clearenv
// only clears the command's environment, and the sandbox can read bwrap's
// (its PID 1's) /proc/1/environ. None of this is a place for a credential:
// the sandbox holds none, by design.
package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Fixed paths and names inside the sandbox.
const (
	WorkspaceDir = "/workspace"
	Hostname     = "inspect-sandbox"
)

// Mount binds one host path into the sandbox.
type Mount struct {
	// Source is the absolute host path. It must be reachable by the
	// sandbox's uid (search permission on every parent directory), since
	// bwrap already runs as that uid; a Unix socket must also be writable by
	// it for a connect to succeed.
	Source string
	// Target is the absolute, clean path inside the sandbox. Missing parents
	// are created, except under a read-only toolchain or image directory,
	// where the target must already exist.
	Target   string
	ReadOnly bool
	// MakeMountPoint lets Target be missing under a top-level directory of
	// RootFS (the tools image at /opt/inspect/tools in a root with its own
	// /opt): that directory is then made in the sandbox's root instead of
	// bound, and each of its entries is bound into it read-only (symlinks
	// recreated), so the image's /opt is all there and the mount has a
	// point to go. Without it such a target must exist in the image.
	MakeMountPoint bool
	// File says Source is not a directory (a regular file or a socket).
	// bwrap binds either kind alike; the flag is checked against Source so a
	// directory bound where a file was meant (or the reverse) is an error
	// before anything runs.
	File bool
}

// Spec is one command to run in a fresh sandbox.
type Spec struct {
	// Workspace is the host directory bound read-write at /workspace, the
	// command's working directory. The caller makes it writable by UID.
	Workspace string
	// RootFS, when set, is an extracted image root: each of its top-level
	// entries is bound read-only at the same path (directories and files) or
	// recreated (symlinks), except proc, dev, sys, tmp, run and workspace,
	// which the sandbox always gets fresh (or never). When empty, the host's
	// toolchain is bound read-only instead: /usr, and /bin, /sbin, /lib,
	// /lib32, /lib64, /libx32 as symlinks or directories as the host has
	// them.
	RootFS string
	// ExtraMounts are bound after everything else, in order: for example the
	// inspect binary (read-only file) and the egress proxy's Unix socket.
	ExtraMounts []Mount
	// EtcFiles are paths relative to /etc (or absolute under /etc) bound
	// read-only from the host's /etc at the same place; a host file that is
	// missing is skipped. nil means DefaultEtcFiles without RootFS, and none
	// with RootFS (the image's own /etc is used); with RootFS each target
	// must exist in the image.
	EtcFiles []string
	// Argv is the command, run with cwd /workspace. Argv[0] is resolved
	// inside the sandbox with the PATH from Env (or /bin:/usr/bin).
	Argv []string
	// Env is the command's entire environment, KEY=VALUE each. bwrap adds
	// PWD=/workspace. Values are data: they are passed with --setenv, never
	// through a shell.
	Env []string
	// UID and GID are the host ids the sandbox runs as. A root supervisor
	// drops to them before it starts bwrap, and 0 is refused. An
	// unprivileged supervisor must pass its own ids.
	UID, GID uint32
	// Timeout is the wall-clock limit; when it expires the whole sandbox is
	// killed and Result.TimedOut is set. Zero means no limit beyond ctx.
	Timeout time.Duration
	// Limits cap the command's memory, processes, CPU share, /tmp and
	// workspace disk use (zero fields: none).
	Limits contract.SandboxLimits
	// Budget, when set, is the session's parent cgroup: the command's
	// cgroup is made inside it, so the command counts against the
	// session's memory and pids beside its own Limits (decision 0058).
	Budget *Budget
	// Within, when set, runs the command inside a session's Environment:
	// it shares the environment's loopback network and IPC with every
	// other command run within it, while its PID namespace, mounts and
	// /tmp stay its own. nil gives the command every namespace its own.
	Within *Environment
	// Stop, when it closes, ends the command gently: every process of the
	// sandbox but its init gets SIGTERM, and the whole sandbox is killed
	// StopGrace later if anything is left (Result.Stopped). It is how a
	// message that interrupts an agent ends its run (decision 0071).
	Stop <-chan struct{}
	// StopGrace is how long a stopped command has to end by itself
	// (DefaultStopGrace when 0).
	StopGrace time.Duration
	// Watch, when set, is told about once a second, from the workspace
	// walk of the disk watch (decision 0031), what the command has written
	// since WatchSince (regular files, by path relative to the workspace,
	// with their sizes; .git and .inspect left out; at most MaxWatchFiles)
	// and the command line of its newest process: a flight recorder for
	// the session's page (decision 0071). It must not block. Nothing runs
	// git or reads a file's content for it.
	Watch      func(WatchReport)
	WatchSince time.Time
	// Stdout and Stderr receive the command's output (nil discards it). The
	// sandbox only ever sees pipes, never the writers' own files. Write
	// errors do not stop the command: the rest of its output is discarded.
	Stdout, Stderr io.Writer
}

// Result is how a command ended.
type Result struct {
	// ExitCode is the command's exit status, or -1 when the sandbox was
	// killed (Signal says by what). bwrap reports a command that died of
	// signal N as status 128+N, as a shell does; ExitCode keeps that value
	// and Signal names N. A command that itself exits with 128+N cannot be
	// told apart from one killed by signal N.
	ExitCode int
	// Signal is the name of the signal that ended the command ("SIGSEGV"),
	// "SIGKILL" when Run killed the sandbox, or "".
	Signal string
	// TimedOut is set when Spec.Timeout expired; Cancelled when ctx was
	// done first.
	TimedOut  bool
	Cancelled bool
	// Stopped is set when Spec.Stop closed before the command ended.
	Stopped bool
	// Limit, when set, is the limit the command ran into; the sandbox was
	// ended because of it (or, for a limit found only at the end, had
	// ended anyway).
	Limit    *LimitExceeded
	Duration time.Duration
}

// WatchReport is what Spec.Watch is told.
type WatchReport struct {
	// Files are the regular files written since Spec.WatchSince, sorted
	// by path; Truncated says there were more than MaxWatchFiles.
	Files     []ChangedFile
	Truncated bool
	// Command is the newest process's command line, its arguments joined
	// by spaces ("" when none was found). It is the sandbox's: untrusted.
	Command string
}

// ChangedFile is one file a command wrote.
type ChangedFile struct {
	Path string
	Size int64
}

// MaxWatchFiles caps WatchReport.Files.
const MaxWatchFiles = 200

// DefaultStopGrace is how long a stopped command has to end after SIGTERM
// before its sandbox is killed.
const DefaultStopGrace = 3 * time.Second

// DefaultEtcFiles are the /etc entries bound when Spec.EtcFiles is nil and
// there is no RootFS: the user and host databases, name-service and TLS
// configuration, the dynamic linker's cache (for libraries outside the
// default directories), Debian's alternatives symlinks (/usr/bin/awk,
// /usr/bin/which… point into them), and the font and Chromium launcher
// settings. None of them holds a secret.
var DefaultEtcFiles = []string{
	"passwd",
	"group",
	"hosts",
	"resolv.conf",
	"nsswitch.conf",
	"ssl/certs/ca-certificates.crt",
	"ld.so.cache",
	"alternatives",
	// Fontconfig's settings and Debian's Chromium launcher settings (its
	// /usr/bin/chromium sources each file there), so a host's headless
	// browser renders text in the sandbox (issue 16).
	"fonts",
	"chromium.d",
}

// hostToolchain are the host's top-level entries bound without RootFS.
var hostToolchain = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// freshTop are top-level names the sandbox gets fresh (proc, dev, tmp,
// workspace) or never (sys, run), whatever an image root holds.
var freshTop = map[string]bool{"proc": true, "dev": true, "sys": true, "tmp": true, "run": true, "workspace": true}

// hostRoot is where the host toolchain is looked up (and bound from).
const hostRoot = "/"

// Args returns bwrap's arguments (without "bwrap" itself) for s: the
// options, "--", then Argv. Untrusted text in Argv and Env stays one argv
// element each. Run passes everything before "--" on a file descriptor
// (--args) and adds --info-fd; Args is for tests and logs.
//
// Args reads the file system: the host toolchain or RootFS layout, which
// /etc files exist, and the mount sources it checks.
func (s Spec) Args() ([]string, error) {
	opts, err := s.options()
	if err != nil {
		return nil, err
	}
	if err := checkArgv(s.Argv); err != nil {
		return nil, err
	}
	args := append(opts, "--")
	return append(args, s.Argv...), nil
}

func checkArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("sandbox: Argv is empty")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("sandbox: Argv[%d] contains a NUL byte", i)
		}
	}
	return nil
}

// options builds everything bwrap parses before "--".
func (s Spec) options() ([]string, error) {
	ws, err := absDir("Workspace", s.Workspace)
	if err != nil {
		return nil, err
	}
	if err := checkLimits(s.Limits); err != nil {
		return nil, err
	}
	opts := append([]string(nil), baseOptions...)
	if s.Within != nil {
		opts = append([]string(nil), sharedOptions...)
	}

	for i, kv := range s.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("sandbox: Env[%d] is not KEY=VALUE", i)
		}
		if strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("sandbox: Env[%d] (%s) contains a NUL byte", i, k)
		}
		opts = append(opts, "--setenv", k, v)
	}

	// The root: the host toolchain or the image's top level, read-only.
	root, names := hostRoot, hostToolchain
	if s.RootFS != "" {
		if root, err = absDir("RootFS", s.RootFS); err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("sandbox: RootFS: %w", err)
		}
		names = nil
		for _, e := range ents {
			if !freshTop[e.Name()] {
				names = append(names, e.Name())
			}
		}
	}
	// A mount whose target is missing under a top-level directory of an
	// image's root (the tools image at /opt/inspect/tools, in a root with
	// its own /opt) gets a mount point: that directory is made in the
	// sandbox's root instead of bound, and its entries are bound into it
	// one by one, read-only as before.
	spread := map[string]bool{}
	if s.RootFS != "" {
		for _, m := range s.ExtraMounts {
			top, rest, _ := strings.Cut(strings.TrimPrefix(m.Target, "/"), "/")
			if !m.MakeMountPoint || rest == "" || !slices.Contains(names, top) || !filepath.IsLocal(top) {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(root, top)); err != nil || !fi.IsDir() {
				continue
			}
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(m.Target, "/")))); errors.Is(err, os.ErrNotExist) {
				spread[top] = true
			}
		}
	}
	rootOpts, bound, err := rootOptions(root, names, spread)
	if err != nil {
		return nil, err
	}
	opts = append(opts, rootOpts...)
	// mustExist reports an error when target lies under a read-only bound
	// entry of root but does not exist there: bwrap could not create its
	// mount point.
	mustExist := func(what, target string) error {
		top, _, _ := strings.Cut(strings.TrimPrefix(target, "/"), "/")
		if !bound[top] {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(root, target)); err != nil {
			return fmt.Errorf("sandbox: %s: %s must already exist under %s, which is bound read-only: %w", what, target, root, err)
		}
		return nil
	}

	etc := s.EtcFiles
	if etc == nil && s.RootFS == "" {
		etc = DefaultEtcFiles
	}
	for _, name := range etc {
		rel := strings.TrimPrefix(name, "/etc/")
		if !filepath.IsLocal(rel) || path.Clean(rel) != rel || strings.ContainsRune(rel, 0) {
			return nil, fmt.Errorf("sandbox: EtcFiles: %q is not a clean path under /etc", name)
		}
		src := filepath.Join("/etc", rel)
		if _, err := os.Stat(src); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("sandbox: EtcFiles: %w", err)
		}
		if err := mustExist("EtcFiles", src); err != nil {
			return nil, err
		}
		opts = append(opts, "--ro-bind", src, src)
	}

	opts = append(opts, "--proc", "/proc", "--dev", "/dev")
	if s.Limits.TmpBytes > 0 {
		opts = append(opts, "--size", strconv.FormatInt(s.Limits.TmpBytes, 10)) // must come just before its --tmpfs
	}
	opts = append(opts,
		"--tmpfs", "/tmp",
		"--bind", ws, WorkspaceDir,
	)

	for i, m := range s.ExtraMounts {
		what := fmt.Sprintf("ExtraMounts[%d]", i)
		if err := m.check(what); err != nil {
			return nil, err
		}
		if err := mustExist(what, m.Target); err != nil {
			return nil, err
		}
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		opts = append(opts, flag, m.Source, m.Target)
	}

	return append(opts,
		"--remount-ro", "/", // the root tmpfs itself; mounts below keep their own flags
		"--chdir", WorkspaceDir,
	), nil
}

// rootOptions binds each top-level name of root read-only at /name, or
// recreates it when it is a symlink; missing names are skipped. A name in
// spread (a directory) is made instead, and its own entries are bound into
// it the same way, so a mount can make its mount point there. bound holds
// the names bound read-only (their contents cannot take new mount points).
func rootOptions(root string, names []string, spread map[string]bool) (opts []string, bound map[string]bool, err error) {
	bound = map[string]bool{}
	for _, name := range names {
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if err == nil && fi.IsDir() && spread[name] {
			ents, err := os.ReadDir(src)
			if err != nil {
				return nil, nil, fmt.Errorf("sandbox: %w", err)
			}
			opts = append(opts, "--perms", "0755", "--dir", "/"+name)
			var sub []string
			for _, e := range ents {
				sub = append(sub, e.Name())
			}
			subOpts, _, err := rootOptions(src, sub, nil)
			if err != nil {
				return nil, nil, err
			}
			for i := 0; i+1 < len(subOpts); i++ {
				// Each option's last operand is the sandbox path /entry:
				// it moves under /name.
				if subOpts[i] == "--ro-bind" || subOpts[i] == "--symlink" {
					subOpts[i+2] = "/" + name + subOpts[i+2]
					i += 2
				}
			}
			opts = append(opts, subOpts...)
			continue
		}
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return nil, nil, fmt.Errorf("sandbox: %w", err)
			}
			opts = append(opts, "--symlink", target, "/"+name)
		case fi.IsDir() || fi.Mode().IsRegular():
			opts = append(opts, "--ro-bind", src, "/"+name)
			bound[name] = true
		}
	}
	return opts, bound, nil
}

func (m Mount) check(what string) error {
	if !filepath.IsAbs(m.Source) || strings.ContainsRune(m.Source, 0) {
		return fmt.Errorf("sandbox: %s: Source %q is not an absolute path", what, m.Source)
	}
	fi, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", what, err)
	}
	if m.File && fi.IsDir() {
		return fmt.Errorf("sandbox: %s: Source %s is a directory but File is set", what, m.Source)
	}
	if !m.File && !fi.IsDir() {
		return fmt.Errorf("sandbox: %s: Source %s is not a directory; set File", what, m.Source)
	}
	t := m.Target
	if !path.IsAbs(t) || path.Clean(t) != t || t == "/" || strings.ContainsRune(t, 0) {
		return fmt.Errorf("sandbox: %s: Target %q is not a clean absolute path below /", what, t)
	}
	for _, p := range []string{"/proc", "/dev", "/sys", "/tmp", WorkspaceDir} {
		if t == p || (p != "/tmp" && strings.HasPrefix(t, p+"/")) {
			return fmt.Errorf("sandbox: %s: Target %s would cover or enter %s", what, t, p)
		}
	}
	return nil
}

func absDir(what, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("sandbox: %s is not set", what)
	}
	if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("sandbox: %s %q is not an absolute path", what, p)
	}
	p = filepath.Clean(p)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("sandbox: %s: %w", what, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("sandbox: %s %s is not a directory", what, p)
	}
	return p, nil
}
