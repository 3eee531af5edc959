package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// The PR and the check run name the runners the counts came from, and
// say when plain go test output left passing tests uncounted.
func TestTestCountsNameTheRunners(t *testing.T) {
	s := contract.TestSummary{Passed: 6, Failed: 4, Skipped: 2, Runners: []string{"pytest", "jest JSON report"}}
	if got, want := TestCounts(s), "6 passed, 4 failed, 2 skipped (`pytest`, `jest JSON report`)."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	_, summary := FailedTestsCheckRun(contract.Evidence{Tests: &contract.TestSummary{Failed: 3, Runners: []string{"go test"}, FailuresOnly: true}}, Extras{})
	if !strings.HasPrefix(summary, "3 failed, 0 passed, 0 skipped (`go test`). Plain go test output names only failures") {
		t.Errorf("check run summary %q", summary)
	}
	if got := TestCounts(contract.TestSummary{Passed: 1}); got != "1 passed, 0 failed, 0 skipped." {
		t.Errorf("without runners: %q", got)
	}
}
