package contract

import (
	"fmt"
	"reflect"
	"testing"
)

// results is a summary naming each test "name=outcome" with its outcome
// (p passed, f failed, s skipped).
func results(named ...string) *TestSummary {
	t := &TestSummary{}
	for _, n := range named {
		name, o := n[:len(n)-2], n[len(n)-1:]
		outcome := map[string]TestOutcome{"p": TestPassed, "f": TestFailed, "s": TestSkipped}[o]
		if outcome == "" {
			panic("results: no outcome in " + n)
		}
		t.Results = append(t.Results, TestResult{Name: name, Outcome: outcome})
	}
	return t
}

// listed is tests as "name base→change fared", for comparing in a table.
func listed(tests []TestComparison) []string {
	out := make([]string, len(tests))
	for i, c := range tests {
		out[i] = fmt.Sprintf("%s %s→%s %s", c.Name, c.Base, c.Change, c.Fared)
	}
	return out
}

// TestCompareTestsCaseByCase is the table of decision 0081's cases: each
// base and change, what is listed (in order) and what is counted.
func TestCompareTestsCaseByCase(t *testing.T) {
	for _, tc := range []struct {
		name         string
		base, change *TestSummary
		listed       []string
		counts       BaselineCounts
	}{
		{
			name:   "the target fixed",
			base:   results("TestA=f", "TestB=p"),
			change: results("TestA=p", "TestB=p"),
			listed: []string{"TestA failed→passed fixed"},
			counts: BaselineCounts{Fixed: 1, Passing: 1},
		},
		{
			name:   "the target fixed and another broken: newly failing first",
			base:   results("TestA=f", "TestB=p", "TestC=p"),
			change: results("TestA=p", "TestB=p", "TestC=f"),
			listed: []string{"TestC passed→failed newly_failing", "TestA failed→passed fixed"},
			counts: BaselineCounts{NewlyFailing: 1, Fixed: 1, Passing: 1},
		},
		{
			name:   "the target fixed while an earlier failure stays",
			base:   results("TestOld=f", "TestA=f", "TestB=p"),
			change: results("TestOld=f", "TestA=p", "TestB=p"),
			listed: []string{"TestA failed→passed fixed", "TestOld failed→failed still_failing"},
			counts: BaselineCounts{Fixed: 1, StillFailing: 1, Passing: 1},
		},
		{
			name:   "the failing test deleted: not fixed",
			base:   results("TestA=f", "TestB=p"),
			change: results("TestB=p"),
			listed: []string{"TestA failed→ removed"},
			counts: BaselineCounts{Removed: 1, NotFixed: 1, Passing: 1},
		},
		{
			name:   "the failing test skipped: not fixed",
			base:   results("TestA=f", "TestB=p"),
			change: results("TestA=s", "TestB=p"),
			listed: []string{"TestA failed→skipped skipped"},
			counts: BaselineCounts{Skipped: 1, NotFixed: 1, Passing: 1},
		},
		{
			name:   "not fixed listed right after newly failing, before fixed",
			base:   results("TestFix=f", "TestGone=f", "TestBroke=p"),
			change: results("TestFix=p", "TestBroke=f"),
			listed: []string{"TestBroke passed→failed newly_failing", "TestGone failed→ removed", "TestFix failed→passed fixed"},
			counts: BaselineCounts{NewlyFailing: 1, Fixed: 1, Removed: 1, NotFixed: 1},
		},
		{
			name:   "a passing test removed or skipped: listed, not 'not fixed'",
			base:   results("TestA=p", "TestB=p"),
			change: results("TestB=s"),
			listed: []string{"TestA passed→ removed", "TestB passed→skipped skipped"},
			counts: BaselineCounts{Removed: 1, Skipped: 1},
		},
		{
			name:   "an added test, passing or skipped, and one added failing",
			base:   results("TestA=p"),
			change: results("TestA=p", "TestNew=p", "TestNewSkip=s", "TestNewFail=f"),
			listed: []string{"TestNewFail →failed newly_failing", "TestNew →passed added", "TestNewSkip →skipped added"},
			counts: BaselineCounts{NewlyFailing: 1, Added: 2, Passing: 1},
		},
		{
			name:   "passing throughout is counted, not listed",
			base:   results("TestA=p", "TestB=p", "TestC=p"),
			change: results("TestA=p", "TestB=p", "TestC=p"),
			listed: []string{},
			counts: BaselineCounts{Passing: 3},
		},
		{
			name:   "a name reported twice counts its worse outcome once",
			base:   results("TestA=f", "TestA=p", "TestB=p"),
			change: results("TestA=p", "TestA=p", "TestB=p", "TestB=f"),
			listed: []string{"TestB passed→failed newly_failing", "TestA failed→passed fixed"},
			counts: BaselineCounts{NewlyFailing: 1, Fixed: 1},
		},
		{
			name:   "skipped on the base: failing now is newly failing, passing now or gone is nothing lost",
			base:   results("TestA=s", "TestB=s", "TestC=s", "TestD=s"),
			change: results("TestA=f", "TestB=p", "TestC=s"),
			listed: []string{"TestA skipped→failed newly_failing"},
			counts: BaselineCounts{NewlyFailing: 1, Passing: 3},
		},
		{
			name:   "runners that give only totals name nothing: nothing to compare",
			base:   &TestSummary{Passed: 10, Failed: 1},
			change: &TestSummary{Passed: 11},
			listed: []string{},
		},
		{
			name:   "no summary on either side",
			listed: []string{},
		},
		{
			name:   "the change names no test at all: every test the base ran is gone",
			base:   results("TestA=f", "TestB=p"),
			listed: []string{"TestA failed→ removed", "TestB passed→ removed"},
			counts: BaselineCounts{Removed: 2, NotFixed: 1},
		},
		{
			name:   "the change's output names only failures: a base failure it does not name is not named, not fixed nor removed",
			base:   results("TestA=f", "TestB=p", "TestC=f"),
			change: &TestSummary{FailuresOnly: true, Results: []TestResult{{Name: "TestC", Outcome: TestFailed}}},
			listed: []string{"TestC failed→failed still_failing", "TestA failed→ not_named"},
			counts: BaselineCounts{StillFailing: 1, NotNamed: 1},
		},
		{
			name:   "the change's results capped: a base failure beyond the cap is not named",
			base:   results("TestA=f", "TestB=p"),
			change: &TestSummary{MoreResults: 2, Results: []TestResult{{Name: "TestZ", Outcome: TestPassed}}},
			listed: []string{"TestA failed→ not_named", "TestZ →passed added"},
			counts: BaselineCounts{NotNamed: 1, Added: 1},
		},
		{
			name:   "the base's output names only failures: a test failing now that it does not name is newly failing; a passing one is left out",
			base:   &TestSummary{FailuresOnly: true, Results: []TestResult{{Name: "TestA", Outcome: TestFailed}}},
			change: results("TestA=p", "TestB=p", "TestC=f"),
			listed: []string{"TestC →failed newly_failing", "TestA failed→passed fixed"},
			counts: BaselineCounts{NewlyFailing: 1, Fixed: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tests, counts, more := CompareTests(tc.base, tc.change)
			if got := listed(tests); !reflect.DeepEqual(got, tc.listed) {
				t.Errorf("listed\n got %q\nwant %q", got, tc.listed)
			}
			if counts != tc.counts {
				t.Errorf("counts\n got %+v\nwant %+v", counts, tc.counts)
			}
			if more != 0 {
				t.Errorf("more = %d, want 0", more)
			}
			for _, c := range tests {
				if c.NotFixed() != (c.Base == TestFailed && (c.Fared == TestRemoved || c.Fared == TestSkippedByChange)) {
					t.Errorf("%s: NotFixed() = %t", c.Name, c.NotFixed())
				}
			}
		})
	}
}

