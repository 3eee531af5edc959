package appsetup_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/app/appsetup"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/browsertest"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/servetest"
	"github.com/inspecthq/inspect/internal/webhookfixture"
)

func TestMain(m *testing.M) {
	defer browsertest.Close()
	servetest.Main(m)
}

const (
	owner, repoName        = "Codertocat", "Hello-World"
	repoID, installationID = 186853002, 1
	requester, requesterID = "alice", 5000
	e2eTimeout             = 4 * time.Minute
	sessionTimeout         = 3 * time.Minute
)

// The whole of `inspect setup` as an operator meets it: the binary serves
// its page, headless Chromium clicks through it and the stand-in's
// "Create GitHub App" page, the binary exchanges the code and writes the
// config, and `inspect serve` on that config (listen aside) takes a
// webhook signed with the secret GitHub handed out and runs a session to
// its pull request, with the permissions the manifest asked for.
func TestSetupInChromiumThenServeRunsASession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.SetSignedInUser(owner)
	bin := servetest.Build(t)

	dir := filepath.Join(t.TempDir(), "inspect-config")
	setup := exec.CommandContext(ctx, bin, "setup", "--listen", "127.0.0.1:0",
		"--github-url", gh.URL(), "--api-url", gh.APIURL(), "--public-url", "https://inspect.example.com", "--dir", dir)
	var stderr strings.Builder
	setup.Stderr = &stderr
	stdout, err := setup.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	if err != nil {
		t.Fatalf("inspect setup printed no URL: %v\n%s", err, stderr.String())
	}
	page := strings.Fields(strings.TrimPrefix(first, "Open "))[0]

	bctx := browsertest.Tab(t)
	if err := chromedp.Do(bctx,
		chromedp.Navigate(page),
		chromedp.Click(chromedp.CSS("#submit")),
		chromedp.WaitVisible(chromedp.CSS("#create")),
	); err != nil {
		t.Fatalf("chromium, the setup page: %v\n%s", err, stderr.String())
	}
	confirm, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("h1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS("#result")),
	); err != nil {
		t.Fatalf("chromium, GitHub's page: %v\n%s", err, stderr.String())
	}
	result, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#result")))
	if err != nil {
		t.Fatal(err)
	}
	if confirm != "Create GitHub App for "+owner || !strings.HasPrefix(result, "Registered") {
		t.Fatalf("pages: %q, %q", confirm, result)
	}
	rest, _ := io.ReadAll(lines) // to EOF: the process has finished writing
	if err := setup.Wait(); err != nil {
		t.Fatalf("inspect setup: %v\n%s", err, stderr.String())
	}
	serveLine := "inspect serve --config " + filepath.Join(dir, appsetup.ConfigFile)
	if !strings.Contains(string(rest), serveLine) || !strings.Contains(string(rest), "/installations/new") {
		t.Errorf("the next commands are missing:\n%s", rest)
	}
	regs := gh.ManifestRegistrations()
	if len(regs) != 1 || !regs[0].Converted {
		t.Fatalf("registrations: %+v", regs)
	}
	if _, asked := regs[0].Manifest["default_permissions"].(map[string]any)["members"]; asked {
		t.Error("the manifest asked for members")
	}

	// The repository, its installation and a requester, as GitHub would
	// have them once the App is installed.
	gh.AddInstallation(installationID, owner)
	gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID, OwnerType: "User"})
	gh.AddUser(requester, requesterID, "User")
	gh.SetPermission(owner, repoName, requester, "write")
	gh.CommitFiles(owner, repoName, "main", examples.SampleRepo(), "the sample repository")
	gh.AddIssue(owner, repoName, fakegithub.Issue{Number: 1, Title: "TestAdd fails", Body: "TestAdd fails", State: "open", User: requester})

	written, err := os.ReadFile(filepath.Join(dir, appsetup.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(written, &doc); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(t.TempDir(), "state")
	r := servetest.Start(t, bin, servetest.Config{YAML: doc, Name: "from-setup",
		Env: []string{"INSPECT_STATE_DIR=" + stateDir}})
	if err := r.WaitReady(ctx); err != nil {
		t.Fatalf("%v\n%s", err, r.Logs())
	}
	// The secret GitHub handed out, as the stand-in keeps it, signs.
	gh.SetWebhookTargets(regs[0].WebhookSecret, r.WebhookURL())
	d := gh.Deliver(ctx, "issue_comment", comment(t, gh, "/inspect make TestAdd pass"))
	if d.StatusCode != 200 {
		t.Fatalf("delivery: %+v\n%s", d, r.Logs())
	}
	waitForPR(t, ctx, gh, r)
	// The written config names no database: the default one is in the
	// state directory, which serve made private.
	if fi, err := os.Stat(stateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "inspect.db")); err != nil {
		t.Errorf("the database is not in the state directory: %v", err)
	}
}

func comment(t *testing.T, gh *fakegithub.Server, body string) []byte {
	t.Helper()
	id := gh.AddComment(owner, repoName, 1, requester, body)
	out, err := webhookfixture.IssueComment(webhookfixture.Comment{
		Owner: owner, Repo: repoName, Number: 1, Login: requester, UserID: requesterID,
		ID: id, Body: body, InstallationID: installationID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitForPR polls the stand-in's request log until the session opened its
// pull request.
func waitForPR(t *testing.T, ctx context.Context, gh *fakegithub.Server, r *servetest.Replica) {
	t.Helper()
	pulls := fmt.Sprintf("/repos/%s/%s/pulls", owner, repoName)
	deadline := time.NewTimer(sessionTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, req := range gh.RequestsMatching("POST", pulls) {
			if req.Path == pulls && req.Status == 201 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no pull request: %v\n%s", ctx.Err(), r.Logs())
		case <-deadline.C:
			t.Fatalf("no pull request after %s\n%s", sessionTimeout, r.Logs())
		case <-r.Exited():
			t.Fatalf("the server exited\n%s", r.Logs())
		case <-tick.C:
		}
	}
}
