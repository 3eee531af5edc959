package app_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/session"
)

// TestContainment runs an agent that tries to get out: read the App's key,
// a root-only file, the database, the server's environment and another
// session's files; reach the app and the GitHub stand-in over TCP; find a
// credential in its environment; and push. Each probe's result goes into a
// report file, which the session commits like any change, so the test reads
// it back from git. A control case shows that a push with a write token
// does work against the stand-in, so a denied push means something. It
// runs cmd/inspect as production builds it: the Go build cache other tests'
// sessions share would be a way between sessions.
func TestContainment(t *testing.T) {
	h, lx := newProductionSandboxHarness(t)
	secrets := t.TempDir() // 0700, root's
	keyFile := filepath.Join(secrets, "app.pem")
	if err := os.WriteFile(keyFile, []byte(h.cfg.GitHub.PrivateKey), 0o600); err != nil {
		t.Fatal(err)
	}
	rootOnly, err := os.CreateTemp("", "inspect-root-only-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(rootOnly.Name()) })
	if _, err := rootOnly.WriteString("root only\n"); err != nil {
		t.Fatal(err)
	}
	rootOnly.Close()
	if err := os.Chmod(rootOnly.Name(), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := os.MkdirTemp("", "inspect-other-session-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(other) })
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("another session\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	appURL, _ := url.Parse(h.srv.URL)
	ghURL, _ := url.Parse(h.gh.URL())
	dbPath := h.dsn
	probes := []struct{ name, cmd string }{
		{"read-app-key", "cat " + keyFile},
		{"read-root-only", "cat " + rootOnly.Name()},
		{"read-database", "cat " + dbPath},
		{"read-server-environ", fmt.Sprintf("cat /proc/%d/environ", os.Getpid())},
		{"read-other-session", "cat " + filepath.Join(other, "secret.txt")},
		{"tcp-app", "exec 3<>/dev/tcp/127.0.0.1/" + appURL.Port()},
		{"tcp-github", "exec 3<>/dev/tcp/127.0.0.1/" + ghURL.Port()},
		{"git-push", "git -c credential.helper= push " + h.gh.URL() + "/" + owner + "/" + repoName + ".git HEAD:refs/heads/pwned"},
	}
	var agent strings.Builder
	agent.WriteString("#!/bin/bash\n# A hostile stand-in agent for the containment test.\nset -u\nr=containment-report.txt\n")
	for _, p := range probes {
		fmt.Fprintf(&agent, "if ( %s ) >/dev/null 2>&1 </dev/null; then echo '%s: ALLOWED' >> $r; else echo '%s: denied' >> $r; fi\n", p.cmd, p.name, p.name)
	}
	agent.WriteString("env | sort > environment.txt\necho done > \"$INSPECT_ANSWER_FILE\"\n")
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent.String(),
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"bash\", \"agent.sh\"]\n",
	}, "a hostile agent")

	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect try to escape"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s: %s\n%s", sess.Outcome, sess.Detail, h.logs)
	}
	gitDir := h.gh.GitDir(owner, repoName)
	report, err := exec.Command("git", "--git-dir", gitDir, "show", sess.CommitSHA+":containment-report.txt").Output()
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	for _, p := range probes {
		if !strings.Contains(string(report), p.name+": denied") {
			t.Errorf("probe %s was not denied:\n%s", p.name, report)
		}
	}
	env, err := exec.Command("git", "--git-dir", gitDir, "show", sess.CommitSHA+":environment.txt").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(env)), "\n") {
		name, _, _ := strings.Cut(line, "=")
		switch name {
		case "HOME", "PATH", "LANG", "INSPECT_PROMPT_FILE", "INSPECT_ANSWER_FILE", "INSPECT_SESSION_ID", "PWD", "SHLVL", "_", "OLDPWD":
		default:
			t.Errorf("unexpected variable in the sandbox: %s", line)
		}
	}
	if h.gh.BranchSHA(owner, repoName, "pwned") != "" {
		t.Error("the agent pushed a branch")
	}
	// Nothing minted appears anywhere the agent's output could reach.
	for _, tok := range h.gh.MintedTokens() {
		for _, where := range []string{string(report), string(env), h.logs.String()} {
			if strings.Contains(where, tok) {
				t.Error("a minted token leaked")
			}
		}
		for _, c := range h.gh.Comments(owner, repoName, issueNumber) {
			if strings.Contains(c.Body, tok) {
				t.Error("a minted token appears in a comment")
			}
		}
	}

	// Control: with a write token, the same push works, so "denied" above
	// is the sandbox, not a broken endpoint.
	tok, _, err := h.appClient(t).Apps.CreateInstallationToken(context.Background(), installationID, &github.InstallationTokenOptions{}) // an object: "null" is no body GitHub describes
	if err != nil {
		t.Fatal(err)
	}
	clone := t.TempDir()
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok.GetToken()))
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "HOME="+clone,
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Basic "+basic)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("clone", "-q", h.gh.URL()+"/"+owner+"/"+repoName+".git", ".")
	git("push", "-q", "origin", "HEAD:refs/heads/control")
	if h.gh.BranchSHA(owner, repoName, "control") == "" {
		t.Error("the control push did not land")
	}
}
