package checkoutrun

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/examples"
)

// The prefixes of the credentials the server mints: none may appear in
// anything the run leaves behind.
var credentialPrefixes = []string{"inspect-claim-", "inspect-session-", "inspect-repo-"}

func assertNoCredentials(t *testing.T, what, text string) {
	t.Helper()
	for _, p := range credentialPrefixes {
		if strings.Contains(text, p) {
			t.Errorf("%s holds a credential (%s…)", what, p)
		}
	}
}

// The whole loop on the sample repository: the stand-in agent fixes the
// failing test in the sandbox, `go test -json ./...` verifies it there,
// and the patch makes the test pass on a fresh clone.
func TestRunFixesTheSampleRepository(t *testing.T) {
	t.Parallel()
	repo, sha := newRepo(t, examples.SampleRepo())
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	res, err := Run(ctx, opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	t.Logf("summary:\n%s", summary.String())

	ev := res.Evidence
	if ev.Outcome != contract.OutcomeOK || !res.Passed() || res.ExitCode() != 0 {
		t.Fatalf("outcome %s (%s), exit %d", ev.Outcome, ev.Reason, res.ExitCode())
	}
	if ev.PinnedSHA != sha || res.Spec.PinnedSHA != sha {
		t.Errorf("pinned %s, want HEAD %s", ev.PinnedSHA, sha)
	}
	if ev.Tests == nil || ev.Tests.Passed < 1 || ev.Tests.Failed != 0 {
		t.Errorf("tests = %+v, want passes and no failure", ev.Tests)
	}
	if len(ev.Commands) != 2 || ev.Commands[0].Phase != contract.PhaseAgent || ev.Commands[1].Name != "unit tests" {
		t.Errorf("commands = %+v", ev.Commands)
	}
	if !strings.Contains(ev.FinalAnswer, "Fixed `Add`") {
		t.Errorf("final answer = %q", ev.FinalAnswer)
	}
	if len(res.Problems) > 0 {
		t.Errorf("problems: %q", res.Problems)
	}

	// The patch, as written, applies to a fresh clone and fixes the test.
	patch, err := os.ReadFile(opt.PatchFile)
	if err != nil || !bytes.Equal(patch, res.Patch) || res.PatchFile != opt.PatchFile {
		t.Fatalf("patch file: %v (%d bytes, result has %d)", err, len(patch), len(res.Patch))
	}
	if !bytes.Contains(patch, []byte("diff --git a/calc.go b/calc.go")) {
		t.Errorf("patch:\n%s", patch)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	testGit(t, filepath.Dir(clone), "clone", "--quiet", repo, clone)
	goTest := exec.Command("go", "test", "./...")
	goTest.Dir = clone
	if out, err := goTest.CombinedOutput(); err == nil {
		t.Fatalf("the sample's test passes before the patch: the test proves nothing\n%s", out)
	}
	testGit(t, clone, "apply", "--check", opt.PatchFile)
	testGit(t, clone, "apply", opt.PatchFile)
	goTest = exec.Command("go", "test", "./...")
	goTest.Dir = clone
	if out, err := goTest.CombinedOutput(); err != nil {
		t.Errorf("go test after the patch: %v\n%s", err, out)
	}

	// The evidence file is the strict contract's evidence.
	f, err := os.Open(opt.EvidenceFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := contract.DecodeEvidence(f); err != nil || got.Outcome != contract.OutcomeOK {
		t.Errorf("evidence file: %v %s", err, got.Outcome)
	}

	for _, want := range []string{"[prepare]", "[agent] running the agent", "[verify]", "[upload]"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	for _, want := range []string{"Outcome:  ok", "unit tests", "ok (exit 0)", "go test -json ./...", "1 passed, 0 failed, 0 skipped",
		"modified +1 -1  calc.go", "Fixed `Add`", "written to " + opt.PatchFile, "git apply"} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	evJSON, _ := os.ReadFile(opt.EvidenceFile)
	assertNoCredentials(t, "the evidence", string(evJSON))
	assertNoCredentials(t, "the summary", summary.String())
	assertNoCredentials(t, "the progress", progress.String())
	assertNoCredentials(t, "the spec", res.Spec.Repo.CloneURL+res.Spec.Instructions)

	// The checkout is only read.
	if st := testGit(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the checkout changed:\n%s", st)
	}
	if head := strings.TrimSpace(testGit(t, repo, "rev-parse", "HEAD")); head != sha {
		t.Errorf("HEAD moved to %s", head)
	}
	if wt := testGit(t, repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", wt)
	}
	// The channel and the git server died with the run.
	u, err := url.Parse(res.Spec.Repo.CloneURL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("clone URL %q is not loopback", res.Spec.Repo.CloneURL)
	}
	if c, err := net.Dial("tcp", u.Host); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the run", u.Host)
	}
}

// An agent that changes nothing: the session passes, no patch is written,
// the summary says so, and the agent's answer is shown. Uncommitted
// changes in the checkout are left out, with a note.
func TestRunWithNoChangeWritesNoPatch(t *testing.T) {
	t.Parallel()
	repo, _ := newRepo(t, map[string]string{
		"README.md": "# nothing to do\n",
		".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "-c", "echo 'Nothing to change.' > \"$INSPECT_ANSWER_FILE\"; echo scratch > .inspect/notes.txt"]
verify:
  - name: readme
    run: ["test", "-f", "README.md"]
`,
	})
	writeFiles(t, repo, map[string]string{"README.md": "# edited, not committed\n", "untracked.txt": "x\n"})
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	if res.Evidence.Outcome != contract.OutcomeOK || res.ExitCode() != 0 {
		t.Fatalf("outcome %s (%s)\n%s", res.Evidence.Outcome, res.Evidence.Reason, summary.String())
	}
	if res.Changed() || len(res.Patch) != 0 || res.Manifest == nil || len(res.Manifest.Files) != 0 {
		t.Errorf("a change: %d bytes of patch, manifest %+v", len(res.Patch), res.Manifest)
	}
	if _, err := os.Stat(opt.PatchFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a patch file was written for no change: %v", err)
	}
	if !res.Uncommitted || !strings.Contains(progress.String(), "uncommitted and untracked changes") {
		t.Errorf("no note of the uncommitted changes: %v\n%s", res.Uncommitted, progress.String())
	}
	for _, want := range []string{"no change", "Nothing to change.", "uncommitted changes were not included"} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
	}
}

// A failing verification still yields the change as a patch, and exit
// status 1.
func TestRunWithFailingVerificationStillWritesThePatch(t *testing.T) {
	t.Parallel()
	files := examples.SampleRepo()
	repo, _ := newRepo(t, files)
	cfg := filepath.Join(t.TempDir(), "inspect.yml")
	writeFiles(t, filepath.Dir(cfg), map[string]string{"inspect.yml": `verify:
  - name: always fails
    run: ["sh", "-c", "echo 'still broken' >&2; exit 3"]
`})
	var progress lockedBuffer
	opt := options(t, repo, &progress)
	opt.ConfigFile = cfg
	opt.Agent = []string{"sh", "-c", "printf '\\n// Touched by the agent.\\n' >> calc.go && mkdir -p docs && echo notes > docs/notes.md && rm calc_test.go"}
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var summary bytes.Buffer
	res.WriteSummary(&summary)
	if res.Evidence.Outcome != contract.OutcomeVerifyFailed || res.Passed() || res.ExitCode() != 1 {
		t.Fatalf("outcome %s, exit %d\n%s", res.Evidence.Outcome, res.ExitCode(), summary.String())
	}
	if res.PatchFile != opt.PatchFile || len(res.Patch) == 0 {
		t.Fatalf("no patch written\n%s", summary.String())
	}
	clone := filepath.Join(t.TempDir(), "clone")
	testGit(t, filepath.Dir(clone), "clone", "--quiet", repo, clone)
	testGit(t, clone, "apply", "--check", opt.PatchFile)
	testGit(t, clone, "apply", opt.PatchFile)
	if b, _ := os.ReadFile(filepath.Join(clone, "calc.go")); !strings.HasSuffix(string(b), "// Touched by the agent.\n") {
		t.Errorf("calc.go after the patch:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(clone, "calc_test.go")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("calc_test.go not deleted by the patch: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(clone, "docs", "notes.md")); string(b) != "notes\n" {
		t.Errorf("docs/notes.md after the patch: %q", b)
	}
	for _, want := range []string{"verify_failed", "FAILED (exit 3)", "| still broken", "deleted  +0 -", "[test file]", "--agent, with the verify commands of " + cfg} {
		if !strings.Contains(summary.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary.String())
		}
	}
}

func TestRunRefusesWhatItCannotRun(t *testing.T) {
	t.Parallel()
	plain := t.TempDir()
	empty := t.TempDir()
	testGit(t, empty, "init", "--quiet")
	noConfig, _ := newRepo(t, map[string]string{"README.md": "hi\n"})
	badConfig, _ := newRepo(t, map[string]string{".github/inspect.yml": "agent:\n  preset: command\n  commnd: [x]\n"})
	noAgent, _ := newRepo(t, map[string]string{".github/inspect.yml": "verify:\n  - run: [\"true\"]\n"})
	cases := []struct {
		name string
		opt  Options
		want string
	}{
		{"no instructions", Options{RepoDir: noConfig, Agent: []string{"true"}, Instructions: "  "}, "no instructions"},
		{"missing directory", Options{RepoDir: filepath.Join(plain, "nope"), Instructions: "x"}, "no such file or directory"},
		{"not a checkout", Options{RepoDir: plain, Instructions: "x"}, "is not a git checkout"},
		{"no commit", Options{RepoDir: empty, Instructions: "x"}, "has no commit yet"},
		{"no config, no agent", Options{RepoDir: noConfig, Instructions: "x"}, "no .github/inspect.yml is committed at HEAD; give --agent"},
		{"config without an agent", Options{RepoDir: noAgent, Instructions: "x"}, ".github/inspect.yml at HEAD names no agent"},
		{"bad config", Options{RepoDir: badConfig, Instructions: "x"}, ".github/inspect.yml at HEAD"},
		{"missing config file", Options{RepoDir: noConfig, ConfigFile: filepath.Join(plain, "nope.yml"), Instructions: "x"}, "--config"},
		{"unwritable patch", Options{RepoDir: noConfig, Agent: []string{"true"}, Instructions: "x", PatchFile: filepath.Join(plain, "no", "dir", "x.patch")}, "cannot write"},
	}
	for _, tc := range cases {
		res, err := Run(context.Background(), tc.opt)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || res != nil {
			t.Errorf("%s: %v (%T), want a usage error with %q", tc.name, err, err, tc.want)
		}
	}
}
