package app_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/report"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// withBaselines runs the base's verify beside each session (decision
// 0080), as sessions.baseline does by default.
func withBaselines(c *config.Server) { c.Sessions.Baseline = true }

// split is the launches so far: the sessions' and the baselines' (whose
// run is named "baseline-...").
func (e *scriptedExecutor) split() (sessions, baselines []runner.Attempt) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.launches {
		if strings.HasPrefix(l.SessionID, "baseline-") {
			baselines = append(baselines, l)
		} else {
			sessions = append(sessions, l)
		}
	}
	return sessions, baselines
}

// launched fails the test unless the launches are so many sessions' and
// so many baselines', and returns them.
func launched(t *testing.T, h *harness, ex *scriptedExecutor, sessions, baselines int) ([]runner.Attempt, []runner.Attempt) {
	t.Helper()
	s, b := ex.split()
	if len(s) != sessions || len(b) != baselines {
		t.Fatalf("launched %d sessions and %d baselines, want %d and %d\n%s", len(s), len(b), sessions, baselines, h.logs)
	}
	return s, b
}

// verifyEvidence is a verify's evidence with the named tests' outcomes.
func verifyEvidence(outcome contract.OutcomeHint, tests ...contract.TestResult) contract.Evidence {
	sum := &contract.TestSummary{Results: tests}
	exit := 0
	for _, r := range tests {
		switch r.Outcome {
		case contract.TestFailed:
			sum.Failed++
			exit = 1
		case contract.TestPassed:
			sum.Passed++
		}
	}
	return contract.Evidence{Outcome: outcome, Tests: sum, Commands: []contract.CommandResult{
		{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: exit, DurationMS: 1200}}}
}

var (
	addFails  = contract.TestResult{Name: "TestAdd", Outcome: contract.TestFailed}
	addPasses = contract.TestResult{Name: "TestAdd", Outcome: contract.TestPassed}
	subPasses = contract.TestResult{Name: "TestSub", Outcome: contract.TestPassed}
)

// runBase plays the baseline attempt's supervisor: the base's TestAdd
// fails. It returns the baseline's spec.
func runBase(t *testing.T, h *harness, l runner.Attempt) contract.Spec {
	t.Helper()
	sv := h.claim(l)
	spec := sv.spec()
	if !spec.Baseline || spec.AttemptID != l.AttemptID || spec.SessionID != l.SessionID || len(spec.Context) != 0 || spec.Steer != nil {
		t.Fatalf("the baseline's spec: baseline %v, attempt %s, session %s, context %d, steer %+v", spec.Baseline, spec.AttemptID, spec.SessionID, len(spec.Context), spec.Steer)
	}
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeVerifyFailed, addFails, subPasses))
	return spec
}

// storedEvidence is the attempt's evidence as the store keeps it.
func storedEvidence(t *testing.T, h *harness, attemptID string) contract.Evidence {
	t.Helper()
	return attemptResult(t, h, attemptID).Evidence
}

// wantFixed fails the test unless ev compares with the baseline of
// attempt base on baseSHA, TestAdd fixed, reused or not.
func wantFixed(t *testing.T, ev contract.Evidence, base, baseSHA string, reused bool) {
	t.Helper()
	b := ev.Baseline
	if b == nil {
		t.Fatal("the evidence has no baseline")
	}
	want := []contract.TestComparison{{Name: "TestAdd", Base: contract.TestFailed, Change: contract.TestPassed, Fared: contract.TestFixed}}
	if b.Status != contract.BaselineCompared || b.AttemptID != base || b.Reused != reused || b.BaseSHA != baseSHA ||
		b.Counts.Fixed != 1 || b.Counts.Passing != 1 || b.Counts.NewlyFailing != 0 || !reflect.DeepEqual(b.Tests, want) ||
		len(b.Verify) != 1 || b.Verify[0].ExitCode != 1 || !strings.HasPrefix(b.CacheDigest, "sha256:") {
		t.Errorf("the baseline = %+v, want compared with %s on %s (reused %v), TestAdd fixed", *b, base, baseSHA, reused)
	}
}

// The base's verify runs in an attempt of its own beside the session's;
// the session's report waits for it, and the evidence kept compares the
// two: TestAdd, failing on the base, is fixed.
func TestTheBaseVerifyRunsBesideTheSessionAndIsCompared(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sessions, bases := launched(t, h, ex, 1, 1)
	sv := h.claim(sessions[0])
	spec := sv.spec()
	h.runWorkers()
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeOK, addPasses, subPasses), fixedCalc)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Reporting {
		t.Fatalf("the report did not wait for the base's verify: %s/%s\n%s", s.State(), s.Outcome, h.logs)
	}
	bspec := runBase(t, h, bases[0])
	if bspec.PinnedSHA != spec.PinnedSHA || !reflect.DeepEqual(bspec.Verify, spec.Verify) {
		t.Errorf("the base's verify runs %v on %s; the session's %v on %s", bspec.Verify, bspec.PinnedSHA, spec.Verify, spec.PinnedSHA)
	}
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
	}
	wantFixed(t, storedEvidence(t, h, s.AttemptID), bases[0].AttemptID, spec.PinnedSHA, false)
	// Its own attempt, of no session, ended with its result.
	a, err := h.st.GetAttempt(context.Background(), bases[0].AttemptID)
	if err != nil || a.Kind != string(contract.KindBaseline) || a.SessionID != "" || a.State != store.AttemptEnded {
		t.Errorf("the baseline's attempt: %+v, %v", a, err)
	}
	// Nothing of it reached GitHub: one check run, the session's.
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
}

