package app_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

func TestWriteUserOnPullRequestStartsSession(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			h := newHarnessOn(t, driver)
			comment := h.event(commentOpts{body: "/inspect fix the flaky test", onPR: true})
			if code, body := h.deliver("issue_comment", comment); code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			sess := h.onlySession()
			if sess.State() != session.Queued || sess.Instructions != "fix the flaky test" || sess.RequesterLogin != "alice" {
				t.Fatalf("accepted session = %+v", sess)
			}
			// Nothing reached GitHub during the request but the App's own
			// identity lookup at start-up.
			for _, r := range h.gh.Requests() {
				if r.Path != "/app" {
					t.Errorf("request during acceptance: %s %s", r.Method, r.Path)
				}
			}
			h.runWorkers()

			sess = h.onlySession()
			if sess.State() != session.Preparing {
				t.Fatalf("state = %s (%s: %s), want preparing\n%s", sess.State(), sess.Reason, sess.Detail, h.logs)
			}
			reactions := h.gh.CommentReactions(owner, repoName, h.lastComment)
			if len(reactions) != 1 || reactions[0].Content != "eyes" {
				t.Errorf("reactions = %+v, want one 👀", reactions)
			}
			runs := h.gh.CheckRuns(owner, repoName)
			if len(runs) != 1 {
				t.Fatalf("check runs = %+v, want one", runs)
			}
			if runs[0].Name != "Inspect" || runs[0].HeadSHA != headSHA || runs[0].Status != "queued" || runs[0].ExternalID != sess.ID {
				t.Errorf("check run = %+v", runs[0])
			}
			if sess.CheckRunID != runs[0].ID || sess.HeadSHA != headSHA {
				t.Errorf("session did not record its check run: %+v", sess)
			}
			progress := h.expectOneReply(prNumber, "fix the flaky test", sess.ID, "preparing", "@alice")
			if progress.ID != sess.ProgressCommentID {
				t.Errorf("progress comment id %d, session has %d", progress.ID, sess.ProgressCommentID)
			}
		})
	}
}

func TestWriteUserOnIssueStartsSessionWithoutCheckRun(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the typo", sender: "mara"})); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.State() != session.Preparing || sess.IsPR {
		t.Fatalf("session = %+v", sess)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 0 {
		t.Errorf("issue sessions get no check run, got %+v", runs)
	}
	h.expectOneReply(issueNumber, "fix the typo", "@mara")
}

func TestRefusals(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(h *harness)
		opts   commentOpts
		reason string
		says   string
	}{
		{name: "read user", opts: commentOpts{sender: "bob", onPR: true}, reason: "insufficient_permission", says: "@bob"},
		{name: "triage user", opts: commentOpts{sender: "tina", onPR: true}, reason: "insufficient_permission", says: "triage"},
		{name: "unlisted bot", opts: commentOpts{sender: "evil[bot]", senderTyp: "Bot", onPR: true}, reason: "bot_not_allowed", says: "bot"},
		{name: "fork PR", opts: commentOpts{onPR: true}, reason: "fork_pr", says: "fork",
			setup: func(h *harness) {
				h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "From a fork", State: "open", User: "bob",
					HeadSHA: headSHA, HeadRef: "patch-1", BaseRef: "main", HeadRepoFullName: "bob/Hello-World"})
			}},
		{name: "closed PR", opts: commentOpts{onPR: true}, reason: "closed", says: "closed",
			setup: func(h *harness) {
				h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Closed", State: "closed", User: "alice",
					HeadSHA: headSHA, HeadRef: "fix-flaky", BaseRef: "main"})
			}},
		{name: "paused repo", opts: commentOpts{onPR: true}, reason: "repo_paused", says: "`enabled: false`",
			setup: func(h *harness) {
				h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte("enabled: false\n"))
			}},
		{name: "paused server", opts: commentOpts{onPR: true}, reason: "server_paused", says: "paused",
			setup: func(h *harness) {}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			if tc.reason == "server_paused" {
				h = newHarness(t, func(c *configServer) { c.Paused = true })
			} else {
				h = newHarness(t)
			}
			if tc.setup != nil {
				tc.setup(h)
			}
			tc.opts.body = "/inspect please fix it"
			if code, _ := h.deliver("issue_comment", h.event(tc.opts)); code != 200 {
				t.Fatalf("status %d", code)
			}
			h.runWorkers()
			sess := h.onlySession()
			if sess.State() != session.Done || sess.Outcome != session.Refused || sess.Reason != tc.reason {
				t.Errorf("session = %s/%s/%s, want done/refused/%s", sess.State(), sess.Outcome, sess.Reason, tc.reason)
			}
			reply := h.expectOneReply(prNumber, tc.says)
			if strings.Contains(reply.Body, "goroutine") || strings.Contains(reply.Body, ".go:") {
				t.Errorf("reply leaks internals: %s", reply.Body)
			}
			if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 0 {
				t.Errorf("a refusal creates no check run, got %+v", runs)
			}
		})
	}
}

