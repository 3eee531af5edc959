package report

import (
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// The judgement goes into the baseline, made unavailable when there is
// none, and only when the spec asked for it; a baseline that is there
// keeps its comparison.
func TestWithReproductionFillsTheBaselinesReproduction(t *testing.T) {
	passed := &contract.TestSummary{Results: []contract.TestResult{{Name: "p.TestNew", Outcome: contract.TestPassed}}}
	failed := &contract.TestSummary{Results: []contract.TestResult{{Name: "p.TestNew", Outcome: contract.TestFailed}}}

	ev := contract.Evidence{Tests: passed}
	if withReproduction(contract.Spec{}, &ev) || ev.Baseline != nil {
		t.Fatalf("a spec without reproduce got %+v", ev.Baseline)
	}
	spec := contract.Spec{Reproduce: true}
	if !withReproduction(spec, &ev) || ev.Baseline == nil || ev.Baseline.Status != contract.BaselineUnavailable || ev.Baseline.Why != baselineUnavailable {
		t.Fatalf("baseline %+v", ev.Baseline)
	}
	if r := ev.Baseline.Reproduction; r == nil || r.Reproduced || r.Why != contract.ReproduceDidNotRun+": the attempt reported none" {
		t.Errorf("no reproduce run: %+v", r)
	}

	ev = contract.Evidence{Tests: passed, Reproduce: &contract.ReproduceRun{TestFiles: []string{"p/new_test.go"}, Tests: failed},
		Baseline: &contract.BaselineComparison{Status: contract.BaselineCompared, Counts: contract.BaselineCounts{Added: 1}}}
	withReproduction(spec, &ev)
	if ev.Baseline.Status != contract.BaselineCompared || ev.Baseline.Counts.Added != 1 {
		t.Errorf("the comparison changed: %+v", ev.Baseline)
	}
	if r := ev.Baseline.Reproduction; r == nil || !r.Reproduced || len(r.Tests) != 1 || r.Tests[0] != "p.TestNew" {
		t.Errorf("reproduction %+v", r)
	}
}
