package checkoutrun

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/supervisor"
)

func TestMain(m *testing.M) {
	if err := sandbox.Available(); err != nil {
		// Fail, never skip: the sandbox is the point of `inspect run`.
		fmt.Fprintf(os.Stderr, "runner/checkoutrun tests need a working bubblewrap: %v\nRun .ci/ensure-bubblewrap from the repository root, then test again.\n", err)
		os.Exit(1)
	}
	if _, err := exec.LookPath("go"); err != nil {
		fmt.Fprintln(os.Stderr, "the go tool is needed on PATH")
		os.Exit(1)
	}
	// The agent runs under `inspect runner forward`: this test binary is
	// not inspect.
	sandboxtest.MainWithForwarder(m, func(path, goCache string) {
		forwarder = path
		supervisor.UseSharedGoCache(goCache)
	})
}

// forwarder is the inspect binary the sandbox's egress forwarder runs.
var forwarder string

// lockedBuffer is a bytes.Buffer safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testGit runs git with no user or system configuration and a fixed
// identity, and fails the test on error.
func testGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := testGitErr(dir, nil, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func testGitErr(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(withoutGitEnv(os.Environ()),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// newRepo commits files into a new repository on branch main and returns
// its directory and the commit.
func newRepo(t testing.TB, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	testGit(t, dir, "init", "--quiet", "--initial-branch=main")
	writeFiles(t, dir, files)
	testGit(t, dir, "add", "--all")
	testGit(t, dir, "commit", "--quiet", "--message", "seed")
	return dir, strings.TrimSpace(testGit(t, dir, "rev-parse", "HEAD"))
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// workDir is a directory for attempt workspaces that the sandbox's uid can
// reach (t.TempDir's parents are 0700).
func workDir(t testing.TB) string {
	t.Helper()
	return sandboxtest.ReachableDir(t)
}

// options are the options of a test session on repo.
func options(t *testing.T, repo string, progress *lockedBuffer) Options {
	out := t.TempDir()
	return Options{
		RepoDir:         repo,
		Instructions:    "make TestAdd pass",
		PatchFile:       filepath.Join(out, "change.patch"),
		EvidenceFile:    filepath.Join(out, "evidence.json"),
		WorkDir:         workDir(t),
		RunnerVersion:   "test",
		ForwarderBinary: forwarder,
		Progress:        progress,
		Log:             zerolog.New(zerolog.NewTestWriter(t)),
	}
}
