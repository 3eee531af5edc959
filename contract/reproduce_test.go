package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestReproduce(t *testing.T) {
	sum := func(rs ...TestResult) *TestSummary { return &TestSummary{Results: rs} }
	pass := func(n string) TestResult { return TestResult{Name: n, Outcome: TestPassed} }
	fail := func(n string) TestResult { return TestResult{Name: n, Outcome: TestFailed} }
	skip := func(n string) TestResult { return TestResult{Name: n, Outcome: TestSkipped} }
	ran := func(s *TestSummary) *ReproduceRun { return &ReproduceRun{TestFiles: []string{"a_test.go"}, Tests: s} }
	for _, c := range []struct {
		name   string
		run    *ReproduceRun
		change *TestSummary
		tests  []string
		why    string
	}{
		{"no run reported", nil, sum(pass("p.TestA")), nil, ReproduceDidNotRun + ": the attempt reported none"},
		{"no test file", &ReproduceRun{Skipped: ReproduceSkippedNoTestFile}, sum(pass("p.TestA")), nil, ReproduceNoTestFile},
		{"nothing changed", &ReproduceRun{Skipped: ReproduceSkippedNoChange}, nil, nil, ReproduceNoTestFile},
		{"no verify", &ReproduceRun{TestFiles: []string{"a_test.go"}, Skipped: ReproduceSkippedNoVerify}, nil, nil, ReproduceDidNotRun + ": " + ReproduceSkippedNoVerify},
		{"ran without test files", &ReproduceRun{Tests: sum(fail("p.TestA"))}, sum(pass("p.TestA")), nil, ReproduceNoTestFile},
		{"no named tests", ran(&TestSummary{Failed: 1}), &TestSummary{Passed: 1}, nil, ReproduceNoNamedTests},
		{"reproduced", ran(sum(pass("p.TestOld"), fail("p.TestNew"))), sum(pass("p.TestOld"), pass("p.TestNew")), []string{"p.TestNew"}, ""},
		{"passes on the base too", ran(sum(pass("p.TestNew"))), sum(pass("p.TestNew")), nil, ReproduceNoFailing},
		{"fails with the change too", ran(sum(fail("p.TestNew"))), sum(fail("p.TestNew")), nil, ReproduceNoFailing},
		{"skipped with the change", ran(sum(fail("p.TestNew"))), sum(skip("p.TestNew")), nil, ReproduceNoFailing},
		{"removed by the change", ran(sum(fail("p.TestNew"))), sum(pass("p.TestOther")), nil, ReproduceNoFailing},
		{"the worse of two reports", ran(sum(pass("p.TestNew"), fail("p.TestNew"))), sum(pass("p.TestNew"), fail("p.TestNew")), nil, ReproduceNoFailing},
		{"two, in the run's order", ran(sum(fail("p.TestB"), fail("p.TestA"), fail("p.TestC"))), sum(pass("p.TestA"), pass("p.TestB"), fail("p.TestC")), []string{"p.TestB", "p.TestA"}, ""},
		{"located in the change's test file", &ReproduceRun{TestFiles: []string{"p/new_test.go"}, Tests: &TestSummary{
			Results:  []TestResult{fail("p.TestOld"), fail("p.TestNew")},
			Failures: []TestFailure{{Name: "p.TestOld", File: "p/old_test.go"}, {Name: "p.TestNew", File: "p/new_test.go"}}}},
			sum(pass("p.TestOld"), pass("p.TestNew")), []string{"p.TestNew"}, ""},
		{"only an old failure, in a file the change left alone", &ReproduceRun{TestFiles: []string{"p/new_test.go"}, Tests: &TestSummary{
			Results:  []TestResult{fail("p.TestOld"), pass("p.TestNew")},
			Failures: []TestFailure{{Name: "p.TestOld", File: "p/old_test.go"}}}},
			sum(pass("p.TestOld"), pass("p.TestNew")), nil, ReproduceNoFailing},
		{"located elsewhere, unlocated here", &ReproduceRun{TestFiles: []string{"p/new_test.go"}, Tests: &TestSummary{
			Results:  []TestResult{fail("p.TestOld"), fail("p.TestNew")},
			Failures: []TestFailure{{Name: "p.TestOld", File: "p/old_test.go"}, {Name: "p.TestNew"}}}},
			sum(pass("p.TestOld"), pass("p.TestNew")), nil, ReproduceNoFailing},
		{"a package that builds only with the change, among located failures", &ReproduceRun{TestFiles: []string{"p/new_test.go"}, Tests: &TestSummary{
			Results:  []TestResult{fail("p.TestOld"), fail("example.com/m/p [build failed]")},
			Failures: []TestFailure{{Name: "p.TestOld", File: "p/old_test.go"}, {Name: "example.com/m/p [build failed]"}}}},
			sum(pass("p.TestOld"), pass("example.com/m/p.TestNew")), []string{"example.com/m/p [build failed]"}, ""},
		{"a package that builds only with the change", ran(sum(fail("example.com/m/p [build failed]"))), sum(pass("example.com/m/p.TestNew")), []string{"example.com/m/p [build failed]"}, ""},
		{"a package that builds nowhere", ran(sum(fail("example.com/m/p [build failed]"))), sum(fail("example.com/m/p [build failed]")), nil, ReproduceNoFailing},
		{"a package whose tests fail with the change", ran(sum(fail("example.com/m/p [build failed]"))), sum(fail("example.com/m/p.TestNew")), nil, ReproduceNoFailing},
		{"another package's tests pass", ran(sum(fail("example.com/m/p [build failed]"))), sum(pass("example.com/m/q.TestNew")), nil, ReproduceNoFailing},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Reproduce(c.run, c.change)
			if got.Reproduced != (c.why == "") || !slices.Equal(got.Tests, c.tests) || got.Why != c.why {
				t.Errorf("got %+v; want tests %q, why %q", got, c.tests, c.why)
			}
		})
	}
}

// A reproduce run is validated as the rest of the evidence is: its test
// files as paths, its commands and tests as verify's, its why as a reason.
func TestTheReproduceRunIsValidated(t *testing.T) {
	e := validEvidence()
	e.Reproduce = &ReproduceRun{TestFiles: []string{"calc_test.go"}, Commands: []CommandResult{{Phase: PhaseVerify, Name: "test", Argv: []string{"go", "test"}}},
		Tests: &TestSummary{Failed: 1, Results: []TestResult{{Name: "p.TestA", Outcome: TestFailed}}}}
	if err := e.Validate(); err != nil {
		t.Fatalf("a sound run: %v", err)
	}
	e.Reproduce = &ReproduceRun{TestFiles: []string{"../calc_test.go"}, Commands: []CommandResult{{Name: "test"}}, Skipped: "a\x00b"}
	err := e.Validate()
	for _, want := range []string{"reproduce.test_files[0]", "reproduce.commands[0]", "reproduce.skipped"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v does not name %s", err, want)
		}
	}
}
