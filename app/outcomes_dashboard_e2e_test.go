package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/outcomes/outcomestest"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// In Chromium, signed in through GitHub's web flow: the outcomes page
// shows the PRs Inspect opened in the repository alice can read, as the
// stand-in's webhooks left them (one merged after a review round, one
// closed unmerged, one open: one of three accepted), and nothing of a
// repository she cannot read (its merged PR would make the row 4, 2, 50%);
// it fits a phone.
func TestOutcomesPageInTheBrowser(t *testing.T) {
	d := newDashboard(t)
	d.gh.SetWebhookTargets(secret, d.srv.URL+app.WebhookPath)
	for n := 50; n <= 52; n++ {
		openedPR(t, d.harness, n, "alice", "codex", "gpt-test")
	}
	send(t, d.harness, "pull_request_review", d.gh.SubmitReview(owner, repoName, 50, "mara", "CHANGES_REQUESTED", "not yet"))
	merged, _ := d.gh.ClosePull(owner, repoName, 50, "mara", true)
	send(t, d.harness, "pull_request", merged)
	closed, _ := d.gh.ClosePull(owner, repoName, 51, "mara", false)
	send(t, d.harness, "pull_request", closed)
	// A repository alice cannot read, with a PR Inspect opened there.
	d.gh.AddRepo(fakegithub.Repo{ID: 777, Owner: owner, Name: "private-thing", InstallationID: installationID, Private: true})
	hidden := outcomestest.Row{Repo: owner + "/private-thing", RepoID: 777, Trigger: session.KindLabel, Preset: "codex", Model: "gpt-test",
		Requester: "ada", Fate: 'M', Rounds: 3, Tokens: 5000}
	if err := outcomestest.Seed(context.Background(), d.st, "hidden-", d.clock.Now(), []outcomestest.Row{hidden}); err != nil {
		t.Fatal(err)
	}

	d.signIn("alice", "/outcomes?by=preset")
	d.do("waiting for the outcomes", chromedp.WaitVisible(chromedp.CSS(`#outcomes tr[data-key="codex"]`)))
	row := func(cell string) string {
		return strings.TrimSpace(d.text(`#outcomes tr[data-key="codex"] td.` + cell))
	}
	for cell, want := range map[string]string{"sessions": "3", "opened": "3", "merged": "1", "closed": "1", "withdrawn": "0",
		"rate": "33%", "rounds": "1", "tokens": "1000"} {
		if got := row(cell); got != want {
			t.Errorf("%s: %q, want %q", cell, got, want)
		}
	}
	if html := d.html(); !strings.Contains(html, `<svg id="fates-chart"`) || strings.Contains(html, "private-thing") {
		t.Error("no server-drawn chart, or a repository alice cannot read")
	}
	d.screenshot("outcomes")
}
