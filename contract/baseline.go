package contract

import "strings"

// The baseline (decision 0080): verify also runs on the base, the pinned
// commit without the change, in an attempt of its own (KindBaseline) from
// the same restore, and the app compares each named test's outcome on the
// base with its outcome on the change. The comparison is the app's: it
// fills Evidence.Baseline at report time; a supervisor never writes it.

// TestChange is how one named test fared from the base to the change.
type TestChange string

// How a test fared. A test that failed on the base and is removed or
// skipped by the change is not fixed (TestRemoved, TestSkippedByChange
// with Base failed).
const (
	// TestNewlyFailing: it fails with the change and did not on the base
	// (it passed, was skipped, or did not exist). Listed first, flagged.
	TestNewlyFailing TestChange = "newly_failing"
	// TestFixed: failing → passing.
	TestFixed TestChange = "fixed"
	// TestStillFailing: it fails on both.
	TestStillFailing TestChange = "still_failing"
	// TestRemoved: it ran on the base and not with the change (deleted,
	// renamed, or its package no longer builds).
	TestRemoved TestChange = "removed"
	// TestSkippedByChange: it ran on the base and the change skips it.
	TestSkippedByChange TestChange = "skipped"
	// TestAdded: new with the change, passing or skipped (a new skipped
	// test is listed so a reviewer sees it does not run).
	TestAdded TestChange = "added"
	// TestPassing: passing throughout (counted, not listed).
	TestPassing TestChange = "passing"
	// TestNotNamed: it failed on the base and the change's output does not
	// name it, though that output may leave it out without its being gone:
	// it names only failures (plain `go test` without -v) or was capped
	// (MoreResults). Fixed or removed, the comparison cannot tell; it is
	// listed, and not counted as fixed.
	TestNotNamed TestChange = "not_named"
)

// TestComparison is one named test on the base and with the change. Base
// or Change is "" where the test did not run.
type TestComparison struct {
	Name   string      `json:"name"`
	Base   TestOutcome `json:"base,omitempty"`
	Change TestOutcome `json:"change,omitempty"`
	Fared  TestChange  `json:"fared"`
}

// NotFixed reports whether the test failed on the base and the change
// removed or skipped it rather than fixing it.
func (c TestComparison) NotFixed() bool {
	return c.Base == TestFailed && (c.Fared == TestRemoved || c.Fared == TestSkippedByChange)
}

// BaselineStatus says whether a comparison was made.
type BaselineStatus string

// Baseline statuses.
const (
	// BaselineCompared: the base's verify ran (now or for an earlier
	// attempt with the same key) and was compared.
	BaselineCompared BaselineStatus = "compared"
	// BaselineUnavailable: no comparison (the base's verify failed to
	// run, timed out, or named no tests); Why says which.
	BaselineUnavailable BaselineStatus = "unavailable"
)

// MaxBaselineTests caps the tests a comparison lists; the rest are
// counted in MoreTests. Passing-throughout tests are only counted.
const MaxBaselineTests = 500

// BaselineCounts counts the tests by how they fared.
type BaselineCounts struct {
	NewlyFailing int `json:"newly_failing"`
	Fixed        int `json:"fixed"`
	StillFailing int `json:"still_failing"`
	Removed      int `json:"removed"`
	Skipped      int `json:"skipped"`
	Added        int `json:"added"`
	Passing      int `json:"passing"`
	// NotFixed counts the tests that failed on the base and that the
	// change removed or skipped (within Removed and Skipped).
	NotFixed int `json:"not_fixed"`
	// NotNamed counts the tests that failed on the base and that the
	// change's output, naming only failures or capped, does not name
	// (TestNotNamed).
	NotNamed int `json:"not_named,omitempty"`
}

// BaselineComparison is the base against the change, kept in the
// evidence (v12) by the app.
type BaselineComparison struct {
	Status BaselineStatus `json:"status"`
	// Why says, with status unavailable, what kept the comparison from
	// being made.
	Why string `json:"why,omitempty"`
	// CacheDigest is what the base's verify is cached by: the snapshot
	// digest, the base SHA and the verify commands, hashed ("sha256:").
	CacheDigest string `json:"cache_digest,omitempty"`
	// AttemptID is the baseline attempt whose base verify is compared.
	AttemptID string `json:"attempt_id,omitempty"`
	// Reused says that attempt ran for an earlier attempt (a retry, a
	// later turn, a repair): this one did not run the base verify again.
	Reused bool `json:"reused,omitempty"`
	// BaseSHA is the commit the base verify ran on.
	BaseSHA string `json:"base_sha,omitempty"`
	// Verify is each base verify command as it ended there.
	Verify []CommandResult `json:"verify,omitempty"`
	Counts BaselineCounts  `json:"counts"`
	// Tests lists every test that did not pass throughout, newly failing
	// first, up to MaxBaselineTests.
	Tests     []TestComparison `json:"tests,omitempty"`
	MoreTests int              `json:"more_tests,omitempty"`
	// Reproduction is the reproduce-first check (repo config
	// `reproduce:`), when the session asked for one.
	Reproduction *Reproduction `json:"reproduction,omitempty"`
}