func TestOwnAppCommentsAreIgnoredSilently(t *testing.T) {
	h := newHarness(t)
	h.gh.ResetRequests()
	for _, o := range []commentOpts{
		{body: "/inspect fix it", sender: "inspect-app[bot]", senderTyp: "Bot"},
		// Same app under a renamed slug still carries performed_via_github_app.
		{body: "/inspect fix it", sender: "renamed[bot]", senderTyp: "Bot", viaAppID: h.gh.AppID()},
	} {
		if code, _ := h.deliver("issue_comment", h.event(o)); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	h.runWorkers()
	if n := len(h.sessions()); n != 0 {
		t.Errorf("sessions = %d, want none", n)
	}
	if reqs := h.gh.Requests(); len(reqs) != 0 {
		t.Errorf("GitHub saw %d requests, want none (no reply, no reaction): %+v", len(reqs), reqs)
	}
}

func TestHelpReplies(t *testing.T) {
	for _, body := range []string{"/inspect", "/inspect --frobnicate", "/inspect help"} {
		t.Run(body, func(t *testing.T) {
			h := newHarness(t)
			if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: body})); code != 200 {
				t.Fatalf("status %d", code)
			}
			h.runWorkers()
			reply := h.expectOneReply(issueNumber, "/inspect status", "/inspect cancel", "/inspect retry")
			if body == "/inspect --frobnicate" && !strings.Contains(reply.Body, "--frobnicate") {
				t.Errorf("the reply should name the unknown option:\n%s", reply.Body)
			}
			if n := len(h.sessions()); n != 0 {
				t.Errorf("help created %d sessions", n)
			}
		})
	}
}

func TestNonCommandsDoNothing(t *testing.T) {
	h := newHarness(t)
	h.gh.ResetRequests()
	for _, o := range []commentOpts{
		{body: "> /inspect fix it\n\nI agree with the above"},
		{body: "Try this:\n```\n/inspect fix it\n```\n"},
		{body: "/inspect fix the flaky test", action: "edited"},
		{body: "/inspect fix it", action: "deleted"},
		{body: "please /inspect fix it"},
		{body: "/іnspect fix it"}, // Cyrillic і
		{body: "/\u200binspect fix it"},
	} {
		if code, _ := h.deliver("issue_comment", h.event(o)); code != 200 {
			t.Fatalf("%q: status %d", o.body, code)
		}
	}
	h.runWorkers()
	if n := len(h.sessions()); n != 0 {
		t.Errorf("sessions = %d", n)
	}
	if reqs := h.gh.Requests(); len(reqs) != 0 {
		t.Errorf("GitHub saw %d requests, want none", len(reqs))
	}
}

func TestSignatures(t *testing.T) {
	h := newHarness(t)
	body := h.event(commentOpts{body: "/inspect fix it"})
	for name, sig := range map[string]string{
		"missing":         "",
		"wrong secret":    sign(body, "not-the-secret"),
		"not hex":         "sha256=zz",
		"sha1 only style": "sha1=" + strings.TrimPrefix(sign(body, secret), "sha256="),
		"other body":      sign([]byte(`{"action":"created"}`), secret),
	} {
		if code, _ := h.deliverAs("issue_comment", "bad-"+name, body, sig); code != 401 {
			t.Errorf("%s signature: status %d, want 401", name, code)
		}
		if seen, err := h.st.DeliverySeen(t.Context(), "bad-"+name); err != nil || seen {
			t.Errorf("%s signature: delivery stored (%v)", name, err)
		}
	}
	if n := len(h.sessions()); n != 0 {
		t.Fatalf("unsigned deliveries created %d sessions", n)
	}
	if code, _ := h.deliverAs("issue_comment", "rotated", body, sign(body, oldSecret)); code != 200 {
		t.Errorf("rotating secret: status %d, want 200", code)
	}
	if n := len(h.sessions()); n != 1 {
		t.Errorf("sessions = %d after the rotating secret's delivery, want 1", n)
	}
}

