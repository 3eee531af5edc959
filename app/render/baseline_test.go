package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// baselineCase is evidence compared with the base, by decision 0081's
// cases.
type baselineCase struct {
	name string
	ev   contract.Evidence
}

func baselineCases() []baselineCase {
	goTest := contract.CommandResult{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test", "./..."}, DurationMS: 13456}
	goTestFailed := goTest
	goTestFailed.ExitCode = 1
	ev := func(verify contract.CommandResult, failed int, b *contract.BaselineComparison) contract.Evidence {
		return contract.Evidence{StartedAt: t0, EndedAt: t1, Commands: []contract.CommandResult{verify},
			Tests: &contract.TestSummary{Passed: 212, Failed: failed, Runners: []string{"go test -json"}}, Baseline: b}
	}
	compared := func(counts contract.BaselineCounts, tests ...contract.TestComparison) *contract.BaselineComparison {
		return &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "01jpk3v7m2e4w9q8r6t5y3u1hz-b1",
			BaseSHA: "9e8d7c6a5f4e3d2c1b0a993f9a7b2e8d4c6a1f0b", Verify: []contract.CommandResult{goTestFailed}, Counts: counts, Tests: tests}
	}
	fixed := contract.TestComparison{Name: "example.com/parser.TestParse/flaky", Base: contract.TestFailed, Change: contract.TestPassed, Fared: contract.TestFixed}
	broke := contract.TestComparison{Name: "example.com/parser.TestLex", Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing}
	old := contract.TestComparison{Name: "example.com/net.TestDialTimeout", Base: contract.TestFailed, Change: contract.TestFailed, Fared: contract.TestStillFailing}
	deleted := contract.TestComparison{Name: "example.com/parser.TestParse/flaky", Base: contract.TestFailed, Fared: contract.TestRemoved}
	skipped := contract.TestComparison{Name: "example.com/parser.TestParse/flaky", Base: contract.TestFailed, Change: contract.TestSkipped, Fared: contract.TestSkippedByChange}
	added := contract.TestComparison{Name: "example.com/parser.TestParseConcurrent", Change: contract.TestPassed, Fared: contract.TestAdded}

	reused := compared(contract.BaselineCounts{Fixed: 1, Added: 1, Passing: 211}, fixed, added)
	reused.Reused = true
	reused.Reproduction = &contract.Reproduction{Why: "no test the change adds or changes fails on the base"}
	reproduced := compared(contract.BaselineCounts{Fixed: 1, Added: 1, Passing: 211}, fixed, added)
	reproduced.Reproduction = &contract.Reproduction{Reproduced: true, Tests: []string{"example.com/parser.TestParseConcurrent"}}

	return []baselineCase{
		{"fixed", ev(goTest, 0, compared(contract.BaselineCounts{Fixed: 1, Passing: 211}, fixed))},
		{"fixed-and-broke-another", ev(goTestFailed, 1, compared(contract.BaselineCounts{Fixed: 1, NewlyFailing: 1, Passing: 210}, broke, fixed))},
		{"fixed-while-an-earlier-failure-stays", ev(goTestFailed, 1, compared(contract.BaselineCounts{Fixed: 1, StillFailing: 1, Passing: 210}, fixed, old))},
		{"failing-test-deleted", ev(goTest, 0, compared(contract.BaselineCounts{Removed: 1, NotFixed: 1, Passing: 211}, deleted))},
		{"failing-test-skipped", ev(goTest, 0, compared(contract.BaselineCounts{Skipped: 1, NotFixed: 1, Passing: 211}, skipped))},
		{"not-reproduced-reused", ev(goTest, 0, reused)},
		{"reproduced", ev(goTest, 0, reproduced)},
		{"unavailable", ev(goTestFailed, 1, &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: "the base's verify timed out after 10m0s"})},
	}
}

// TestAgainstTheBaseGolden: each of decision 0081's cases as the PR body
// and the check run (title, then summary) show it, the session ended by
// the verdict over its evidence with the reply decide gives it.
func TestAgainstTheBaseGolden(t *testing.T) {
	spec := contract.Spec{AttemptID: "01jpk3v7m2e4w9q8r6t5y3u1hz-1", PinnedSHA: "9e8d7c6a5f4e3d2c1b0a993f9a7b2e8d4c6a1f0b"}
	x := Extras{SessionURL: "https://inspect.example.com/sessions/01jpk3v7m2e4w9q8r6t5y3u1hz"}
	for _, tc := range baselineCases() {
		t.Run(tc.name, func(t *testing.T) {
			v := verdict.Of(tc.ev)
			sess := baseSession()
			sess.CommitSHA, sess.Branch, sess.PRNumber = "3f9a7b2e8d4c6a1f0b9e8d7c6a5f4e3d2c1b0a99", "inspect/12-u1hz", 13
			sess.Outcome, sess.Reason, sess.Detail = v.Outcome, v.Reason, ChangeReply(sess, v.Ready, tc.ev)
			sess = store.Fixture(session.Done, sess)
			body := PRBody(sess, spec, v.Ready, prBodyCases()[0].sum, tc.ev, x)
			title, summary := DoneCheckRun(sess, &tc.ev, x)
			golden(t, "base-"+tc.name+".golden", fmt.Sprintf("%s\n\n---\ncheck run: %s (%s)\n\n%s", body, title, v.Conclusion, summary))
		})
	}
}

