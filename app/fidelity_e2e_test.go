package app_test

import (
	"context"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// The rules GitHub documents and the stand-in enforces (issue 20): texts
// held to GitHub's limits, drafts where GitHub takes none.

// refusedRequests are the requests GitHub (the stand-in) answered with a
// 4xx other than 404, which a reply's replay looks for.
func (h *harness) refusedRequests() []string {
	var out []string
	for _, r := range h.gh.Requests() {
		if r.Status >= 400 && r.Status < 500 && r.Status != http.StatusNotFound {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}

// uploadEvidence puts ev (with the spec's ids filled in) as the attempt's
// result.
func (sv *supervisor) uploadEvidence(spec contract.Spec, ev contract.Evidence, files ...contract.FileChange) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev.Version, ev.SessionID, ev.AttemptID, ev.PinnedSHA = contract.EvidenceVersion, spec.SessionID, spec.AttemptID, spec.PinnedSHA
	ev.StartedAt, ev.EndedAt = now, now.Add(42*time.Second)
	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: spec.PinnedSHA, Files: files}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev, Manifest: m}, nil, 204)
}

func TestLongAgentOutputStillEndsTheSessionOnGitHub(t *testing.T) {
	h, sv, spec := newClaimedPRSession(t)
	// 30 lines of 2,500 characters: 75,000 characters, more than a check
	// run's summary or a comment may hold.
	line := strings.Repeat("é#1 @bob ", 250)[:2500]
	var tail strings.Builder
	for range 40 {
		tail.WriteString(line + "\n")
	}
	sv.uploadEvidence(spec, contract.Evidence{Outcome: contract.OutcomeAgentFailed, Commands: []contract.CommandResult{
		{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, ExitCode: 3, DurationMS: 100, OutputTail: tail.String(), OutputTruncated: true},
	}})
	h.runWorkers()

	sess := h.onlySession()
	if sess.State() != session.Done || sess.Outcome != session.Errored {
		t.Fatalf("session = %s/%s (%s)\n%s", sess.State(), sess.Outcome, sess.Reason, h.logs)
	}
	run := h.checkRun(sess.CheckRunID)
	if run.Status != "completed" || run.Conclusion != "failure" || !strings.Contains(run.Summary, "exited with code 3") {
		t.Errorf("check run = %s/%s, summary %.200q", run.Status, run.Conclusion, run.Summary)
	}
	progress := h.commentsWith(prNumber, sess.ID)
	if len(progress) != 1 || progress[0].Edits == 0 || !strings.Contains(progress[0].Body, "exited with code 3") {
		t.Errorf("progress comment = %+v", progress)
	}
	if refused := h.refusedRequests(); len(refused) != 0 {
		t.Errorf("GitHub refused %v", refused)
	}
}

func TestLongTestNameGetsItsAnnotation(t *testing.T) {
	h, sv, spec := newClaimedPRSession(t)
	name := "TestAdd/" + strings.Repeat("a_very_long_subtest_name_", 12) // 308 characters
	var failures []contract.TestFailure
	for i := range 60 {
		failures = append(failures, contract.TestFailure{Name: name, File: "calc_test.go", Line: 6 + i%3, Message: strings.Repeat("m", 8000)})
	}
	sv.uploadEvidence(spec, contract.Evidence{Outcome: contract.OutcomeVerifyFailed,
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, DurationMS: 100},
			{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: 1, DurationMS: 100},
		},
		Tests: &contract.TestSummary{Failed: 60, Failures: failures},
	}, fixedCalc)
	h.runWorkers()

	sess := h.onlySession()
	if sess.Outcome != session.VerificationFailed {
		t.Fatalf("outcome = %s (%s)\n%s", sess.Outcome, sess.Detail, h.logs)
	}
	run := h.checkRun(sess.CheckRunID)
	if len(run.Annotations) != 60 {
		t.Fatalf("%d annotations, want all 60 (in batches of 50)\n%s", len(run.Annotations), h.logs)
	}
	if a := run.Annotations[0]; !strings.HasPrefix(a.Title, "TestAdd/a_very_long") || len([]rune(a.Title)) > 255 {
		t.Errorf("annotation title %q of %d characters", a.Title, len([]rune(a.Title)))
	}
	if refused := h.refusedRequests(); len(refused) != 0 {
		t.Errorf("GitHub refused %v", refused)
	}
}