func TestDuplicateDeliveriesMakeOneSession(t *testing.T) {
	forBothDrivers(t, testDuplicateDeliveriesMakeOneSession)
}

func testDuplicateDeliveriesMakeOneSession(t *testing.T, driver string) {
	h := newHarnessOn(t, driver)
	body := h.event(commentOpts{body: "/inspect fix it"})
	sig := sign(body, secret)
	var wg sync.WaitGroup
	codes := make([]int, 10)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = h.deliverAs("issue_comment", "same-delivery", body, sig)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("copy %d: status %d", i, c)
		}
	}
	// The same comment under a new delivery id (a second webhook, say).
	if code, _ := h.deliverAs("issue_comment", "another-delivery", body, sig); code != 200 {
		t.Errorf("status %d", code)
	}
	h.runWorkers()
	h.onlySession()
	h.expectOneReply(issueNumber)
	if r := h.gh.CommentReactions(owner, repoName, h.lastComment); len(r) != 1 {
		t.Errorf("reactions = %d, want 1", len(r))
	}
}

func TestStoreDownAnswers5xx(t *testing.T) {
	forBothDrivers(t, testStoreDownAnswers5xx)
}

func testStoreDownAnswers5xx(t *testing.T, driver string) {
	h := newHarnessOn(t, driver)
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	code, body := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"}))
	if code != 503 {
		t.Errorf("status %d (%s), want 503 so GitHub can redeliver", code, body)
	}
	if strings.Contains(body, "sql") || strings.Contains(body, "closed") {
		t.Errorf("response leaks internals: %q", body)
	}
}

func TestBadBodies(t *testing.T) {
	h := newHarness(t)
	huge := make([]byte, 30<<20)
	for i := range huge {
		huge[i] = 'a'
	}
	for name, tc := range map[string]struct {
		event string
		body  []byte
		want  int
	}{
		"malformed":       {"issue_comment", []byte(`{"action": "created", "comment": `), 400},
		"empty":           {"issue_comment", []byte{}, 400},
		"wrong types":     {"issue_comment", []byte(`{"action":"created","comment":{"id":"seven","body":7}}`), 400},
		"no installation": {"issue_comment", []byte(`{"action":"created","comment":{"id":1,"body":"/inspect x"},"issue":{"number":1},"repository":{"id":1,"name":"r","owner":{"login":"o"}},"sender":{"login":"alice"}}`), 400},
		"30 MB":           {"issue_comment", huge, 413},
		"no event":        {"", []byte(`{}`), 400},
	} {
		code, _ := h.deliver(tc.event, tc.body)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d", name, code, tc.want)
		}
	}
	if n := len(h.sessions()); n != 0 {
		t.Errorf("bad bodies created %d sessions", n)
	}
	// The server still works.
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Errorf("after bad bodies: status %d", code)
	}
}

func TestUnlistedBotGetsRefusalNotHelp(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect help", sender: "evil[bot]", senderTyp: "Bot"})); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	reply := h.expectOneReply(issueNumber, "bot")
	if strings.Contains(reply.Body, "/inspect retry") {
		t.Errorf("an unlisted bot got the help text:\n%s", reply.Body)
	}
}

func TestAllowlistedBotMayStartSession(t *testing.T) {
	h := newHarness(t, func(c *configServer) { c.Policy.AllowedBots = []string{"renovate[bot]"} })
	h.gh.AddUser("renovate[bot]", 29139614, "Bot")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect rebase and fix", sender: "renovate[bot]", senderTyp: "Bot", onPR: true})); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Preparing {
		t.Fatalf("allowlisted bot's session = %s/%s/%s", s.State(), s.Outcome, s.Reason)
	}
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/collaborators/") {
			t.Errorf("an allowlisted bot needs no permission lookup: %s", r.Path)
		}
	}
}

func TestOverlongInstructionsAreCutAndTheUserIsTold(t *testing.T) {
	h := newHarness(t)
	long := "/inspect " + strings.Repeat("fix the flaky test please. ", 1000) // ~27 KiB
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: long})); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	s := h.onlySession()
	if !s.Truncated || len(s.Instructions) > 16<<10 {
		t.Errorf("truncated=%v, %d bytes kept", s.Truncated, len(s.Instructions))
	}
	h.expectOneReply(issueNumber, "only the first 16 KiB were used")
}
