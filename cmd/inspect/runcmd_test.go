package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// gitRepo commits files into a new repository and returns its directory.
func gitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "--all"}, {"commit", "--quiet", "-m", "seed"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// sandboxWorkDir is a work directory the sandbox's uid can reach.
func sandboxWorkDir(t testing.TB) string {
	t.Helper()
	return sandboxtest.ReachableDir(t)
}

func TestRunUsageErrors(t *testing.T) {
	plain := t.TempDir()
	noConfig := gitRepo(t, map[string]string{"README.md": "hi\n"})
	codex := gitRepo(t, map[string]string{".github/inspect.yml": "agent: {preset: codex, model: gpt-5-codex}\n"})
	badServer := filepath.Join(plain, "server.yaml")
	if err := os.WriteFile(badServer, []byte("agents:\n  models:\n    - {name: gpt-5-codex, provider: openai}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "no instructions"},
		{[]string{"run", "--repo", noConfig, "--"}, "no instructions"},
		{[]string{"run", "--no-such-flag", "--", "x"}, "no-such-flag"},
		{[]string{"run", "--agent", "sh fix.sh", "--", "x"}, "must be a non-empty JSON array of strings"},
		{[]string{"run", "--agent", "[]", "--", "x"}, "must be a non-empty JSON array of strings"},
		{[]string{"run", "--agent", `["a"]`, "--agent", `["b"]`, "--", "x"}, "give --agent once"},
		{[]string{"run", "--timeout", "0s", "--", "x"}, "--timeout must be positive"},
		{[]string{"run", "--sandbox-uid", "1000", "--", "x"}, "both --sandbox-uid and --sandbox-gid"},
		{[]string{"run", "--repo", filepath.Join(plain, "missing"), "--", "x"}, "no such file or directory"},
		{[]string{"run", "--repo", plain, "--", "x"}, "is not a git checkout"},
		{[]string{"run", "--repo", noConfig, "--patch", filepath.Join(plain, "x.patch"), "--", "x"}, "no agent to run"},
		{[]string{"run", "--repo", noConfig, "--config", filepath.Join(plain, "missing.yml"), "--", "x"}, "--config"},
		{[]string{"run", "--repo", codex, "--", "x"}, "asks for agent preset codex with model gpt-5-codex, which needs a model provider, and no server config names one: give --server-config FILE"},
		{[]string{"run", "--repo", codex, "--server-config", filepath.Join(plain, "missing.yaml"), "--", "x"}, "--server-config: reading the server config"},
		{[]string{"run", "--repo", codex, "--server-config", badServer, "--", "x"}, `agents.models[0].provider: "openai" is not in agents.providers`},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, want 2; stderr %q lacks %q", tc.args, code, errOut.String(), tc.want)
		}
		if out.Len() > 0 {
			t.Errorf("%q: wrote to stdout: %q", tc.args, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"run", "-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "Usage: inspect run") || !strings.Contains(errOut.String(), "-patch") {
		t.Errorf("run -h: exit %d\n%s", code, errOut.String())
	}
	out.Reset()
	if code := run([]string{"help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "inspect run") {
		t.Errorf("help does not list run:\n%s", out.String())
	}
}

// A failing verification: exit 1, the evidence printed, and the change
// still written as a patch that applies.
func TestRunFailingVerificationExitsOneWithAPatch(t *testing.T) {
	repo := gitRepo(t, examples.SampleRepo())
	out := t.TempDir()
	cfg := filepath.Join(out, "inspect.yml")
	if err := os.WriteFile(cfg, []byte("agent:\n  preset: command\n  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\n"+
		"verify:\n  - name: strict check\n    run: [\"sh\", \"-c\", \"echo 'not good enough'; exit 1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(out, "fix.patch")
	evidence := filepath.Join(out, "evidence.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--repo", repo, "--config", cfg, "--patch", patch, "--evidence", evidence,
		"--work-dir", sandboxWorkDir(t), "--timeout", "5m", "--", "make", "TestAdd", "pass"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"Outcome:  verify_failed", "strict check", "FAILED (exit 1)", "| not good enough", "modified +1 -1  calc.go", "written to " + patch} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "inspect run: [verify]") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	b, err := os.ReadFile(patch)
	if err != nil || !strings.Contains(string(b), "+func Add(a, b int) int { return a + b }") {
		t.Fatalf("patch: %v\n%s", err, b)
	}
	if _, err := os.Stat(evidence); err != nil {
		t.Errorf("evidence: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", repo, clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	apply := exec.Command("git", "apply", "--check", patch)
	apply.Dir = clone
	if out, err := apply.CombinedOutput(); err != nil {
		t.Errorf("git apply --check: %v\n%s", err, out)
	}
}

// An agent that changes nothing, verified: exit 0, "no change", no file.
func TestRunNoChangeExitsZero(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"README.md":           "hi\n",
		".github/inspect.yml": "verify:\n  - name: readme\n    run: [\"test\", \"-f\", \"README.md\"]\n",
	})
	patch := filepath.Join(t.TempDir(), "inspect.patch")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--repo", repo, "--agent", `["true"]`, "--patch", patch, "--work-dir", sandboxWorkDir(t), "--", "nothing"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "no change") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(patch); err == nil {
		t.Error("a patch was written for no change")
	}
}
