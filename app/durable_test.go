package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// pushEvent builds a push to the default branch from the real fixture.
func pushEvent(t testing.TB, repo string, modified ...string) []byte {
	t.Helper()
	m := loadFixture(t, "push.payload.json")
	m["ref"] = "refs/heads/main"
	m["deleted"] = false // the fixture is a tag deletion
	r := m["repository"].(map[string]any)
	r["default_branch"] = "main"
	if repo != repoName {
		r["name"], r["full_name"], r["id"] = repo, owner+"/"+repo, float64(999)
	}
	m["installation"] = map[string]any{"id": float64(installationID)}
	m["commits"] = []any{map[string]any{
		"id": "6113728f27ae82c7b1a177c8d03f9e96e0adf246", "message": "config",
		"added": []any{}, "removed": []any{}, "modified": toAny(modified),
	}}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func TestPushRefreshesConfigCache(t *testing.T) {
	forBothDrivers(t, testPushRefreshesConfigCache)
}

func testPushRefreshesConfigCache(t *testing.T, driver string) {
	h := newHarnessOn(t, driver)
	// A first session caches the repo's config (none: defaults).
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect first"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	entry, found, err := h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now())
	if err != nil || !found || entry.Status != store.ConfigDefaults {
		t.Fatalf("cache after a session = %+v %v %v", entry, found, err)
	}

	// A push that does not touch the config changes nothing.
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte("enabled: false\n"))
	if code, _ := h.deliver("push", pushEvent(t, repoName, "README.md")); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if entry, _, _ := h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now()); entry.Status != store.ConfigDefaults {
		t.Fatalf("an unrelated push refreshed the cache: %+v", entry)
	}

	// The push that sets enabled: false refreshes it.
	if code, _ := h.deliver("push", pushEvent(t, repoName, ".github/inspect.yml")); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	entry, _, _ = h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now())
	if entry.Status != store.ConfigFile || !strings.Contains(entry.Content, "enabled: false") {
		t.Fatalf("cache after the push = %+v", entry)
	}

	h.gh.ResetRequests()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect second", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	var refused *store.Session
	for _, s := range h.sessions() {
		if s.Instructions == "second" {
			refused = &s
		}
	}
	if refused == nil || refused.Outcome != session.Refused || refused.Reason != "repo_paused" {
		t.Fatalf("second session = %+v, want refused as paused", refused)
	}
	h.expectOneReply(prNumber, "`enabled: false`")
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/contents/") {
			t.Errorf("the config was fetched again for the paused trigger: %s %s", r.Method, r.Path)
		}
		if r.Method == "POST" && strings.Contains(r.Path, "/reactions") {
			t.Errorf("a refusal from the cache should not react: %s", r.Path)
		}
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 0 {
		t.Errorf("check runs = %+v", runs)
	}
}

func TestOrgWideConfigPushForgetsInheritedEntries(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect first"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if _, found, _ := h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now()); !found {
		t.Fatal("not cached")
	}
	if code, _ := h.deliver("push", pushEvent(t, ".github", "inspect.yml")); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if _, found, _ := h.st.CachedRepoConfig(context.Background(), repoID, h.clock.Now()); found {
		t.Error("an org-wide config push should drop entries that used defaults")
	}
}

func TestInvalidConfigIsReportedToTheUser(t *testing.T) {
	for name, tc := range map[string]struct {
		file  string
		org   bool // the file is the org-wide one, in the owner's .github repository
		wants []string
	}{
		"unknown key": {file: "enabled: true\nverfy: []\n", wants: []string{"unknown key `verfy`", ".github/inspect.yml"}},
		// An env path that cannot be a writable directory of the session
		// is refused, naming the variable and the path, before any
		// session runs into a read-only file system.
		"env path under the toolchain": {file: "env:\n  GOCACHE: /usr/local/go-cache\n", wants: []string{"env.GOCACHE", `"/usr/local/go-cache"`, "such as /cache/gocache", ".github/inspect.yml"}},
		// appconfig's remote reference would put the effective config in
		// another repository, beyond the protected paths: refused, and the
		// remote file (which parses) is never read.
		"remote reference": {file: "remote: " + owner + "/elsewhere\npath: inspect.yml\n", wants: []string{"remote: ", "remote reference", ".github/inspect.yml"}},
		"org-wide remote reference": {file: "remote: " + owner + "/elsewhere\n", org: true,
			wants: []string{"remote: ", "remote reference", "inspect.yml in " + owner + "/.github@main"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.gh.AddRepo(fakegithub.Repo{Owner: owner, Name: "elsewhere", DefaultBranch: "main", InstallationID: installationID})
			h.gh.SetFile(owner, "elsewhere", "main", "inspect.yml", []byte("enabled: true\n"))
			if tc.org {
				h.gh.AddRepo(fakegithub.Repo{Owner: owner, Name: ".github", DefaultBranch: "main", InstallationID: installationID})
				h.gh.SetFile(owner, ".github", "main", "inspect.yml", []byte(tc.file))
			} else {
				h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(tc.file))
			}
			if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
				t.Fatal(code)
			}
			h.runWorkers()
			sess := h.onlySession()
			if sess.Outcome != session.Errored || sess.Reason != "config_invalid" {
				t.Errorf("session = %s/%s", sess.Outcome, sess.Reason)
			}
			h.expectOneReply(issueNumber, tc.wants...)
			if got := h.gh.RequestsMatching("GET", "/repos/"+owner+"/elsewhere"); len(got) != 0 {
				t.Errorf("the remote repository was read: %+v", got)
			}
		})
	}
}

