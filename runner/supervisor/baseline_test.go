package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// A baseline (decision 0080) runs verify on the pinned commit and nothing
// else: the agent, which would fix the test, never runs, so the test that
// fails there fails in the evidence, named, and nothing is collected.
func TestABaselineVerifiesThePinnedCommitWithoutTheAgent(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("baseline-7-b1", "baseline-b1", sha, []string{"sh", "agent/fix.sh"},
		command("test", 5*time.Minute, "go", "test", "-json", "./..."))
	spec.Baseline = true
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed || ev.Partial {
		t.Fatalf("outcome %s partial %v: %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	for _, c := range ev.Commands {
		if c.Phase != contract.PhaseVerify {
			t.Errorf("a %s command ran: %s %v", c.Phase, c.Name, c.Argv)
		}
	}
	if len(ev.Commands) != 1 || ev.Commands[0].Name != "test" || ev.Commands[0].ExitCode != 1 {
		t.Errorf("commands %+v", ev.Commands)
	}
	failed := ""
	if ev.Tests != nil {
		for _, r := range ev.Tests.Results {
			if r.Outcome == contract.TestFailed {
				failed += r.Name + " "
			}
		}
	}
	if failed != "example.com/widgets.TestAdd " {
		t.Errorf("failing tests %q, want TestAdd alone (tests %+v)", failed, ev.Tests)
	}
	if u.Manifest != nil || len(ev.Changes) != 0 || ev.Diff != nil || ev.Baseline != nil {
		t.Errorf("a baseline sent a change or a comparison: manifest %+v, changes %+v, baseline %+v", u.Manifest, ev.Changes, ev.Baseline)
	}
}