// TestAgainstTheBaseCapsItsRows: on GitHub the section lists at most
// maxBaselineRows tests and counts the rest, those the comparison listed
// and those its own cap left out, so a long list keeps the body small.
func TestAgainstTheBaseCapsItsRows(t *testing.T) {
	b := &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "a-b", MoreTests: 7}
	for i := range maxBaselineRows + 30 {
		b.Tests = append(b.Tests, contract.TestComparison{Name: fmt.Sprintf("Test%03d", i) + strings.Repeat("x", 200), Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing})
	}
	s := BaselineSection(b)
	if rows := strings.Count(s, "\n| `Test"); rows != maxBaselineRows {
		t.Errorf("%d rows, want %d", rows, maxBaselineRows)
	}
	if !strings.Contains(s, "37 more not listed here.") {
		t.Errorf("the rest is not counted:\n%s", s)
	}
	if len(s) > 20_000 {
		t.Errorf("the section is %d bytes: its cap keeps it well under GitHub's 65,536 characters", len(s))
	}
}

// TestAgainstTheBaseNamesStayInTheirCells: a test's name is the
// repository's text; a pipe, a newline or a backtick in it neither ends
// its cell nor its code span, and what it says does not act (the other
// breakouts: TestUntrustedTextCannotAct).
func TestAgainstTheBaseNamesStayInTheirCells(t *testing.T) {
	evil := "TestX | @octocat\n| Fixes #3 | ![x](https://example.com/x.png) `<img src=x>`"
	s := BaselineSection(&contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "a-b",
		Counts: contract.BaselineCounts{NewlyFailing: 1},
		Tests:  []contract.TestComparison{{Name: evil, Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing}}})
	var row string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "octocat") {
			if row != "" {
				t.Fatalf("the name spans more than one line:\n%s", s)
			}
			row = l
		}
	}
	// Four cells: five unescaped pipes.
	if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 5 {
		t.Errorf("row %q has %d cell borders, want 5", row, n)
	}
	e := fakegithub.MarkdownEffects(s)
	if len(e.Mentions)+len(e.Closes)+len(e.References)+len(e.Images)+len(e.HTML) != 0 {
		t.Errorf("the name acts: %+v\n%s", e, s)
	}
	if !strings.Contains(row, "newly failing") {
		t.Errorf("the row lost its flag: %q", row)
	}
}

// TestUnverifiedPRSaysWhy: where GitHub takes no drafts, the ready pull
// request's title and note say why it is not verified, by the verdict's
// reason.
func TestUnverifiedPRSaysWhy(t *testing.T) {
	sess := baseSession()
	for _, tc := range []struct {
		reason, title, note string
	}{
		{verdict.ReasonVerificationFailed, "[verification failed] Inspect:", "**Verification failed.** This repository does not take draft pull requests, so this one is open for review but carries the `inspect:unverified` label instead. Do not merge it as it is: see Verification below."},
		{verdict.ReasonFailsWhereBaseFailed, "[verification failed] Inspect:", "**Verification failed.**"},
		{verdict.ReasonNotFixed, "[not fixed] Inspect:", "**Not fixed:** a test that failed on the base was removed or skipped. This repository does not take draft pull requests, so this one is open for review but carries the `inspect:unverified` label instead. Do not merge it as it is: see Against the base below."},
		{verdict.ReasonNotReproduced, "[not reproduced] Inspect:", "**Not reproduced.** This repository"},
	} {
		if got := UnverifiedPRTitle(sess, tc.reason); !strings.HasPrefix(got, tc.title) {
			t.Errorf("%s: title %q, want it to start %q", tc.reason, got, tc.title)
		}
		if got := UnverifiedPRNote("inspect:unverified", tc.reason); !strings.Contains(got, tc.note) {
			t.Errorf("%s: note %q, want %q in it", tc.reason, got, tc.note)
		}
	}
}
