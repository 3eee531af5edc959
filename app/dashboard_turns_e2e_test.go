package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/session"
)

// A real session (local executor, bubblewrap) whose agent writes a file
// and then waits for the test's go-ahead. While it runs, mara steers it
// from the thread; alice's page shows the turns, the command running now
// and the files changed so far (the flight recorder, from the store), and
// alice sends a message from the page, which joins the turns.
func TestDashboardShowsTheTurnsTheRunningCommandAndTheFilesChanged(t *testing.T) {
	d := newDashboard(t)
	work := sandboxtest.ReachableDir(t)
	lx := newLocalExecutorIn(t, work)
	d.runOn(lx)
	files := examples.SampleRepo()
	// Every run of the agent (the first, and each a message starts) waits
	// until the test lets it go on, and none after that: the signal is a
	// file Inspect keeps out of the change, left in place.
	files["work.sh"] = "#!/bin/sh\nmkdir -p notes\necho 'half done' > notes/progress.md\nwhile [ ! -e .inspect/go-on ]; do sleep 0.05; done\n"
	files[".github/inspect.yml"] = "agent:\n  preset: command\n  command: [\"sh\", \"work.sh\"]\n"
	d.gh.CommitFiles(owner, repoName, "main", files, "an agent that works slowly")
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect work slowly"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()
	sess := d.onlySession()
	if sess.AttemptID == "" {
		t.Fatalf("not dispatched: %s\n%s", sess.State(), d.logs)
	}
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect also write the docs", sender: "mara"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()

	// The flight recorder reaches the store within a second or two of the
	// file being written.
	ctx := context.Background()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		raw, err := d.st.Recorder(ctx, sess.AttemptID)
		if err != nil {
			t.Fatal(err)
		}
		// Mara's message restarts the agent (decision 0073): wait until
		// it is taken and the run it started shows its command and file.
		turns, err := d.st.SessionTurns(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		taken := len(turns) == 1 && turns[0].State != session.TurnPending
		if taken && strings.Contains(raw, `"turn":1`) && strings.Contains(raw, "notes/progress.md") && strings.Contains(raw, `"command":"`) {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no flight recorder with the agent's file: %q\n%s", raw, d.logs)
		}
	}

	d.signIn("alice", "/sessions/"+sess.ID)
	if got := d.text("#turns"); !strings.Contains(got, "work slowly") || !strings.Contains(got, "mara") || !strings.Contains(got, "also write the docs") {
		t.Errorf("#turns: %q", got)
	}
	if got := d.text("#running-command"); !strings.Contains(got, "sleep") && !strings.Contains(got, "work.sh") {
		t.Errorf("#running-command: %q", got)
	}
	if got := d.text("#files-changed"); !strings.Contains(got, "notes/progress.md") || !strings.Contains(got, "10") {
		t.Errorf("#files-changed: %q", got)
	}
	d.screenshot("session-turns-running")

	// A message from the page is a turn too.
	d.do("sending a message",
		chromedp.SendKeys(chromedp.CSS("#message"), "and a changelog entry"),
		chromedp.Click(chromedp.CSS("#send-message")),
		chromedp.WaitVisible(chromedp.CSS("#asked")))
	d.runWorkers()
	d.do("reloading", chromedp.Navigate(d.url+"/sessions/"+sess.ID), chromedp.WaitVisible(chromedp.CSS("#turns")))
	if got := d.text("#turns"); !strings.Contains(got, "and a changelog entry") {
		t.Errorf("#turns after the page's message: %q\n%s", got, d.logs)
	}

	// `inspect runner` steers with the CLIs' own conversations, the
	// command agent's turn-file protocol among them (decision 0073): wait
	// until the supervisor has taken both messages, so the agent is told
	// them before it is let go on and none is left for a later session.
	for taken := false; !taken; {
		turns, err := d.st.SessionTurns(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		taken = len(turns) >= 2
		for _, tn := range turns {
			taken = taken && tn.State != session.TurnPending
		}
		if taken {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("the supervisor never took the messages: %+v\n%s", turns, d.logs)
		}
	}
	a, err := d.st.GetAttempt(ctx, sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	wss, err := filepath.Glob(filepath.Join(work, "inspect-"+a.ID+"-*", "workspace"))
	if err != nil || len(wss) != 1 {
		t.Fatalf("the attempt's workspace: %v %v", wss, err)
	}
	if err := os.WriteFile(filepath.Join(wss[0], ".inspect", "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitForAttempt(lx)
	d.runWorkers()
	ended, err := d.st.GetSession(ctx, sess.ID)
	if err != nil || ended.State() != session.Done {
		t.Fatalf("session %s/%s (%v)\n%s", ended.State(), ended.Outcome, err, d.logs)
	}
	// After the end: the timeline of turns and what came of each.
	d.do("the ended session", chromedp.Navigate(d.url+"/sessions/"+sess.ID), chromedp.WaitVisible(chromedp.CSS("#turns")))
	// Each message reached the agent, which went on with it: each turn's
	// outcome is the session's, none "not delivered".
	if got := d.text("#turns"); strings.Count(got, "changed") != 3 || strings.Contains(got, "not delivered") {
		t.Errorf("#turns after the end: %q", got)
	}
	// The run over, the recorder counted the lines of what it wrote.
	lines, err := chromedp.Run(d.tab, chromedp.Evaluate[string](`[...document.querySelectorAll("#files-changed tbody tr")].filter(r => r.cells[0].textContent === "notes/progress.md").map(r => r.cells[2].textContent).join()`))
	if err != nil || lines != "1" {
		t.Errorf("notes/progress.md's lines after the end: %q (%v)", lines, err)
	}
	d.screenshot("session-turns-ended")
}
