package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

const repairConfig = agentConfig + `repair:
  enabled: true
  checks: ["ci/*"]
`

// newRepairHarness has repair on (cached, as after a push of the config)
// and PR #2 on a real branch, authored by mara (a maintainer).
func newRepairHarness(t *testing.T, config string) (*harness, *scriptedExecutor, string) {
	return newRepairHarnessOn(t, "sqlite", config)
}

func newRepairHarnessOn(t *testing.T, driver, config string) (*harness, *scriptedExecutor, string) {
	t.Helper()
	h, ex := newSessionHarnessOn(t, driver, func(c *configServer) {
		c.Repair.Debounce = 30 * time.Second
		c.Repair.Cooldown = 10 * time.Minute
	})
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(config))
	head := withRealPR(t, h)
	h.primeConfigCache()
	return h, ex, head
}

var runSeq int64 = 70000

// failCheck makes another app's check fail on sha and delivers its event.
func (h *harness) failCheck(name, sha string, pr int) int64 {
	h.t.Helper()
	runSeq++
	cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: name, HeadSHA: sha, Conclusion: "failure",
		AppSlug: "ci-app", AppID: 777, Title: "1 test failed", Summary: "FAIL TestAdd: Add(1, 2) != 3"},
		fakegithub.Annotation{Path: "calc_test.go", StartLine: 6, EndLine: 6, Level: "failure", Message: "Add(1, 2) != 3"})
	if code, body := h.deliver("check_run", checkRunEvent(h.t, checkRunOpts{name: name, conclusion: "failure", sha: sha, runID: cr.ID, pr: pr})); code != 200 {
		h.t.Fatalf("check_run: %d %s", code, body)
	}
	return cr.ID
}

// afterDebounce lets the repair decision's wait pass and runs the workers.
func (h *harness) afterDebounce() {
	h.t.Helper()
	h.clock.Advance(31 * time.Second)
	h.runWorkers()
}

func repairSessions(h *harness) []store.Session {
	var out []store.Session
	for _, s := range h.sessions() {
		if s.TriggerKind == "repair" {
			out = append(out, s)
		}
	}
	return out
}

func TestFailingCheckIsRepairedOnThePRBranch(t *testing.T) {
	forBothDrivers(t, func(t *testing.T, driver string) {
		h, ex, head := newRepairHarnessOn(t, driver, repairConfig)
		h.failCheck("ci/test", head, prNumber)
		h.runWorkers()
		if n := len(h.sessions()); n != 0 {
			t.Fatalf("a session before the debounce: %d", n)
		}
		h.afterDebounce()
		sess := h.onlySession()
		if sess.TriggerKind != "repair" || sess.RequesterLogin != "mara" || sess.State() != session.Dispatched || sess.HeadSHA != head {
			t.Fatalf("session = %+v\n%s", sess, h.logs)
		}
		sv := h.claim(ex.last(t))
		spec := sv.spec()
		var out []contract.ContextItem
		for _, c := range spec.Context {
			if c.Kind == contract.ContextCheckOutput {
				out = append(out, c)
			}
		}
		if len(out) != 1 || !out[0].Untrusted || !strings.Contains(out[0].Text, "FAIL TestAdd") || !strings.Contains(out[0].Text, "calc_test.go:6") {
			t.Fatalf("check context = %+v", out)
		}
		h.runWorkers()
		sv.upload(spec, 0, fixedCalc)
		h.runWorkers()
		sess = h.onlySession()
		if sess.Outcome != session.Changed || sess.Branch != "fix-flaky" {
			t.Fatalf("session = %s on %q (%s)\n%s", sess.Outcome, sess.Branch, sess.Detail, h.logs)
		}
		if got := h.gh.BranchSHA(owner, repoName, "fix-flaky"); got != sess.CommitSHA {
			t.Errorf("PR branch at %s, want the fix %s", got, sess.CommitSHA)
		}
		h.expectOneReply(prNumber, "repairing the failing checks", "`ci/test`", "Automatic repair 1 of 2", "done: changed")
	})
}

