package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/fates"
	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// openedPR stores a session that ran with preset and model and whose report
// opened PR number as the App (as report records it), and seeds that PR on
// the stand-in.
func openedPR(t *testing.T, h *harness, number int, requester, preset, model string) {
	t.Helper()
	ctx := context.Background()
	now := h.clock.Now()
	id := fmt.Sprintf("fate-%d", number)
	h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: number, Title: "Inspect's change", Body: "by Inspect", User: h.gh.AppSlug() + "[bot]",
		HeadRef: fmt.Sprintf("inspect/%d", number), BaseRef: "main"})
	sess := store.Fixture(session.Running, store.Session{ID: id, RepoID: repoID, RepoOwner: owner, RepoName: repoName,
		InstallationID: installationID, Number: issueNumber, TriggerKind: session.KindComment, DeliveryID: "d-" + id,
		RequesterLogin: requester, RequesterID: 1, RequesterType: "User", Instructions: "fix it", CreatedAt: now})
	if err := h.st.CreateSession(ctx, &sess, nil, now); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`{"agent":{"preset":%q,"model":%q}}`, preset, model)
	if err := h.st.CreateAttempt(ctx, store.Attempt{ID: "a-" + id, SessionID: id, Spec: spec, Deadline: now.Add(time.Hour)}, "c", now); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.AddUsage(ctx, "a-"+id, store.Usage{InputTokens: 700, OutputTokens: 300, TotalTokens: 1000, Requests: 2}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.MutateSession(ctx, id, now, func(x *store.Session) error {
		x.PRNumber = number
		return x.End(session.Changed, "", "")
	}); err != nil {
		t.Fatal(err)
	}
}

// send delivers a stand-in webhook to the server and wants a 2xx.
func send(t *testing.T, h *harness, event string, payload []byte) {
	t.Helper()
	if d := h.gh.Deliver(context.Background(), event, payload); d.StatusCode/100 != 2 {
		t.Fatalf("%s delivery answered %d", event, d.StatusCode)
	}
}

