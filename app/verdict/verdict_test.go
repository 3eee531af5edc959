package verdict

import (
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

var (
	goTest  = contract.CommandResult{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test", "./..."}}
	goVet   = contract.CommandResult{Phase: contract.PhaseVerify, Name: "vet", Argv: []string{"go", "vet", "./..."}}
	failing = func(c contract.CommandResult) contract.CommandResult { c.ExitCode = 1; return c }
)

// evidence is a change's evidence: its verify commands, the failures its
// tests counted, and the comparison with the base (nil for none).
func evidence(cmds []contract.CommandResult, failed int, b *contract.BaselineComparison) contract.Evidence {
	return contract.Evidence{Outcome: contract.OutcomeOK, Commands: cmds, Tests: &contract.TestSummary{Passed: 10, Failed: failed}, Baseline: b}
}

// compared is a comparison with these counts, the base's verify commands
// as given.
func compared(c contract.BaselineCounts, baseVerify ...contract.CommandResult) *contract.BaselineComparison {
	return &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "a-base", Counts: c, Verify: baseVerify}
}

// TestVerdictCaseByCase is decision 0081's table (docs/ARCHITECTURE.md,
// "Sessions and outcomes"), one row a case: the outcome, the reason,
// whether the PR is ready, and the check run's conclusion.
func TestVerdictCaseByCase(t *testing.T) {
	passed := []contract.CommandResult{goTest}
	failed := []contract.CommandResult{failing(goTest)}
	notReproduced := compared(contract.BaselineCounts{Fixed: 1, Passing: 9}, failing(goTest))
	notReproduced.Reproduction = &contract.Reproduction{Why: "no test the change adds fails on the base"}
	reproduced := compared(contract.BaselineCounts{Fixed: 1, Passing: 9}, failing(goTest))
	reproduced.Reproduction = &contract.Reproduction{Reproduced: true, Tests: []string{"TestA"}}
	unavailableNotReproduced := &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: "the base's verify timed out",
		Reproduction: &contract.Reproduction{Why: "the base's verify did not run"}}
	for _, tc := range []struct {
		name       string
		ev         contract.Evidence
		outcome    session.Outcome
		reason     string
		ready      bool
		conclusion string
	}{
		{"no comparison, verify passed", evidence(passed, 0, nil), session.Changed, ReasonChanged, true, "success"},
		{"no comparison, verify failed", evidence(failed, 1, nil), session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"comparison unavailable, verify passed", evidence(passed, 0, &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: "timed out"}),
			session.Changed, ReasonChanged, true, "success"},
		{"comparison unavailable, verify failed, even counts that would otherwise be neutral", evidence(failed, 1, &contract.BaselineComparison{Status: contract.BaselineUnavailable,
			Counts: contract.BaselineCounts{Fixed: 1, StillFailing: 1}}), session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"no verify command at all", contract.Evidence{Outcome: contract.OutcomeOK}, session.Changed, ReasonChanged, true, "success"},
		{"the target fixed", evidence(passed, 0, compared(contract.BaselineCounts{Fixed: 1, Passing: 9}, failing(goTest))),
			session.Changed, ReasonChanged, true, "success"},
		{"passing throughout only", evidence(passed, 0, compared(contract.BaselineCounts{Passing: 10}, goTest)),
			session.Changed, ReasonChanged, true, "success"},
		{"the target fixed and another broken", evidence(failed, 1, compared(contract.BaselineCounts{Fixed: 1, NewlyFailing: 1, Passing: 9}, failing(goTest))),
			session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"the target fixed while an earlier failure stays", evidence(failed, 1, compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1, Passing: 9}, failing(goTest))),
			session.VerificationFailed, ReasonFailsWhereBaseFailed, false, "neutral"},
		{"nothing fixed, only the base's failures remain", evidence(failed, 1, compared(contract.BaselineCounts{StillFailing: 1, Passing: 9}, failing(goTest))),
			session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"the failing test deleted, verify passes", evidence(passed, 0, compared(contract.BaselineCounts{Removed: 1, NotFixed: 1, Passing: 9}, failing(goTest))),
			session.VerificationFailed, ReasonNotFixed, false, "failure"},
		{"the failing test skipped, verify passes", evidence(passed, 0, compared(contract.BaselineCounts{Skipped: 1, NotFixed: 1, Passing: 9}, failing(goTest))),
			session.VerificationFailed, ReasonNotFixed, false, "failure"},
		{"a passing test removed is not 'not fixed'", evidence(passed, 0, compared(contract.BaselineCounts{Removed: 1, Passing: 9}, goTest)),
			session.Changed, ReasonChanged, true, "success"},
		{"one fixed, one deleted, earlier failure stays: not fixed", evidence(failed, 1, compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1, Removed: 1, NotFixed: 1}, failing(goTest))),
			session.VerificationFailed, ReasonNotFixed, false, "failure"},
		{"deleted and another broken: the newly failing one is the reason", evidence(failed, 1, compared(contract.BaselineCounts{NewlyFailing: 1, Removed: 1, NotFixed: 1}, failing(goTest))),
			session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"a failure on the base not named with the change: not counted fixed", evidence(passed, 0, compared(contract.BaselineCounts{NotNamed: 1}, failing(goTest))),
			session.Changed, ReasonChanged, true, "success"},
		{"fixed and still failing, but another command fails that passed on the base", evidence([]contract.CommandResult{failing(goTest), failing(goVet)}, 1,
			compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1}, failing(goTest), goVet)), session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"fixed and still failing, a command the base did not run fails", evidence([]contract.CommandResult{failing(goTest), failing(goVet)}, 1,
			compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1}, failing(goTest))), session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"fixed and still failing, but more failures counted than named", evidence(failed, 3, compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1}, failing(goTest))),
			session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"fixed and still failing, both commands failed on the base too", evidence([]contract.CommandResult{failing(goTest), failing(goVet)}, 1,
			compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1}, failing(goTest), failing(goVet))), session.VerificationFailed, ReasonFailsWhereBaseFailed, false, "neutral"},
		{"reproduce-first did not reproduce on a verified change", evidence(passed, 0, notReproduced), session.Changed, ReasonNotReproduced, false, "neutral"},
		{"reproduce-first did not reproduce, comparison unavailable", evidence(passed, 0, unavailableNotReproduced), session.Changed, ReasonNotReproduced, false, "neutral"},
		{"reproduced", evidence(passed, 0, reproduced), session.Changed, ReasonChanged, true, "success"},
		{"not reproduced, but verification failed: the failure decides", evidence(failed, 1, func() *contract.BaselineComparison {
			b := compared(contract.BaselineCounts{NewlyFailing: 1}, goTest)
			b.Reproduction = notReproduced.Reproduction
			return b
		}()), session.VerificationFailed, ReasonVerificationFailed, false, "failure"},
		{"not reproduced and a failing test deleted: not fixed decides", evidence(passed, 0, func() *contract.BaselineComparison {
			b := compared(contract.BaselineCounts{Removed: 1, NotFixed: 1}, failing(goTest))
			b.Reproduction = notReproduced.Reproduction
			return b
		}()), session.VerificationFailed, ReasonNotFixed, false, "failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Of(tc.ev)
			want := Verdict{Outcome: tc.outcome, Reason: tc.reason, Ready: tc.ready, Conclusion: tc.conclusion}
			if v != want {
				t.Fatalf("Of = %+v\nwant %+v", v, want)
			}
			// The sync draws the conclusion from the stored outcome and
			// reason: it must be the one the report decided.
			if got := Conclusion(v.Outcome, v.Reason); got != tc.conclusion {
				t.Fatalf("Conclusion(%s, %s) = %q, want %q", v.Outcome, v.Reason, got, tc.conclusion)
			}
		})
	}
}

// TestConclusionOfEveryOutcome: the outcomes that no evidence refines
// keep their conclusions.
func TestConclusionOfEveryOutcome(t *testing.T) {
	for o, want := range map[session.Outcome]string{
		session.Changed:            "success",
		session.NoChange:           "neutral",
		session.VerificationFailed: "failure",
		session.ChangeRefused:      "action_required",
		session.Refused:            "neutral",
		session.TimedOut:           "timed_out",
		session.Cancelled:          "cancelled",
		session.Errored:            "failure",
	} {
		if got := Conclusion(o, string(o)); got != want {
			t.Errorf("Conclusion(%s) = %q, want %q", o, got, want)
		}
	}
}