// Reproduction is the reproduce-first check: a test the change adds or
// changes (policy's one test-file rule) that fails on the base with the
// change's test files and passes with the whole change.
type Reproduction struct {
	// Reproduced is whether at least one such test was found.
	Reproduced bool `json:"reproduced"`
	// Tests are those tests, each failing on the base and passing with
	// the change.
	Tests []string `json:"tests,omitempty"`
	// Why says, when not reproduced, what was missing.
	Why string `json:"why,omitempty"`
}

// CompareTests compares each named test's outcome on the base with its
// outcome on the change (decision 0080). Only named tests are compared: a
// runner that gives only totals names none, and then there is nothing to
// compare. Tests are listed newly failing first, then not fixed, fixed,
// still failing, not named, removed, skipped and added, each group in the
// change's order (then the base's); passing-throughout tests are only
// counted.
//
// A summary that names only failures (FailuresOnly) or was capped
// (MoreResults) does not name every test it ran, so a name missing from it
// is not a test that did not run (decision 0081): missing from the change,
// a test that failed on the base is not named (TestNotNamed: fixed or
// removed, which it cannot tell) and one that did not fail is left out;
// missing from the base, a test failing with the change is newly failing
// (the base cannot show it failed there) and one that does not fail is left
// out.
func CompareTests(base, change *TestSummary) (tests []TestComparison, counts BaselineCounts, more int) {
	baseOf := map[string]TestOutcome{}
	var order []string
	seen := map[string]bool{}
	changeOf := map[string]TestOutcome{}
	if change != nil {
		for _, r := range change.Results {
			if !seen[r.Name] {
				seen[r.Name] = true
				order = append(order, r.Name)
			}
			changeOf[r.Name] = worse(changeOf[r.Name], r.Outcome)
		}
	}
	if base != nil {
		for _, r := range base.Results {
			if !seen[r.Name] {
				seen[r.Name] = true
				order = append(order, r.Name)
			}
			baseOf[r.Name] = worse(baseOf[r.Name], r.Outcome)
		}
	}
	baseNamesAll, changeNamesAll := namesEveryTest(base), namesEveryTest(change)
	groups := map[TestChange][]TestComparison{}
	var notFixed []TestComparison
	for _, name := range order {
		c := TestComparison{Name: name, Base: baseOf[name], Change: changeOf[name]}
		c.Fared = fared(c.Base, c.Change)
		switch {
		case c.Change == "" && !changeNamesAll:
			if c.Base != TestFailed {
				continue // passing or removed: nothing a reviewer needs
			}
			c.Fared = TestNotNamed
		case c.Base == "" && !baseNamesAll && c.Change != TestFailed:
			continue // passing throughout or added, which the base cannot say
		}
		switch c.Fared {
		case TestNewlyFailing:
			counts.NewlyFailing++
		case TestFixed:
			counts.Fixed++
		case TestStillFailing:
			counts.StillFailing++
		case TestNotNamed:
			counts.NotNamed++
		case TestRemoved:
			counts.Removed++
		case TestSkippedByChange:
			counts.Skipped++
		case TestAdded:
			counts.Added++
		case TestPassing:
			counts.Passing++
			continue
		}
		if c.NotFixed() {
			counts.NotFixed++
			notFixed = append(notFixed, c)
			continue
		}
		groups[c.Fared] = append(groups[c.Fared], c)
	}
	listed := groups[TestNewlyFailing]
	listed = append(listed, notFixed...)
	for _, f := range []TestChange{TestFixed, TestStillFailing, TestNotNamed, TestRemoved, TestSkippedByChange, TestAdded} {
		listed = append(listed, groups[f]...)
	}
	if len(listed) > MaxBaselineTests {
		more = len(listed) - MaxBaselineTests
		listed = listed[:MaxBaselineTests]
	}
	return listed, counts, more
}

// namesEveryTest reports whether a summary names every test it ran, so
// that a name missing from it did not run.
func namesEveryTest(t *TestSummary) bool {
	return t == nil || (!t.FailuresOnly && t.MoreResults == 0)
}

// fared is how a test with outcome base on the base ("" absent) and
// change with the change fared.
func fared(base, change TestOutcome) TestChange {
	switch {
	case change == TestFailed && base == TestFailed:
		return TestStillFailing
	case change == TestFailed:
		return TestNewlyFailing
	case change == "":
		if base == TestSkipped {
			return TestPassing // skipped before, gone now: nothing was lost
		}
		return TestRemoved
	case change == TestSkipped:
		if base == TestSkipped {
			return TestPassing
		}
		if base == "" {
			return TestAdded
		}
		return TestSkippedByChange
	case base == TestFailed:
		return TestFixed
	case base == "":
		return TestAdded
	default:
		return TestPassing
	}
}