// Five PRs Inspect opened meet their fates through the stand-in's
// webhooks and, for the one merged while no replica was up, reconcile:
// each fate and the figures are right in the store's rollup (which the
// page and `inspect outcomes` read, tested in app/web and cmd/inspect) and
// in /metrics.
func TestEachPRsFateFromWebhooksAndReconcile(t *testing.T) {
	forBothDrivers(t, func(t *testing.T, driver string) {
		h := newHarnessOn(t, driver)
		ctx := context.Background()
		h.gh.SetClock(h.clock.Now)
		h.gh.SetWebhookTargets(secret, h.srv.URL+app.WebhookPath)
		for n := 10; n <= 14; n++ {
			openedPR(t, h, n, "alice", "codex", "gpt-test")
		}
		// News of a PR Inspect did not open (#2, alice's own) is answered
		// and keeps nothing.
		send(t, h, "pull_request_review", h.gh.SubmitReview(owner, repoName, prNumber, "mara", "CHANGES_REQUESTED", "hm"))
		if _, err := h.st.GetFate(ctx, repoID, prNumber); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a fate for a PR Inspect did not open: %v", err)
		}
		// #12: withdrawn: closed by its requester five minutes after it
		// was opened.
		h.clock.Advance(5 * time.Minute)
		closed12, _ := h.gh.ClosePull(owner, repoName, 12, "alice", false)
		send(t, h, "pull_request", closed12)
		// #10: merged after two review rounds (and an approval), with a
		// review comment and a thread comment by the reviewer.
		h.clock.Advance(30 * time.Minute)
		send(t, h, "pull_request_review", h.gh.SubmitReview(owner, repoName, 10, "mara", "CHANGES_REQUESTED", "not yet"))
		cid := h.gh.AddReviewComment(owner, repoName, 10, fakegithub.ReviewComment{User: "mara", Body: "why this?", Path: "README.md", Line: 1, DiffHunk: "@@ -1 +1 @@\n+x"})
		send(t, h, "pull_request_review_comment", h.gh.ReviewCommentEvent(owner, repoName, cid))
		send(t, h, "pull_request_review", h.gh.SubmitReview(owner, repoName, 10, "mara", "CHANGES_REQUESTED", "still not"))
		send(t, h, "issue_comment", h.event(commentOpts{body: "looks closer now", sender: "mara", onPR: true, number: 10}))
		send(t, h, "pull_request_review", h.gh.SubmitReview(owner, repoName, 10, "mara", "APPROVED", ""))
		// A redelivery of a review counts once.
		rv := h.gh.SubmitReview(owner, repoName, 10, "dependabot[bot]", "CHANGES_REQUESTED", "bots do not count")
		send(t, h, "pull_request_review", rv)
		send(t, h, "pull_request_review", rv)
		h.clock.Advance(30 * time.Minute)
		merged10, _ := h.gh.ClosePull(owner, repoName, 10, "mara", true)
		send(t, h, "pull_request", merged10)
		// #11: closed unmerged by a reviewer.
		closed11, _ := h.gh.ClosePull(owner, repoName, 11, "mara", false)
		send(t, h, "pull_request", closed11)
		// #13: merged, then reverted by GitHub's revert PR (#30).
		merged13, _ := h.gh.ClosePull(owner, repoName, 13, "mara", true)
		send(t, h, "pull_request", merged13)
		h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: 30, Title: `Revert "Inspect's change"`, Body: fmt.Sprintf("Reverts %s/%s#13", owner, repoName), User: "mara"})
		h.clock.Advance(24 * time.Hour)
		revert, _ := h.gh.ClosePull(owner, repoName, 30, "mara", true)
		send(t, h, "pull_request", revert)
		// #14: merged while no replica was up: GitHub's delivery failed,
		// and reconcile finds it.
		h.gh.ClosePull(owner, repoName, 14, "ada", true)
		// The stand-in checks the App's JWT against its clock, which
		// ghinstallation signs by the host's: the host's clock from here.
		h.gh.SetClock(time.Now)
		before := len(h.gh.Requests())
		h.clock.Advance(7 * time.Hour) // past fates.Stale
		h.runWorkers()
		var asked []string
		for _, r := range h.gh.Requests()[before:] {
			if r.IsREST() {
				asked = append(asked, r.Method+" "+r.Path)
			}
		}
		// The one open fate (#14) was due: at most five requests.
		if len(asked) == 0 || len(asked) > 5 {
			t.Errorf("reconcile asked GitHub %d times: %v", len(asked), asked)
		}

		// A week on, git's revert of #14's merge commit lands on the
		// default branch (a push).
		f14, err := h.st.GetFate(ctx, repoID, 14)
		if err != nil || f14.MergeSHA == "" {
			t.Fatalf("#14 after reconcile: %+v %v", f14, err)
		}
		h.clock.Advance(7 * 24 * time.Hour)
		push := loadFixture(t, "push.payload.json")
		push["ref"], push["deleted"] = "refs/heads/main", false
		push["repository"].(map[string]any)["default_branch"] = "main"
		push["installation"] = map[string]any{"id": installationID}
		push["commits"] = []any{map[string]any{"id": strings.Repeat("b", 40), "timestamp": h.clock.Now().Format(time.RFC3339),
			"message": "Revert \"Inspect's change\"\n\nThis reverts commit " + f14.MergeSHA + ".\n",
			"added":   []any{}, "removed": []any{}, "modified": []any{"README.md"}}}
		pushBody, err := json.Marshal(push)
		if err != nil {
			t.Fatal(err)
		}
		if code, out := h.deliver("push", pushBody); code != 200 {
			t.Fatalf("push: %d %s", code, out)
		}

		want := map[int]struct {
			state           outcomes.State
			withdrawn       bool
			rounds, reviews int
			reverted        bool
		}{
			10: {outcomes.Merged, false, 2, 1, false},
			11: {outcomes.Closed, false, 0, 0, false},
			12: {outcomes.Closed, true, 0, 0, false},
			13: {outcomes.Merged, false, 0, 0, true},
			14: {outcomes.Merged, false, 0, 0, true},
		}
		for n, w := range want {
			f, err := h.st.GetFate(ctx, repoID, n)
			if err != nil {
				t.Fatal(err)
			}
			if f.State != w.state || f.Withdrawn != w.withdrawn || f.ReviewRounds != w.rounds || f.ReviewComments != w.reviews || f.RevertedAt.IsZero() == w.reverted {
				t.Errorf("#%d: %+v, want %+v", n, f, w)
			}
			if n == 10 && (f.ThreadComments != 1 || f.ClosedBy != "mara" || f.FirstReviewAt.IsZero() || f.MergeSHA == "") {
				t.Errorf("#10: %+v", f)
			}
			if n == 14 && f.ClosedBy != "ada" {
				t.Errorf("#14 merged by %q, want ada", f.ClosedBy)
			}
		}
		groups, err := h.st.OutcomeGroups(ctx, outcomes.ByPreset, store.OutcomeFilter{AllRepos: true})
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := outcomes.Report(groups, nil)
		if len(rows) != 1 {
			t.Fatalf("by preset: %+v", rows)
		}
		g := rows[0]
		// 5 opened; 3 merged (#10, #13, #14), 1 closed, 1 withdrawn (left
		// out), 2 reverted: 3/4 accepted; rounds 0,0,2 → median 0;
		// comments (review and thread) 0,0,2 → 0.
		if g.Key != "codex" || g.Sessions != 5 || g.Opened != 5 || g.Merged != 3 || g.Closed != 1 || g.Withdrawn != 1 || g.Reverted != 2 ||
			g.AcceptanceRate != 0.75 || g.MedianRounds != 0 || g.MedianComments != 0 || g.TokensPerMerged != 1000 {
			t.Errorf("figures: %+v", g)
		}
		fams := scrapeMetrics(t, h)
		labels := map[string]string{"trigger": "comment", "preset": "codex", "model": "gpt-test"}
		for fate, n := range map[string]float64{"opened": 5, "merged": 3, "closed_unmerged": 1, "withdrawn": 1, "reverted": 2} {
			l := map[string]string{"fate": fate}
			for k, v := range labels {
				l[k] = v
			}
			if v, ok := seriesValue(fams, "inspect_outcome_prs", l); !ok || v != n {
				t.Errorf("inspect_outcome_prs{fate=%q} = %v (%v), want %v", fate, v, ok, n)
			}
		}
		if v, _ := seriesValue(fams, "inspect_outcome_acceptance_ratio", labels); v != 0.75 {
			t.Errorf("acceptance ratio %v, want 0.75", v)
		}
		for kind, n := range map[string]float64{"merged": 3, "review_round": 2, "reverted": 2, "closed": 1, "withdrawn": 1} {
			l := map[string]string{"kind": kind}
			for k, v := range labels {
				l[k] = v
			}
			if v, _ := seriesValue(fams, "inspect_pr_fate_events_total", l); v != n {
				t.Errorf("inspect_pr_fate_events_total{kind=%q} = %v, want %v", kind, v, n)
			}
		}
		for _, f := range fams["inspect_pr_fate_events_total"].GetMetric() {
			for _, l := range f.GetLabel() {
				if l.GetName() == "requester" || l.GetValue() == "alice" {
					t.Errorf("a per-user label: %v", f.GetLabel())
				}
			}
		}
	})
}