// A retry of the session (its attempt lost and re-dispatched) compares
// with the same base's verify, which does not run again.
func TestARetryReusesTheBaseVerify(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	_, bases := launched(t, h, ex, 1, 1)
	first := h.onlySession().AttemptID
	ex.mu.Lock()
	ex.lost = map[string]bool{"scripted-1": true} // the session's run
	ex.mu.Unlock()
	h.runWorkers()
	sessions, _ := launched(t, h, ex, 2, 1)
	s := h.onlySession()
	if s.Redispatches != 1 || s.AttemptID == first || s.AttemptID != sessions[1].AttemptID {
		t.Fatalf("no re-dispatch: %d, attempt %s\n%s", s.Redispatches, s.AttemptID, h.logs)
	}
	runBase(t, h, bases[0])
	sv := h.claim(sessions[1])
	spec := sv.spec()
	h.runWorkers()
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeOK, addPasses, subPasses), fixedCalc)
	h.runWorkers()
	if s = h.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
	}
	ev := storedEvidence(t, h, s.AttemptID)
	wantFixed(t, ev, bases[0].AttemptID, spec.PinnedSHA, true)
	launched(t, h, ex, 2, 1)
	b, err := h.st.GetBaseline(context.Background(), ev.Baseline.CacheDigest)
	if err != nil || b.AttemptID != bases[0].AttemptID || b.ForAttempt != first || b.State != store.BaselineDone {
		t.Errorf("the baseline: %+v, %v", b, err)
	}
}

// A later turn (a continuation, decision 0072) compares with the base
// the conversation started from, and reuses its verify.
func TestALaterTurnReusesTheBaseVerify(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	withRealPR(t, h)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the flaky test", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sessions, bases := launched(t, h, ex, 1, 1)
	runBase(t, h, bases[0])
	sv := h.claim(sessions[0])
	spec := sv.spec()
	h.runWorkers()
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeOK, addPasses, subPasses), fixedCalc)
	h.runWorkers()
	first := h.onlySession()
	if first.Outcome != session.Changed {
		t.Fatalf("the first session: %s (%s)\n%s", first.Outcome, first.Detail, h.logs)
	}
	wantFixed(t, storedEvidence(t, h, first.AttemptID), bases[0].AttemptID, spec.PinnedSHA, false)

	h.clock.Advance(time.Minute)
	h.say(t, "ada", "/inspect now add docs")
	sessions, _ = launched(t, h, ex, 2, 1)
	sv2 := h.claim(sessions[1])
	spec2 := sv2.spec()
	if spec2.PinnedSHA == spec.PinnedSHA {
		t.Fatalf("the continuation is pinned where the first was (%s): the test shows nothing", spec.PinnedSHA)
	}
	h.runWorkers()
	sv2.uploadEvidence(spec2, verifyEvidence(contract.OutcomeOK, addPasses, subPasses),
		contract.FileChange{Path: "DOCS.md", Mode: contract.ModeFile, Content: []byte("docs\n")})
	h.runWorkers()
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	if next.Outcome != session.Changed || next.Info().Continues != first.ID {
		t.Fatalf("the continuation: %s continues %q (%s)\n%s", next.Outcome, next.Info().Continues, next.Detail, h.logs)
	}
	wantFixed(t, storedEvidence(t, h, next.AttemptID), bases[0].AttemptID, spec.PinnedSHA, true)
	launched(t, h, ex, 2, 1)
}