func TestRepairLoopStopsAtTheBudget(t *testing.T) {
	h, ex, head := newRepairHarness(t, repairConfig)
	// The stand-in's CI fails again on every commit Inspect pushes.
	var mu sync.Mutex
	var pushed []string
	h.gh.OnRefUpdate(func(u fakegithub.RefUpdate) {
		if u.Ref == "refs/heads/fix-flaky" {
			mu.Lock()
			pushed = append(pushed, u.SHA)
			mu.Unlock()
		}
	})
	failing := head
	for round := range 4 {
		h.failCheck("ci/test", failing, prNumber)
		h.afterDebounce()
		if n := len(ex.launches); n > round {
			sv := h.claim(ex.last(t))
			spec := sv.spec()
			h.runWorkers()
			sv.upload(spec, 0, contract.FileChange{Path: "calc.go", Mode: contract.ModeFile,
				Content: fmt.Appendf(nil, "package calc\n\n// round %d\nfunc Add(a, b int) int { return a + b }\n", round)})
			h.runWorkers()
		}
		h.clock.Advance(11 * time.Minute) // past the cooldown
		mu.Lock()
		if len(pushed) > 0 {
			failing = pushed[len(pushed)-1]
		}
		mu.Unlock()
	}
	repairs := repairSessions(h)
	if len(repairs) != 2 {
		t.Fatalf("repair sessions = %d, want the budget of 2\n%s", len(repairs), h.logs)
	}
	last := repairs[0] // newest first
	if len(h.commentsWith(prNumber, "Automatic repair 2 of 2")) != 1 {
		t.Errorf("the second repair does not count itself: %+v", h.comments(prNumber))
	}
	var lastComment string
	for _, c := range h.comments(prNumber) {
		if c.ID == last.ProgressCommentID {
			lastComment = c.Body
		}
	}
	if !strings.Contains(lastComment, "budget") || !strings.Contains(lastComment, "spent") {
		t.Errorf("the last repair does not say the budget is spent:\n%s", lastComment)
	}
	if !strings.Contains(h.logs.String(), "budget_spent") {
		t.Errorf("the refused third repair is not logged with its reason")
	}
}

func TestFailingChecksOnOneCommitMeetInOneSession(t *testing.T) {
	h, ex, head := newRepairHarness(t, repairConfig)
	h.failCheck("ci/test", head, prNumber)
	h.failCheck("ci/lint", head, prNumber)
	h.gh.AddStatus(owner, repoName, head, fakegithub.Status{Context: "ci/buildkite", State: "failure", Description: "Build #12 failed", TargetURL: "https://buildkite.com/acme/app/builds/12"})
	if code, _ := h.deliver("status", statusEvent(t, head, "ci/buildkite", "failure")); code != 200 {
		t.Fatal(code)
	}
	h.afterDebounce()
	sess := h.onlySession()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	var sources []string
	for _, c := range spec.Context {
		if c.Kind == contract.ContextCheckOutput {
			sources = append(sources, c.Source)
		}
	}
	if len(sources) != 3 {
		t.Errorf("check outputs = %v, want the three failing checks", sources)
	}
	for _, want := range []string{"`ci/test`", "`ci/lint`", "`ci/buildkite`"} {
		if !strings.Contains(sess.Instructions, want) {
			t.Errorf("instructions %q lack %s", sess.Instructions, want)
		}
	}
}

func TestNoRepairForForkOrBotPullRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		pull fakegithub.Pull
		fork int64
	}{
		{"fork", fakegithub.Pull{Number: prNumber, Title: "From a fork", State: "open", User: "mara", HeadSHA: headSHA,
			HeadRef: "patch-1", BaseRef: "main", HeadRepoFullName: "mara/Hello-World"}, 4242},
		{"fork named nowhere", fakegithub.Pull{Number: prNumber, Title: "From a fork", State: "open", User: "mara", HeadSHA: headSHA,
			HeadRef: "patch-1", BaseRef: "main", HeadRepoFullName: "mara/Hello-World"}, 0},
		{"bot", fakegithub.Pull{Number: prNumber, Title: "Bump deps", State: "open", User: "evil[bot]", HeadSHA: headSHA,
			HeadRef: "deps", BaseRef: "main"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := newRepairHarness(t, repairConfig)
			h.gh.AddPull(owner, repoName, tc.pull)
			pr := prNumber
			if tc.name == "fork named nowhere" {
				pr = 0 // GitHub leaves fork PRs out of check payloads
			}
			cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: "ci/test", HeadSHA: headSHA, Conclusion: "failure", AppSlug: "ci-app", AppID: 777})
			if code, _ := h.deliver("check_run", checkRunEvent(t, checkRunOpts{name: "ci/test", conclusion: "failure", sha: headSHA, runID: cr.ID, pr: pr, forkRepoID: tc.fork})); code != 200 {
				t.Fatal(code)
			}
			h.afterDebounce()
			if all := h.sessions(); len(all) != 0 {
				t.Errorf("sessions = %+v", all)
			}
			if c := h.comments(prNumber); len(c) != 0 {
				t.Errorf("an automatic trigger spoke: %+v", c)
			}
		})
	}
}