// Installing the App backfills: the PRs Inspect opened get their fates
// from the API, a bounded batch per reconcile pass (fates.Batch, at most
// five requests each, one after another through the installation's
// outbound-limited client), the rest on the next pass. The stand-in
// counts the requests.
func TestBackfillAtInstallStaysWithinTheOutboundLimits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const prs = fates.Batch + 5
	for i := 0; i < prs; i++ {
		openedPR(t, h, 100+i, "alice", "claude-code", "m")
		h.gh.ClosePull(owner, repoName, 100+i, "mara", i%2 == 0) // no webhook reaches the server
	}
	install := loadFixture(t, "installation.created.json")
	install["installation"].(map[string]any)["id"] = installationID
	body, err := json.Marshal(install)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := h.deliver("installation", body); code != 200 {
		t.Fatalf("installation.created: %d %s", code, out)
	}
	pass := func() (requests int) {
		before := len(h.gh.Requests())
		h.runWorkers()
		for _, r := range h.gh.Requests()[before:] {
			if r.IsREST() && r.Method == "GET" {
				requests++
				if r.Auth != "installation" || r.InstallationID != installationID {
					t.Errorf("%s %s with %s credentials", r.Method, r.Path, r.Auth)
				}
			} else if r.IsREST() && r.Path != fmt.Sprintf("/app/installations/%d/access_tokens", installationID) {
				t.Errorf("the backfill wrote: %s %s", r.Method, r.Path)
			}
		}
		return requests
	}
	settled := func() (n int) {
		for i := 0; i < prs; i++ {
			if f, err := h.st.GetFate(ctx, repoID, 100+i); err == nil && f.State != outcomes.Open {
				n++
			}
		}
		return n
	}
	if got := pass(); got > fates.Batch*5 || got < fates.Batch {
		t.Errorf("the first pass asked %d times, want at most %d", got, fates.Batch*5)
	}
	if n := settled(); n != fates.Batch {
		t.Errorf("after one pass %d fates are known, want the batch of %d", n, fates.Batch)
	}
	h.clock.Advance(h.cfg.Workers.ReconcileInterval)
	if got := pass(); got > 5*5 {
		t.Errorf("the second pass asked %d times, want at most %d", got, 5*5)
	}
	if n := settled(); n != prs {
		t.Errorf("after two passes %d of %d fates are known", n, prs)
	}
	groups, err := h.st.OutcomeGroups(ctx, outcomes.ByModel, store.OutcomeFilter{AllRepos: true})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := outcomes.Report(groups, nil)
	if len(rows) != 1 || rows[0].Merged != prs/2 || rows[0].Closed != prs/2 {
		t.Errorf("figures after the backfill: %+v", rows)
	}
}

