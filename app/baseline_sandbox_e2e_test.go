package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// Through the real sandbox: the base's verify runs in a sandbox of its
// own beside the session's, on the sample repository's pinned commit,
// where TestAdd fails; the stand-in agent fixes it, and the evidence kept
// says so, test by test.
func TestRealBaseVerifyFindsTheTestTheChangeFixed(t *testing.T) {
	h, lx := newSandboxHarness(t, withBaselines)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	ctx := context.Background()
	sess := h.onlySession()
	a, err := h.st.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.BaselineDigest == "" {
		t.Fatalf("the session's attempt links no baseline: %+v, %v\n%s", a, err, h.logs)
	}
	b, err := h.st.GetBaseline(ctx, a.BaselineDigest)
	if err != nil {
		t.Fatal(err)
	}
	base, err := h.st.GetAttempt(ctx, b.AttemptID)
	if err != nil || base.ExternalID == "" || base.ExternalID == a.ExternalID {
		t.Fatalf("the baseline did not start beside the session: %+v, %v\n%s", base, err, h.logs)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if st, err := lx.Wait(wctx, base.ExternalID); err != nil || st.ExitCode != 0 {
		t.Fatalf("the baseline's inspect runner: %+v %v\n%s", st, err, h.logs)
	}
	h.waitForAttempt(lx)
	h.runWorkers()
	sess = h.onlySession()
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	cmp := storedEvidence(t, h, sess.AttemptID).Baseline
	if cmp == nil || cmp.Status != contract.BaselineCompared || cmp.AttemptID != base.ID || cmp.Reused || cmp.Counts.Fixed != 1 || cmp.Counts.NewlyFailing != 0 ||
		len(cmp.Tests) != 1 || cmp.Tests[0].Fared != contract.TestFixed {
		t.Fatalf("the baseline = %+v\n%s", cmp, h.logs)
	}
	// The base's own evidence: verify failed there, and no agent ran.
	bev := storedEvidence(t, h, base.ID)
	if bev.Outcome != contract.OutcomeVerifyFailed {
		t.Errorf("the base's verify ended %s: %s", bev.Outcome, bev.Reason)
	}
	for _, c := range bev.Commands {
		if c.Phase == contract.PhaseAgent {
			t.Errorf("the agent ran on the base: %+v", c)
		}
	}
}