func TestFailedVerificationWhereDraftsAreRefusedOpensAMarkedPR(t *testing.T) {
	h, ex := newSessionHarness(t)
	// A private repository of an owner on GitHub Free: no drafts.
	h.gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID,
		OwnerType: "User", Private: true, OwnerPlan: fakegithub.PlanFree})
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect fix the failing test"}, 1, fixedCalc)
	if sess.Outcome != session.VerificationFailed || sess.PRNumber == 0 {
		t.Fatalf("session = %s PR %d (%s)\n%s", sess.Outcome, sess.PRNumber, sess.Detail, h.logs)
	}
	prs, _, err := h.client(t).PullRequests.List(context.Background(), owner, repoName, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ours []int
	for _, pr := range prs {
		if strings.HasPrefix(pr.GetHead().GetRef(), "inspect/") {
			ours = append(ours, pr.GetNumber())
		}
	}
	if len(ours) != 1 || ours[0] != sess.PRNumber {
		t.Fatalf("Inspect's pull requests = %v, want just #%d", ours, sess.PRNumber)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if pr.GetDraft() || !strings.HasPrefix(pr.GetTitle(), "[verification failed] ") || !strings.Contains(pr.GetBody(), "**Verification failed.**") {
		t.Errorf("draft=%v title %q body:\n%s", pr.GetDraft(), pr.GetTitle(), pr.GetBody())
	}
	if labels := h.gh.IssueLabels(owner, repoName, sess.PRNumber); len(labels) != 1 || labels[0] != config.UnverifiedLabel {
		t.Errorf("labels = %v, want %s", labels, config.UnverifiedLabel)
	}
	if l, ok := h.gh.Label(owner, repoName, config.UnverifiedLabel); !ok || l.Description == "" || l.Color == "ededed" {
		t.Errorf("label = %+v %v, want one made with a color and a description", l, ok)
	}
	replies := h.comments(issueNumber)
	if len(replies) != 1 || !strings.Contains(replies[0].Body, "Verification failed") || !strings.Contains(replies[0].Body, "#"+strconv.Itoa(sess.PRNumber)) {
		t.Errorf("comments = %+v", replies)
	}
	var opened []int
	for _, r := range h.gh.RequestsMatching("POST", "/repos/"+owner+"/"+repoName+"/pulls") {
		if r.Path == "/repos/"+owner+"/"+repoName+"/pulls" {
			opened = append(opened, r.Status)
		}
	}
	if len(opened) != 2 || opened[0] != http.StatusUnprocessableEntity || opened[1] != http.StatusCreated {
		t.Errorf("pull requests asked for: %v, want the draft refused and then the ready one", opened)
	}
}

// TestARefusedUpdateKeepsNoOtherFromHappening: a check-run PATCH GitHub
// refuses still lets the progress comment be edited, and the reverse; the
// retry brings the other in line.
func TestARefusedUpdateKeepsNoOtherFromHappening(t *testing.T) {
	for _, tc := range []struct {
		name, failing string
	}{
		{"check run refused", "/repos/*/*/check-runs/*"},
		{"comment edit refused", "/repos/*/*/issues/comments/*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, sv, spec := newClaimedPRSession(t)
			h.gh.FailNext("PATCH", tc.failing, http.StatusUnprocessableEntity)
			sv.upload(spec, 0, fixedCalc)
			h.runWorkers()

			sess := h.onlySession()
			if sess.Outcome != session.Changed {
				t.Fatalf("outcome = %s (%s)\n%s", sess.Outcome, sess.Detail, h.logs)
			}
			concluded := func() bool { return h.checkRun(sess.CheckRunID).Status == "completed" }
			edited := func() bool {
				c := h.commentsWith(prNumber, sess.ID)
				return len(c) == 1 && strings.Contains(c[0].Body, "done: changed")
			}
			if tc.failing == "/repos/*/*/check-runs/*" && (concluded() || !edited()) {
				t.Fatalf("after a refused check run: concluded %v, comment edited %v", concluded(), edited())
			}
			if tc.failing != "/repos/*/*/check-runs/*" && (!concluded() || edited()) {
				t.Fatalf("after a refused comment edit: concluded %v, comment edited %v", concluded(), edited())
			}
			h.clock.Advance(time.Minute)
			h.runWorkers()
			if !concluded() || !edited() {
				t.Errorf("after the retry: concluded %v, comment edited %v\n%s", concluded(), edited(), h.logs)
			}
		})
	}
}