func TestRepairDisabledOrUnmatchedStoresNothing(t *testing.T) {
	for _, tc := range []struct{ name, config, check string }{
		{"repair off", agentConfig, "ci/test"},
		{"no matching pattern", repairConfig, "lint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, head := newRepairHarness(t, tc.config)
			cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: tc.check, HeadSHA: head, Conclusion: "failure", AppSlug: "other-ci", AppID: 778})
			body := checkRunEvent(t, checkRunOpts{name: tc.check, conclusion: "failure", sha: head, runID: cr.ID, pr: prNumber, appSlug: "other-ci", appID: 778})
			if code, _ := h.deliverAs("check_run", "delivery-check", body, sign(body, secret)); code != 200 {
				t.Fatal(code)
			}
			if seen, err := h.st.DeliverySeen(context.Background(), "delivery-check"); err != nil || seen {
				t.Errorf("the delivery was stored (%v, %v)", seen, err)
			}
			h.afterDebounce()
			if all := h.sessions(); len(all) != 0 {
				t.Errorf("sessions = %+v", all)
			}
		})
	}
}

func TestRepairDisabledOnACacheMissGivesNoSession(t *testing.T) {
	h, _ := newSessionHarness(t)
	head := withRealPR(t, h)
	cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: "ci/test", HeadSHA: head, Conclusion: "failure", AppSlug: "ci-app", AppID: 777})
	if code, _ := h.deliver("check_run", checkRunEvent(t, checkRunOpts{name: "ci/test", conclusion: "failure", sha: head, runID: cr.ID, pr: prNumber})); code != 200 {
		t.Fatal(code)
	}
	h.afterDebounce()
	if all := h.sessions(); len(all) != 0 {
		t.Errorf("sessions = %+v", all)
	}
	if _, found, err := h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now()); err != nil || !found {
		t.Errorf("the worker did not cache the config it read (%v, %v)", found, err)
	}
}

func TestRepairWaitsOutTheCooldownAndReadsTheJobLog(t *testing.T) {
	h, ex, head := newRepairHarness(t, repairConfig)
	h.failCheck("ci/test", head, prNumber)
	h.afterDebounce()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.upload(spec, 1, fixedCalc) // unverified: a draft PR, the PR head stays
	h.runWorkers()
	if s := repairSessions(h); len(s) != 1 || s[0].Outcome != session.VerificationFailed {
		t.Fatalf("first repair = %+v\n%s", s, h.logs)
	}

	// GitHub Actions fails again on the same head, within the cooldown.
	cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: "ci/build", HeadSHA: head, Conclusion: "failure",
		AppSlug: "github-actions", AppID: 15368, Title: "Process completed with exit code 1", Summary: "build failed"})
	log := strings.Repeat("noise line\n", 5000) + "##[error]calc.go:3: undefined: Sub\n"
	h.gh.SetJobLog(owner, repoName, cr.ID, log)
	if code, _ := h.deliver("check_run", checkRunEvent(t, checkRunOpts{name: "ci/build", conclusion: "failure", sha: head, runID: cr.ID, pr: prNumber, appSlug: "github-actions", appID: 15368})); code != 200 {
		t.Fatal(code)
	}
	h.afterDebounce()
	if s := repairSessions(h); len(s) != 1 {
		t.Fatalf("a repair started within the cooldown: %d", len(s))
	}
	// The failure is not lost: once the cooldown is over it is repaired.
	// (Its (PR, commit) claim is the first repair's, so this one is a
	// new commit's: the author pushed meanwhile.)
	moved := h.gh.CommitFiles(owner, repoName, "fix-flaky", map[string]string{"notes.md": "again\n"}, "the author pushed")
	h.clock.Advance(10 * time.Minute)
	h.runWorkers()
	if s := repairSessions(h); len(s) != 1 {
		t.Fatalf("a stale failure (the head moved) was repaired: %d", len(s))
	}
	cr2 := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: "ci/build", HeadSHA: moved, Conclusion: "failure",
		AppSlug: "github-actions", AppID: 15368, Summary: "build failed"})
	h.gh.SetJobLog(owner, repoName, cr2.ID, log)
	if code, _ := h.deliver("check_run", checkRunEvent(t, checkRunOpts{name: "ci/build", conclusion: "failure", sha: moved, runID: cr2.ID, pr: prNumber, appSlug: "github-actions", appID: 15368})); code != 200 {
		t.Fatal(code)
	}
	h.afterDebounce()
	if s := repairSessions(h); len(s) != 2 || s[0].HeadSHA != moved {
		t.Fatalf("repairs after the cooldown = %+v\n%s", s, h.logs)
	}
	spec = h.claim(ex.last(t)).spec()
	var text string
	for _, c := range spec.Context {
		if c.Kind == contract.ContextCheckOutput && c.Source == "ci/build" {
			text = c.Text
		}
	}
	if !strings.Contains(text, "undefined: Sub") || len(text) > 40<<10 || strings.Count(text, "noise line") > 2000 {
		t.Errorf("the job log's tail is missing or unbounded (%d bytes):\n%.300s", len(text), text)
	}
}