// worse is the worse of two outcomes of one name (a test reported twice,
// by two runners or two commands): failed over passed over skipped.
func worse(a, b TestOutcome) TestOutcome {
	rank := func(o TestOutcome) int {
		switch o {
		case TestFailed:
			return 3
		case TestPassed:
			return 2
		case TestSkipped:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Why a reproduce-first check found no reproduction (Reproduction.Why).
const (
	ReproduceNoTestFile   = "the change adds or changes no test file"
	ReproduceNoFailing    = "no test that the change adds or changes fails on the base"
	ReproduceNoNamedTests = "verify names no tests"
	// ReproduceDidNotRun is followed by ": " and the run's Skipped.
	ReproduceDidNotRun = "the reproduce run did not run"
)

// Why a supervisor did not run the reproduce run (ReproduceRun.Skipped).
const (
	ReproduceSkippedNoTestFile = "no test file in the change"
	ReproduceSkippedNoVerify   = "no verify commands"
	ReproduceSkippedNoChange   = "the agent changed nothing"
)

// buildFailedSuffix is how runner/testreport names a Go package that
// failed to build ("<package> [build failed]").
const buildFailedSuffix = " [build failed]"

// Reproduce judges the reproduce-first check (repo config `reproduce:`)
// from the supervisor's reproduce run (verify on the pinned commit with
// only the change's test files) and the change's own tests: reproduced
// when the change touched a test file and at least one named test of it
// failed in that run and passed with the change.
//
// A test is the change's when the runner located its failure in one of
// the change's test files (TestFailure.File): a test that already failed
// on the base in a file the change left alone is not a reproduction, nor
// is a test the change adds that passes there. Where the runner located
// none of the run's failures, it cannot tell, and every test that failed
// there and passed with the change counts. A Go package whose new test
// does not build without the change ("<package> [build failed]" in the
// run) counts as one such test when the change builds it and a test of it
// passes: that is how a test of a function the change adds fails on the
// base. It is pure: the app calls it at report time.
func Reproduce(run *ReproduceRun, change *TestSummary) Reproduction {
	switch {
	case run == nil:
		return Reproduction{Why: ReproduceDidNotRun + ": the attempt reported none"}
	case run.Skipped == ReproduceSkippedNoTestFile || run.Skipped == ReproduceSkippedNoChange:
		return Reproduction{Why: ReproduceNoTestFile}
	case run.Skipped != "":
		return Reproduction{Why: ReproduceDidNotRun + ": " + run.Skipped}
	case len(run.TestFiles) == 0:
		return Reproduction{Why: ReproduceNoTestFile}
	}
	var base []TestResult
	if run.Tests != nil {
		base = run.Tests.Results
	}
	changeOf := map[string]TestOutcome{}
	pkgPassed := map[string]bool{} // packages with a test passing with the change
	if change != nil {
		for _, r := range change.Results {
			changeOf[r.Name] = worse(changeOf[r.Name], r.Outcome)
		}
		for _, r := range change.Results {
			if changeOf[r.Name] != TestPassed {
				continue
			}
			for i := 0; i < len(r.Name); i++ {
				if r.Name[i] == '.' {
					pkgPassed[r.Name[:i]] = true
				}
			}
		}
	}
	if len(base) == 0 && len(changeOf) == 0 {
		return Reproduction{Why: ReproduceNoNamedTests}
	}
	// Where each failure of the run is, when the runner said.
	fileOf := map[string]string{}
	if run.Tests != nil {
		for _, f := range run.Tests.Failures {
			if f.File != "" {
				fileOf[f.Name] = f.File
			}
		}
	}
	touched := map[string]bool{}
	for _, p := range run.TestFiles {
		touched[p] = true
	}
	theChanges := func(name string) bool { return len(fileOf) == 0 || touched[fileOf[name]] }
	baseOf := map[string]TestOutcome{}
	var order []string
	for _, r := range base {
		if _, ok := baseOf[r.Name]; !ok {
			order = append(order, r.Name)
		}
		baseOf[r.Name] = worse(baseOf[r.Name], r.Outcome)
	}
	var tests []string
	for _, name := range order {
		if baseOf[name] != TestFailed {
			continue
		}
		if changeOf[name] == TestPassed {
			if theChanges(name) {
				tests = append(tests, name)
			}
			continue
		}
		if pkg, ok := strings.CutSuffix(name, buildFailedSuffix); ok && changeOf[name] == "" && pkgPassed[pkg] {
			tests = append(tests, name)
		}
	}
	if len(tests) == 0 {
		return Reproduction{Why: ReproduceNoFailing}
	}
	if len(tests) > MaxBaselineTests {
		tests = tests[:MaxBaselineTests]
	}
	return Reproduction{Reproduced: true, Tests: tests}
}