// A baseline the executor has no room for waits, the session's own
// attempt having gone first; the report waits for it until its deadline,
// and then the comparison says it is unavailable and why, and the session
// ends as its own result says.
func TestABaselineWithNoRoomWaitsThenIsUnavailable(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	ex.mu.Lock()
	ex.full = func(l runner.Attempt) bool { return strings.HasPrefix(l.SessionID, "baseline-") }
	ex.mu.Unlock()
	reportFixedWithoutABase(t, h, ex)
	s := h.onlySession()
	if s.State() != session.Reporting {
		t.Fatalf("the report did not wait for the base's verify: %s/%s\n%s", s.State(), s.Outcome, h.logs)
	}
	a, err := h.st.GetAttempt(context.Background(), s.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.st.GetBaseline(context.Background(), a.BaselineDigest)
	if err != nil || b.State != store.BaselineWaiting {
		t.Fatalf("the baseline: %+v, %v", b, err)
	}
	// Not the whole deadline: a few minutes after the change's result.
	h.clock.Advance(report.UnstartedBaseWait + time.Second)
	h.runWorkers()
	if s = h.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
	}
	ev := storedEvidence(t, h, s.AttemptID)
	if ev.Baseline == nil || ev.Baseline.Status != contract.BaselineUnavailable || ev.Baseline.AttemptID != b.AttemptID ||
		!strings.Contains(ev.Baseline.Why, "no room for the base's verify within 5m0s") {
		t.Errorf("the baseline = %+v, want unavailable saying it never ran", ev.Baseline)
	}
	launched(t, h, ex, 1, 0)
	if ba, err := h.st.GetAttempt(context.Background(), b.AttemptID); err != nil || ba.State != store.AttemptEnded || ba.ExternalID != "" {
		t.Errorf("the baseline's attempt: %+v, %v", ba, err)
	}
	if b, err = h.st.GetBaseline(context.Background(), a.BaselineDigest); err != nil || b.State != store.BaselineFailed {
		t.Errorf("the baseline after its deadline: %+v, %v", b, err)
	}
}

// An executor that fails to start the base's verify fails the baseline at
// once; the comparison is unavailable and says so in a sentence of
// Inspect's, not the executor's error, which can hold its API's answer or
// a host name and stays in the app's log.
func TestABaselineTheExecutorRefusesIsUnavailableWithoutItsError(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	const internals = "POST https://buildkite.internal.example:8443/v2/builds: 502 Bad Gateway"
	ex.mu.Lock()
	ex.refuse = func(l runner.Attempt) error {
		if strings.HasPrefix(l.SessionID, "baseline-") {
			return errors.New(internals)
		}
		return nil
	}
	ex.mu.Unlock()
	reportFixedWithoutABase(t, h, ex)
	s := h.onlySession()
	if s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
	}
	ev := storedEvidence(t, h, s.AttemptID)
	if ev.Baseline == nil || ev.Baseline.Status != contract.BaselineUnavailable ||
		!strings.Contains(ev.Baseline.Why, "could not start") || strings.Contains(ev.Baseline.Why, "buildkite.internal") {
		t.Errorf("the baseline = %+v, want unavailable, saying it could not start without the executor's error", ev.Baseline)
	}
	if !strings.Contains(h.logs.String(), internals) {
		t.Errorf("the app's log lacks the executor's error:\n%s", h.logs)
	}
}

// reportFixedWithoutABase starts a session whose baseline the executor
// does not launch (ex says why), and reports its change fixed and
// verified.
func reportFixedWithoutABase(t *testing.T, h *harness, ex *scriptedExecutor) {
	t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sessions, _ := launched(t, h, ex, 1, 0)
	sv := h.claim(sessions[0])
	spec := sv.spec()
	h.runWorkers()
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeOK, addPasses, subPasses), fixedCalc)
	h.runWorkers()
}

// A baseline whose supervisor claimed it and never reported is lost:
// once its deadline (and the grace a late upload gets) has passed,
// reconcile fails it and stops its run, and the waiting report says the
// comparison is unavailable.
func TestALostBaselineIsFailedAndItsRunStopped(t *testing.T) {
	h, ex := newSessionHarness(t, withBaselines)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sessions, bases := launched(t, h, ex, 1, 1)
	h.claim(bases[0]).spec() // claimed, and silent from here on
	sv := h.claim(sessions[0])
	spec := sv.spec()
	h.runWorkers()
	sv.uploadEvidence(spec, verifyEvidence(contract.OutcomeOK, addPasses, subPasses), fixedCalc)
	h.runWorkers()
	if s := h.onlySession(); s.State() != session.Reporting {
		t.Fatalf("the report did not wait for the base's verify: %s/%s\n%s", s.State(), s.Outcome, h.logs)
	}
	h.clock.Advance(spec.Limits.Deadline.Sub(h.clock.Now()) + 10*time.Minute)
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
	}
	ev := storedEvidence(t, h, s.AttemptID)
	if ev.Baseline == nil || ev.Baseline.Status != contract.BaselineUnavailable || ev.Baseline.Why != "the base's verify did not report by its deadline" {
		t.Errorf("the baseline = %+v", ev.Baseline)
	}
	ex.mu.Lock()
	cancelled := strings.Join(ex.cancelled, " ")
	ex.mu.Unlock()
	if !strings.Contains(cancelled, "scripted-2") {
		t.Errorf("the lost baseline's run was not stopped (cancelled: %q)", cancelled)
	}
	if a, err := h.st.GetAttempt(context.Background(), bases[0].AttemptID); err != nil || a.State != store.AttemptEnded {
		t.Errorf("the lost baseline's attempt: %+v, %v", a, err)
	}
}