func TestFailingSuitesAndStatusesFindTheirPullRequest(t *testing.T) {
	for _, event := range []string{"check_suite", "status"} {
		t.Run(event, func(t *testing.T) {
			h, ex, head := newRepairHarness(t, repairConfig)
			var body []byte
			if event == "check_suite" {
				cr := h.gh.AddForeignCheckRun(owner, repoName, fakegithub.CheckRun{Name: "ci/test", HeadSHA: head, Conclusion: "failure", AppSlug: "ci-app", AppID: 777, Summary: "FAIL"})
				body = checkSuiteEvent(t, head, "failure", cr.SuiteID)
			} else {
				h.gh.AddStatus(owner, repoName, head, fakegithub.Status{Context: "ci/buildkite", State: "error", Description: "agent lost"})
				body = statusEvent(t, head, "ci/buildkite", "error")
			}
			if code, out := h.deliver(event, body); code != 200 {
				t.Fatalf("status %d: %s", code, out)
			}
			h.afterDebounce()
			sess := h.onlySession()
			if sess.TriggerKind != "repair" || sess.Number != prNumber || sess.RequesterLogin != "mara" {
				t.Fatalf("session = %+v\n%s", sess, h.logs)
			}
			spec := h.claim(ex.last(t)).spec()
			found := false
			for _, c := range spec.Context {
				found = found || (c.Kind == contract.ContextCheckOutput && c.Untrusted)
			}
			if !found {
				t.Errorf("no check output in the context: %+v", spec.Context)
			}
		})
	}
}

func TestNoRepairWhilePaused(t *testing.T) {
	h, _, head := newRepairHarness(t, repairConfig)
	h.stop()
	h.cfg.Paused = true
	h.start()
	h.failCheck("ci/test", head, prNumber)
	h.afterDebounce()
	if all := h.sessions(); len(all) != 0 {
		t.Errorf("sessions = %+v", all)
	}
	if c := h.comments(prNumber); len(c) != 0 {
		t.Errorf("an automatic trigger spoke: %+v", c)
	}
}

func TestRepairWaitsForTheActiveSessionWithoutAskingGitHub(t *testing.T) {
	h, ex, head := newRepairHarness(t, repairConfig)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect tidy up", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.failCheck("ci/test", head, prNumber)
	h.afterDebounce()
	before := len(h.gh.Requests())
	for range 3 {
		h.clock.Advance(31 * time.Second)
		h.runWorkers()
	}
	var asked []fakegithub.Request
	for _, r := range h.gh.Requests()[before:] {
		// Reconcile asks whether the active session's PR is still open,
		// once a reconcile interval; that is not the repair's doing.
		if r.Method != "GET" || r.Path != "/repos/"+owner+"/"+repoName+"/pulls/2" {
			asked = append(asked, r)
		}
	}
	if len(asked) != 0 {
		t.Errorf("a waiting repair asked GitHub %d times: %+v", len(asked), asked)
	}
	if n := len(repairSessions(h)); n != 0 {
		t.Fatalf("a repair started beside the active session")
	}
	// The person's session ends without a change: the head is unmoved, so
	// the repair starts once the cooldown (none yet) and the wait allow.
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.upload(spec, 0)
	h.runWorkers()
	h.clock.Advance(31 * time.Second)
	h.runWorkers()
	if n := len(repairSessions(h)); n != 1 {
		t.Errorf("repairs after the session ended = %d\n%s", n, h.logs)
	}
}