// A commit on the default branch that undoes a merged PR's change by its
// patch alone (no "Reverts" or "This reverts commit" in sight) is found by
// the check_revert work a push queues: it reads the merge commit's and the
// pushed commit's patches, and only for a commit touching the PR's files.
func TestARevertByItsPatchAlone(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.gh.SetWebhookTargets(secret, h.srv.URL+app.WebhookPath)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{"README.md": "hello\n", "docs.md": "docs\n"}, "the base")
	openedPR(t, h, 40, "alice", "codex", "m")
	merge := h.gh.CommitFiles(owner, repoName, "main", map[string]string{"README.md": "hello, world\n"}, "Inspect's change (#40)")
	send(t, h, "pull_request", h.gh.MergePullAs(owner, repoName, 40, "mara", merge))
	other := h.gh.CommitFiles(owner, repoName, "main", map[string]string{"docs.md": "more docs\n"}, "docs")
	undo := h.gh.CommitFiles(owner, repoName, "main", map[string]string{"README.md": "hello\n"}, "README: as it was")
	push := loadFixture(t, "push.payload.json")
	push["ref"], push["deleted"] = "refs/heads/main", false
	push["repository"].(map[string]any)["default_branch"] = "main"
	push["installation"] = map[string]any{"id": installationID}
	now := time.Now().UTC().Format(time.RFC3339) // the stand-in's clock, which stamped the merge
	push["commits"] = []any{
		map[string]any{"id": other, "timestamp": now, "message": "docs", "added": []any{}, "removed": []any{}, "modified": []any{"docs.md"}},
		map[string]any{"id": undo, "timestamp": now, "message": "README: as it was", "added": []any{}, "removed": []any{}, "modified": []any{"README.md"}},
	}
	body, err := json.Marshal(push)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := h.deliver("push", body); code != 200 {
		t.Fatalf("push: %d %s", code, out)
	}
	before := len(h.gh.RequestsMatching("GET", fmt.Sprintf("/repos/%s/%s/commits/", owner, repoName)))
	h.runWorkers()
	f, err := h.st.GetFate(ctx, repoID, 40)
	if err != nil {
		t.Fatal(err)
	}
	if f.State != outcomes.Merged || f.RevertedAt.IsZero() || f.RevertedBy != "patch:"+undo {
		t.Errorf("#40: %+v, want merged and reverted by %s", f, undo)
	}
	if got := len(h.gh.RequestsMatching("GET", fmt.Sprintf("/repos/%s/%s/commits/", owner, repoName))) - before; got != 2 {
		t.Errorf("read %d commits, want 2: the merge and the undoing commit (the docs commit touches none of the PR's files)", got)
	}
}

// A session that runs through the engine (a label, the spec, the upload,
// the report) and opens a PR gives it a fate at once, under the spec's
// preset and model, with the session's tokens; its merge then counts.
func TestASessionsOwnPRGetsItsFate(t *testing.T) {
	h, ex := newSessionHarnessOn(t, "sqlite")
	ctx := context.Background()
	h.gh.SetWebhookTargets(secret, h.srv.URL+app.WebhookPath)
	h.gh.SetIssueLabels(owner, repoName, issueNumber, "inspect") // prepare checks it is still there
	h.label("labeled", "inspect", "alice", "")
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Changed || !sess.OpensPR() {
		t.Fatalf("outcome %s, PR #%d (%s)\n%s", sess.Outcome, sess.PRNumber, sess.Detail, h.logs)
	}
	f, err := h.st.GetFate(ctx, repoID, sess.PRNumber)
	if err != nil {
		t.Fatalf("the session's PR has no fate: %v", err)
	}
	if f.SessionID != sess.ID || f.State != outcomes.Open || f.Trigger != "label" || f.Requester != "alice" ||
		f.Preset != string(spec.Agent.Preset) || f.Model != spec.Agent.Model {
		t.Errorf("fate %+v, want the session's (preset %q, model %q)", f, spec.Agent.Preset, spec.Agent.Model)
	}
	merged, _ := h.gh.ClosePull(owner, repoName, sess.PRNumber, "mara", true)
	send(t, h, "pull_request", merged)
	groups, err := h.st.OutcomeGroups(ctx, outcomes.ByTrigger, store.OutcomeFilter{AllRepos: true})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := outcomes.Report(groups, nil)
	if len(rows) != 1 || rows[0].Key != "label" || rows[0].Sessions != 1 || rows[0].Opened != 1 || rows[0].Merged != 1 || rows[0].AcceptanceRate != 1 {
		t.Errorf("by trigger: %+v", rows)
	}
}