// TestCompareTestsCapsTheList: past MaxBaselineTests listed tests the
// rest are counted in more, every test still in the counts, and the ones
// kept are the first in the order (newly failing first).
func TestCompareTestsCapsTheList(t *testing.T) {
	base, change := &TestSummary{}, &TestSummary{}
	for i := range MaxBaselineTests + 10 {
		name := fmt.Sprintf("TestFixed%04d", i)
		base.Results = append(base.Results, TestResult{Name: name, Outcome: TestFailed})
		change.Results = append(change.Results, TestResult{Name: name, Outcome: TestPassed})
	}
	change.Results = append(change.Results, TestResult{Name: "TestBroken", Outcome: TestFailed})
	base.Results = append(base.Results, TestResult{Name: "TestBroken", Outcome: TestPassed})
	tests, counts, more := CompareTests(base, change)
	if len(tests) != MaxBaselineTests || more != 11 {
		t.Fatalf("listed %d, more %d; want %d and 11", len(tests), more, MaxBaselineTests)
	}
	if tests[0].Name != "TestBroken" || tests[0].Fared != TestNewlyFailing {
		t.Errorf("first listed %+v, want the newly failing test", tests[0])
	}
	if counts.Fixed != MaxBaselineTests+10 || counts.NewlyFailing != 1 {
		t.Errorf("counts %+v: the cap must not drop tests from the counts", counts)
	}
}
