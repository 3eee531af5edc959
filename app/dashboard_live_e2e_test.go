package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/session"
)

// The agent of a real session (local executor, bubblewrap) prints a line,
// a token and then waits for the test's go-ahead file before its last
// line. alice, on the session's page, watches both lines arrive in #live
// while it runs, the token redacted, and #state reach done, all without
// the page reloading.
func TestDashboardLiveOutputOfARunningSession(t *testing.T) {
	d := newDashboard(t)
	work := sandboxtest.ReachableDir(t)
	lx := newLocalExecutorIn(t, work)
	d.runOn(lx)
	token := "ghp_" + strings.Repeat("Zq9", 12)
	files := examples.SampleRepo()
	// The agent waits in its own process for the file the test writes;
	// the test waits only on the page.
	files["talk.sh"] = "#!/bin/sh\necho 'live line one'\necho 'the token is " + token + "'\n" +
		"while [ ! -e go-on ]; do sleep 0.05; done\nrm -f go-on\necho 'live line two'\n"
	files[".github/inspect.yml"] = "agent:\n  preset: command\n  command: [\"sh\", \"talk.sh\"]\n"
	d.gh.CommitFiles(owner, repoName, "main", files, "an agent that talks slowly")
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect talk"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()
	sess := d.onlySession()
	if sess.AttemptID == "" {
		t.Fatalf("not dispatched: %s\n%s", sess.State(), d.logs)
	}

	// Another installation's session: its live view is the page's 404.
	hidden := d.hiddenSession(session.Running)
	d.signIn("alice", "/sessions")
	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+hidden.ID+"/live")); err != nil {
		t.Fatal(err)
	}
	if got := d.text("#status"); got != "404" {
		t.Errorf("another repository's live view: %q, want 404", got)
	}

	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+sess.ID), chromedp.WaitVisible(chromedp.CSS("#live"))); err != nil {
		t.Fatal(err)
	}
	mark := func() {
		// A page that reloads loses this.
		if err := chromedp.Do(d.tab, chromedp.Evaluate[chromedp.Void](`window.inspectNoReload = true`)); err != nil {
			t.Fatal(err)
		}
	}
	mark()
	waitFor := func(what, js string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(d.tab, 2*time.Minute)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
			t.Fatalf("waiting for %s: %v\n#live: %q\n%s", what, err, d.text("#live"), d.logs)
		}
	}
	live := `document.getElementById("live").textContent`
	waitFor("the first line", live+`.includes("live line one") && `+live+`.includes("the token is")`)
	if got := d.text("#live"); strings.Contains(got, token) || !strings.Contains(got, "the token is "+contract.Redacted) || strings.Contains(got, "live line two") {
		t.Fatalf("live output while the agent waits: %q", got)
	}
	if st := d.text("#state"); strings.Contains(st, "done") {
		t.Fatalf("state %q while the agent runs", st)
	}

	a, err := d.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	wss, err := filepath.Glob(filepath.Join(work, "inspect-"+a.ID+"-*", "workspace"))
	if err != nil || len(wss) != 1 {
		t.Fatalf("the attempt's workspace: %v %v", wss, err)
	}
	if err := os.WriteFile(filepath.Join(wss[0], "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the second line", live+`.includes("live line two")`)

	d.waitForAttempt(lx)
	d.runWorkers()
	if s := d.onlySession(); s.State() != session.Done {
		t.Fatalf("session %s/%s: %s\n%s", s.State(), s.Outcome, s.Detail, d.logs)
	}
	waitFor("done", `document.getElementById("state").textContent.startsWith("done") && document.getElementById("live").dataset.done === "true" && document.getElementById("cancel").disabled`)
	still, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`window.inspectNoReload === true`))
	if err != nil || !still {
		t.Fatalf("the page reloaded (%v)", err)
	}
	if html := d.html(); strings.Contains(html, token) {
		t.Error("the token reached the page")
	}
	d.screenshot("session-live")
}

// alice's session page is open, its live view following a running
// session, when she is signed out elsewhere (the store forgets her, as
// another replica's sign-out or GitHub's revocation does). Within
// web.permission_cache the stream ends, and the page stops listening and
// says why (decision 0060: an authorisation does not outlive what it was
// given for).
func TestDashboardLiveViewEndsWhenSignedOutElsewhere(t *testing.T) {
	d := newDashboard(t)
	ctx := context.Background()
	sess := store.Fixture(session.Running, store.Session{ID: "live-ends-1", AttemptID: "live-ends-a1", RepoID: repoID, RepoOwner: owner, RepoName: repoName,
		InstallationID: installationID, Number: issueNumber, TriggerKind: session.KindComment, CommentID: 98, DeliveryID: "d-live-ends",
		RequesterLogin: "alice", RequesterID: 5000, RequesterType: "User", Instructions: "work slowly"})
	if _, err := d.st.Accept(ctx, store.Acceptance{DeliveryID: sess.DeliveryID, Event: "issue_comment", At: d.clock.Now(), CommentID: sess.CommentID, Session: &sess}); err != nil {
		t.Fatal(err)
	}
	d.signIn("alice", "/sessions/"+sess.ID)
	// A line the page shows only through its stream: the stream is open.
	if _, err := d.st.AppendOutput(ctx, store.OutputChunk{SessionID: sess.ID, AttemptID: sess.AttemptID, Seq: 1, Phase: "agent", Command: "agent",
		Text: "still working\n", CreatedAt: d.clock.Now()}, 1<<20); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what, js string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(d.tab, time.Minute)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(time.Minute))); err != nil {
			t.Fatalf("waiting for %s: %v\n#live: %q\n%s", what, err, d.text("#live"), d.logs)
		}
	}
	live := `document.getElementById("live")`
	waitFor("the streamed line", live+`.textContent.includes("still working")`)

	if err := d.st.ForgetWebUser(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	d.clock.Advance(d.cfg.Web.PermissionCache)
	waitFor("the end of the stream", live+`.dataset.ended === "true" && `+live+`.textContent.includes("Your sign-in has ended")`)
}