func TestRestartResumesAcceptedWorkExactlyOnce(t *testing.T) {
	forBothDrivers(t, testRestartResumesAcceptedWorkExactlyOnce)
}

func testRestartResumesAcceptedWorkExactlyOnce(t *testing.T, driver string) {
	h := newHarnessOn(t, driver)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the flaky test", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	// Stop after accepting, before any worker ran.
	h.stop()
	h.start()
	h.runWorkers()
	h.runWorkers() // a second pass finds nothing left to do
	sess := h.onlySession()
	if sess.State() != session.Preparing {
		t.Fatalf("state after restart = %s\n%s", sess.State(), h.logs)
	}
	h.expectOneReply(prNumber, sess.ID)
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 {
		t.Errorf("check runs = %d, want 1", len(runs))
	}
	if r := h.gh.CommentReactions(owner, repoName, h.lastComment); len(r) != 1 {
		t.Errorf("reactions = %d, want 1", len(r))
	}
}

func TestDeadWorkersLeaseIsTakenOverOnce(t *testing.T) {
	forBothDrivers(t, testDeadWorkersLeaseIsTakenOverOnce)
}

func testDeadWorkersLeaseIsTakenOverOnce(t *testing.T, driver string) {
	h := newHarnessOn(t, driver)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	ctx := context.Background()
	// A worker claims the work and dies without finishing it.
	dead, err := h.st.Claim(ctx, "dead-worker", h.clock.Now(), h.cfg.Workers.Lease)
	if err != nil || dead == nil {
		t.Fatalf("claim: %v %v", dead, err)
	}
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Queued {
		t.Fatalf("work under a live lease ran: %s", s.State())
	}
	h.clock.Advance(h.cfg.Workers.Lease + time.Second)
	if n, err := h.svc.RunPending(ctx); err != nil || n != 1 {
		t.Fatalf("takeover ran %d items (%v), want 1", n, err)
	}
	if n, _ := h.svc.RunPending(ctx); n != 0 {
		t.Fatalf("work ran again: %d", n)
	}
	if s := h.onlySession(); s.State() != session.Preparing {
		t.Fatalf("state = %s", s.State())
	}
	h.expectOneReply(prNumber)
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 {
		t.Errorf("check runs = %d, want 1", len(runs))
	}
	if err := h.st.Complete(ctx, dead, h.clock.Now()); err == nil {
		t.Error("the dead worker's late completion must be refused")
	}
}

func TestGitHubFailuresRetryThenEndInError(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	// The first attempt fails creating the check run, after the reaction
	// and the admission (decision 0048: the check run follows it).
	h.gh.FailNext("POST", "/repos/*/*/check-runs", 502)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Preparing || s.CheckRunID != 0 || s.ProgressCommentID != 0 {
		t.Fatalf("state = %s after a failed attempt", s.State())
	}
	h.clock.Advance(h.cfg.Workers.RetryBackoff)
	h.runWorkers()
	s := h.onlySession()
	if s.State() != session.Preparing {
		t.Fatalf("state = %s after the retry\n%s", s.State(), h.logs)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 {
		t.Errorf("check runs = %d, want 1", len(runs))
	}
	h.expectOneReply(prNumber)

	// A session whose every attempt fails ends in error with one reply.
	h2 := newHarness(t)
	if code, _ := h2.deliver("issue_comment", h2.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	for range h2.cfg.Workers.MaxAttempts {
		h2.gh.FailNext("GET", "/repos/*/*", 500)
		h2.runWorkers()
		h2.clock.Advance(time.Hour)
	}
	h2.runWorkers()
	s = h2.onlySession()
	if s.State() != session.Done || s.Outcome != session.Errored {
		t.Fatalf("session = %s/%s, want done/error", s.State(), s.Outcome)
	}
	reply := h2.expectOneReply(issueNumber, "internal error", s.ID)
	// The session id is random and may itself hold "500": judge the rest.
	if rest := strings.ReplaceAll(reply.Body, s.ID, ""); strings.Contains(rest, "500") || strings.Contains(rest, "api/v3") {
		t.Errorf("error reply leaks internals:\n%s", reply.Body)
	}
}

func TestStalePauseIsReadAgain(t *testing.T) {
	h := newHarness(t)
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte("enabled: false\n"))
	if code, _ := h.deliver("push", pushEvent(t, repoName, ".github/inspect.yml")); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	// The push that lifts the pause is lost (say, a 503 during a deploy).
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte("enabled: true\n"))
	h.clock.Advance(h.cfg.RepoConfigMaxAge)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Preparing {
		t.Fatalf("a stale cached pause refused the trigger: %s/%s/%s", s.State(), s.Outcome, s.Reason)
	}
}

func TestRefusalOnReplayConcludesTheEarlierCheckRun(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	// Attempt 1 creates the check run, then cannot post the progress comment.
	h.gh.FailNext("POST", "/repos/*/*/issues/*/comments", 502)
	h.runWorkers()
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Status != "queued" {
		t.Fatalf("after attempt 1: %+v", runs)
	}
	// Meanwhile the PR is closed; attempt 2 refuses.
	h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Closed", State: "closed", User: "alice",
		HeadSHA: headSHA, HeadRef: "fix-flaky", BaseRef: "main"})
	h.clock.Advance(time.Hour)
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Refused || s.Reason != "closed" {
		t.Fatalf("session = %s/%s", s.Outcome, s.Reason)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "neutral" {
		t.Errorf("the earlier check run was left behind: %+v", runs)
	}
	h.expectOneReply(prNumber, "closed")
}