// TestLabelWithASlashStartsAndComesOff: a trigger label named team/inspect
// starts a session and is removed at its end, its name escaped once in the
// path (GitHub takes the rest of the path as the name; a double escape
// would name another label and leave this one on).
func TestLabelWithASlashStartsAndComesOff(t *testing.T) {
	h, ex := newSessionHarness(t)
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(agentConfig+"label: team/inspect\n"))
	h.primeConfigCache()
	h.gh.SetIssueLabels(owner, repoName, issueNumber, "team/inspect")
	h.label("labeled", "team/inspect", "alice", "")
	sess := h.onlySession()
	if sess.TriggerKind != "label" || sess.State() != session.Dispatched {
		t.Fatalf("session = %s %s (%s)\n%s", sess.TriggerKind, sess.State(), sess.Detail, h.logs)
	}
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	if s := h.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("outcome = %s (%s)\n%s", s.Outcome, s.Detail, h.logs)
	}
	if got := h.gh.IssueLabels(owner, repoName, issueNumber); len(got) != 1 || got[0] != config.OutcomeLabelDone {
		t.Errorf("labels = %v, want team/inspect gone and %s on", got, config.OutcomeLabelDone)
	}
	var removals []string
	for _, r := range h.gh.RequestsMatching("DELETE", "/repos/"+owner+"/"+repoName+"/issues/") {
		removals = append(removals, r.Path)
	}
	if !slices.Contains(removals, "/repos/"+owner+"/"+repoName+"/issues/1/labels/team/inspect") {
		t.Errorf("label removals %q, want team/inspect's", removals)
	}
}

// TestDeletionsCommitATreeWithoutThem: two deletions, one the last file of
// its directory, leave a tree that lacks both; a deletion of a path the
// base lacks is never sent (GitHub would fail the whole tree).
func TestDeletionsCommitATreeWithoutThem(t *testing.T) {
	h, ex := newSessionHarness(t)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{"docs/only.md": "old\n", "notes.txt": "old\n"}, "more files")
	sess := runToUpload(t, h, ex, commentOpts{body: "/inspect tidy up"}, 0,
		fixedCalc,
		contract.FileChange{Path: "docs/only.md", Deleted: true},
		contract.FileChange{Path: "notes.txt", Deleted: true},
		contract.FileChange{Path: "never/was.txt", Deleted: true},
	)
	if sess.Outcome != session.Changed {
		t.Fatalf("outcome = %s (%s)\n%s", sess.Outcome, sess.Detail, h.logs)
	}
	out, err := exec.Command("git", "--git-dir", h.gh.GitDir(owner, repoName), "ls-tree", "-r", "--name-only", sess.CommitSHA).Output()
	if err != nil {
		t.Fatal(err)
	}
	files := strings.Fields(string(out))
	for _, gone := range []string{"docs/only.md", "notes.txt"} {
		if slices.Contains(files, gone) {
			t.Errorf("the commit still has %s: %q", gone, files)
		}
	}
	if !slices.Contains(files, "calc.go") {
		t.Errorf("the commit lost calc.go: %q", files)
	}
	for _, r := range h.gh.RequestsMatching("POST", "/repos/"+owner+"/"+repoName+"/git/trees") {
		if strings.Contains(string(r.Body), "never/was.txt") {
			t.Errorf("a deletion of a path the base lacks was sent: %s", r.Body)
		}
		if r.Status != http.StatusCreated {
			t.Errorf("POST git/trees answered %d", r.Status)
		}
	}
}

// TestAnAGENTSmdOver1MBIsLeftOutNotFatal: GitHub's contents API refuses a
// file over 1 MB in its default media type; the session runs without it.
func TestAnAGENTSmdOver1MBIsLeftOutNotFatal(t *testing.T) {
	h, ex := newSessionHarness(t)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{"AGENTS.md": strings.Repeat("guidance\n", 1<<17)}, "big guidance")
	withRealPR(t, h)
	_, spec := startOnPR(t, h, ex, "/inspect fix it")
	for _, c := range spec.Context {
		if c.Kind == contract.ContextAgentsMD {
			t.Errorf("an AGENTS.md GitHub would not serve is in the spec: %.100q", c.Text)
		}
	}
	if s := h.onlySession(); s.State() != session.Running && s.State() != session.Dispatched {
		t.Errorf("session = %s (%s)", s.State(), s.Detail)
	}
}

// newClaimedPRSession is a session asked for on the fixture's pull request
// (a real one on the stand-in), whose attempt the test's supervisor has
// claimed: h, that supervisor, and the spec it got.
func newClaimedPRSession(t *testing.T) (*harness, *supervisor, contract.Spec) {
	t.Helper()
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	return h, sv, spec
}