// A failing Buildkite status of the configured organization gives the
// repair its job's log tail, read through the configured API base with
// the server's token and fenced as untrusted; statuses that link anywhere
// else (another organization, a lookalike host, userinfo) read nothing.
func TestBuildkiteStatusRepairReadsTheJobLog(t *testing.T) {
	bk := fakebuildkite.New(t)
	h, ex := newSessionHarnessOn(t, "sqlite", func(c *configServer) {
		c.Repair.Debounce = 30 * time.Second
		c.Repair.Cooldown = 10 * time.Minute
		c.Buildkite.Organization = "acme-ci"
		c.Buildkite.APIURL = bk.URL()
		c.Buildkite.APIToken = bk.Token()
	})
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(repairConfig))
	head := withRealPR(t, h)
	h.primeConfigCache()

	log := strings.Repeat("noise line\n", 5000) + "\x1b[31m--- FAIL: TestAdd (0.00s)\x1b[0m\n    calc_test.go:6: Add(1, 2) = 4, want 3\n"
	ours := bk.AddFinishedBuild("acme-ci", "app", "failed", log)
	theirs := bk.AddFinishedBuild("someone-else", "app", "failed", "another organization's log\n")
	lookalike := strings.Replace(fakebuildkite.JobWebURL(ours), "https://buildkite.com/", "https://buildkite.com.evil.example/", 1)
	userinfo := strings.Replace(fakebuildkite.JobWebURL(ours), "https://", "https://buildkite.com@", 1)
	buildLink := strings.Split(fakebuildkite.JobWebURL(ours), "#")[0] // a build-level status's link
	for name, link := range map[string]string{"ci/buildkite": fakebuildkite.JobWebURL(ours), "ci/other-org": fakebuildkite.JobWebURL(theirs),
		"ci/lookalike": lookalike, "ci/userinfo": userinfo, "ci/build": buildLink} {
		h.gh.AddStatus(owner, repoName, head, fakegithub.Status{Context: name, State: "failure", Description: "Build failed", TargetURL: link})
	}
	if code, _ := h.deliver("status", statusEvent(t, head, "ci/buildkite", "failure")); code != 200 {
		t.Fatal(code)
	}
	h.afterDebounce()
	spec := h.claim(ex.last(t)).spec()
	texts := map[string]string{}
	for _, c := range spec.Context {
		if c.Kind == contract.ContextCheckOutput {
			if !c.Untrusted {
				t.Errorf("%s's output is not marked untrusted", c.Source)
			}
			texts[c.Source] = c.Text
		}
	}
	if len(texts) != 5 {
		t.Fatalf("check outputs %v, want the five statuses", texts)
	}
	for _, name := range []string{"ci/buildkite", "ci/build"} {
		got := texts[name]
		if !strings.Contains(got, "End of the job's log:") || !strings.Contains(got, "--- FAIL: TestAdd (0.00s)\n    calc_test.go:6: Add(1, 2) = 4, want 3") ||
			strings.Contains(got, "\x1b") || len(got) > 40<<10 || strings.Count(got, "noise line") > 2000 {
			t.Errorf("%s: the Buildkite job's log tail is missing or unbounded (%d bytes):\n%.300s", name, len(got), got)
		}
	}
	for _, other := range []string{"ci/other-org", "ci/lookalike", "ci/userinfo"} {
		if strings.Contains(texts[other], "End of the job's log") {
			t.Errorf("%s read a log:\n%s", other, texts[other])
		}
	}
	// The job's log (twice: once by its link, once as the build's failed
	// job) and the build; nothing of the other organization.
	var paths []string
	for _, r := range bk.Requests() {
		if r.Auth != "bearer" || r.Status >= 300 {
			t.Errorf("request %+v", r)
		}
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	logPath := "/v2/organizations/acme-ci/pipelines/app/builds/1/jobs/" + ours.JobID + "/log"
	if want := []string{"/v2/organizations/acme-ci/pipelines/app/builds/1", logPath, logPath}; !slices.Equal(paths, want) {
		t.Errorf("Buildkite requests %q, want %q", paths, want)
	}
}
