package testreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// results writes a summary's named results as "p name", "f name", "s name".
func results(s *contract.TestSummary) []string {
	var out []string
	for _, r := range s.Results {
		out = append(out, string(r.Outcome[0])+" "+r.Name)
	}
	return out
}

func failures(s *contract.TestSummary) []string {
	var out []string
	for _, f := range s.Failures {
		where := ""
		if f.File != "" {
			where = fmt.Sprintf(" @%s:%d", f.File, f.Line)
		}
		out = append(out, f.Name+where)
	}
	return out
}

// files of the captured projects, as the workspace's files.
var projectFiles = map[string]bool{
	"calc/calc_test.go": true, "calc/calc.go": true, "strs/strs_test.go": true,
	"tests/test_calc.py": true, "src/calc.test.js": true, "src/strs.test.js": true, "test/calc.test.js": true,
}

func options(workspace string) Options {
	return Options{Module: "example.com/calc", Workspace: workspace, IsFile: func(p string) bool { return projectFiles[p] }}
}

var (
	goPass = []string{"p example.com/calc/calc.TestAdd", "p example.com/calc/calc.TestSub", "p example.com/calc/calc.TestTable", "p example.com/calc/calc.TestTable/small", "p example.com/calc/calc.TestTable/large", "s example.com/calc/calc.TestLater", "p example.com/calc/strs.TestUpper"}
	goFail = []string{"p example.com/calc/calc.TestAdd", "f example.com/calc/calc.TestSub", "f example.com/calc/calc.TestTable", "p example.com/calc/calc.TestTable/small", "f example.com/calc/calc.TestTable/large", "s example.com/calc/calc.TestLater", "p example.com/calc/strs.TestUpper"}
	// go test -json reports a parent after its subtests.
	goJSONFail = []string{"p example.com/calc/calc.TestAdd", "f example.com/calc/calc.TestSub", "p example.com/calc/calc.TestTable/small", "f example.com/calc/calc.TestTable/large", "f example.com/calc/calc.TestTable", "s example.com/calc/calc.TestLater", "p example.com/calc/strs.TestUpper"}
	goJSONPass = []string{"p example.com/calc/strs.TestUpper", "p example.com/calc/calc.TestAdd", "p example.com/calc/calc.TestSub", "p example.com/calc/calc.TestTable/small", "p example.com/calc/calc.TestTable/large", "p example.com/calc/calc.TestTable", "s example.com/calc/calc.TestLater"}
	goFailures = []string{"example.com/calc/calc.TestSub @calc/calc_test.go:22", "example.com/calc/calc.TestTable", "example.com/calc/calc.TestTable/large @calc/calc_test.go:38"}

	pyAll      = []string{"p tests/test_calc.py::test_add", "p tests/test_calc.py::test_sub", "p tests/test_calc.py::test_table[1-1-2]", "p tests/test_calc.py::test_table[1000-1-1001]", "s tests/test_calc.py::test_later", "p tests/test_calc.py::TestStrings::test_upper"}
	pyVFail    = []string{"p tests/test_calc.py::test_add", "f tests/test_calc.py::test_sub", "p tests/test_calc.py::test_table[1-1-2]", "f tests/test_calc.py::test_table[1000-1-1001]", "s tests/test_calc.py::test_later", "p tests/test_calc.py::TestStrings::test_upper"}
	pyFailures = []string{"tests/test_calc.py::test_sub @tests/test_calc.py:15", "tests/test_calc.py::test_table[1000-1-1001] @tests/test_calc.py:22"}
	pyJUnit    = []string{"p tests.test_calc.test_add", "f tests.test_calc.test_sub", "p tests.test_calc.test_table[1-1-2]", "f tests.test_calc.test_table[1000-1-1001]", "s tests.test_calc.test_later", "p tests.test_calc.TestStrings.test_upper"}

	jestVPass    = []string{"p src/calc.test.js › calc › adds", "p src/calc.test.js › calc › subtracts", "s src/calc.test.js › calc › divides", "p src/strs.test.js › upper case", "p src/strs.test.js › add(1, 1)", "p src/strs.test.js › add(1000, 1)"}
	jestVFail    = []string{"p src/strs.test.js › upper case", "p src/strs.test.js › add(1, 1)", "f src/strs.test.js › add(1000, 1)", "p src/calc.test.js › calc › adds", "f src/calc.test.js › calc › subtracts", "s src/calc.test.js › calc › divides"}
	jestFailures = []string{"src/strs.test.js › add(1000, 1) @src/strs.test.js:6", "src/calc.test.js › calc › subtracts @src/calc.test.js:9"}

	nodePass = []string{"p calc > adds", "p calc > subtracts", "s calc > divides", "p upper case", "p table > small", "p table > large", "p table"}
	nodeFail = []string{"p calc > adds", "f calc > subtracts", "s calc > divides", "p upper case", "p table > small", "f table > large", "f table"}
)

// TestRunnersOutput reads each runner's real output, captured here
// (testdata/README.md), passing and failing.
func TestRunnersOutput(t *testing.T) {
	for _, tc := range []struct {
		file             string
		workspace        string
		runner           Runner
		passed, failed   int
		skipped          int
		results          []string
		failures         []string
		failuresOnly     bool
		messageSubstring string // of the first failure's message
	}{
		{file: "go1.26.8-test-pass.txt", runner: GoTest, failuresOnly: true},
		{file: "go1.26.8-test-fail.txt", runner: GoTest, failed: 3, failuresOnly: true,
			results:  []string{"f example.com/calc/calc.TestSub", "f example.com/calc/calc.TestTable", "f example.com/calc/calc.TestTable/large"},
			failures: goFailures, messageSubstring: "Sub(3, 2) = 1, want 2"},
		{file: "go1.26.8-test-buildfail.txt", runner: GoTest, failed: 1, failuresOnly: true,
			results:  []string{"f example.com/calc/calc [build failed]"},
			failures: []string{"example.com/calc/calc [build failed] @calc/calc.go:5"}, messageSubstring: "cannot use \"x\""},
		{file: "go1.26.8-test-v-pass.txt", runner: GoTest, passed: 6, skipped: 1, results: goPass},
		{file: "go1.26.8-test-v-fail.txt", runner: GoTest, passed: 3, failed: 3, skipped: 1, results: goFail, failures: goFailures, messageSubstring: "Sub(3, 2) = 1, want 2"},
		{file: "go1.26.8-test-json-pass.txt", runner: GoTestJSON, passed: 6, skipped: 1, results: goJSONPass},
		{file: "go1.26.8-test-json-fail.txt", runner: GoTestJSON, passed: 3, failed: 3, skipped: 1, results: goJSONFail,
			failures:         []string{"example.com/calc/calc.TestSub @calc/calc_test.go:22", "example.com/calc/calc.TestTable/large @calc/calc_test.go:38", "example.com/calc/calc.TestTable"},
			messageSubstring: "Sub(3, 2) = 1, want 2"},
		{file: "go1.26.8-test-json-buildfail.txt", runner: GoTestJSON, passed: 1, failed: 1,
			results:  []string{"f example.com/calc/calc [build failed]", "p example.com/calc/strs.TestUpper"},
			failures: []string{"example.com/calc/calc [build failed] @calc/calc.go:5"}, messageSubstring: "cannot use \"x\""},

		{file: "pytest7.2.1-pass.txt", runner: Pytest, passed: 5, skipped: 1},
		{file: "pytest7.2.1-fail.txt", runner: Pytest, passed: 3, failed: 2, skipped: 1,
			results: []string{"f tests/test_calc.py::test_sub", "f tests/test_calc.py::test_table[1000-1-1001]"}, failures: pyFailures, messageSubstring: "assert 1 == 2"},
		{file: "pytest7.2.1-v-pass.txt", runner: Pytest, passed: 5, skipped: 1, results: pyAll},
		{file: "pytest7.2.1-v-fail.txt", runner: Pytest, passed: 3, failed: 2, skipped: 1, results: pyVFail, failures: pyFailures, messageSubstring: "assert 1 == 2"},
		// -rA names every passing and failing test (a skip has no node id there).
		{file: "pytest7.2.1-rA-pass.txt", runner: Pytest, passed: 5, skipped: 1, results: []string{pyAll[0], pyAll[1], pyAll[2], pyAll[3], pyAll[5]}},
		{file: "pytest7.2.1-rA-fail.txt", runner: Pytest, passed: 3, failed: 2, skipped: 1,
			results:  []string{"p tests/test_calc.py::test_add", "p tests/test_calc.py::test_table[1-1-2]", "p tests/test_calc.py::TestStrings::test_upper", "f tests/test_calc.py::test_sub", "f tests/test_calc.py::test_table[1000-1-1001]"},
			failures: pyFailures},

		{file: "jest30.5.2-pass.txt", runner: Jest, passed: 5, skipped: 1},
		{file: "jest30.5.2-fail.txt", runner: Jest, passed: 3, failed: 2, skipped: 1,
			results:  []string{"f src/strs.test.js › add(1000, 1)", "f src/calc.test.js › calc › subtracts"},
			failures: jestFailures, messageSubstring: "Expected: 1002"},
		{file: "jest30.5.2-verbose-pass.txt", runner: Jest, passed: 5, skipped: 1, results: jestVPass},
		{file: "jest30.5.2-verbose-fail.txt", runner: Jest, passed: 3, failed: 2, skipped: 1, results: jestVFail, failures: jestFailures, messageSubstring: "Expected: 1002"},

		{file: "node20.20.2-test-pass.tap", workspace: "/tmp/cap/node", runner: NodeTAP, passed: 6, skipped: 1, results: nodePass},
		{file: "node20.20.2-test-fail.tap", workspace: "/tmp/cap/node", runner: NodeTAP, passed: 3, failed: 3, skipped: 1, results: nodeFail,
			failures: []string{"calc > subtracts @test/calc.test.js:9", "table > large @test/calc.test.js:21", "table @test/calc.test.js:19"}, messageSubstring: "1 !== 2"},
		{file: "node20.20.2-test-spec-pass.txt", workspace: "/tmp/cap/node", runner: NodeSpec, passed: 6, skipped: 1,
			results: nodePass[:6]}, // a test with subtests shows as a group, like a suite
		{file: "node20.20.2-test-spec-fail.txt", workspace: "/tmp/cap/node", runner: NodeSpec, passed: 3, failed: 3, skipped: 1,
			results: nodeFail[:6], failures: []string{"calc > subtracts @test/calc.test.js:10", "table > large @test/calc.test.js:21"}, messageSubstring: "1 !== 2"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			ws := tc.workspace
			if ws == "" {
				ws = "/workspace"
			}
			sums := Parse(out, options(ws))
			if len(sums) != 1 {
				t.Fatalf("%d runners recognised, want 1: %+v", len(sums), sums)
			}
			s := sums[0]
			if !slices.Equal(s.Runners, []string{string(tc.runner)}) {
				t.Errorf("runners %q, want %q", s.Runners, tc.runner)
			}
			if s.Passed != tc.passed || s.Failed != tc.failed || s.Skipped != tc.skipped || s.FailuresOnly != tc.failuresOnly {
				t.Errorf("counts %d passed, %d failed, %d skipped (failures only %v); want %d, %d, %d (%v)",
					s.Passed, s.Failed, s.Skipped, s.FailuresOnly, tc.passed, tc.failed, tc.skipped, tc.failuresOnly)
			}
			if got := results(s); !slices.Equal(got, tc.results) {
				t.Errorf("results\n got %q\nwant %q", got, tc.results)
			}
			if got := failures(s); !slices.Equal(got, tc.failures) {
				t.Errorf("failures\n got %q\nwant %q", got, tc.failures)
			}
			if tc.messageSubstring != "" && !strings.Contains(s.Failures[0].Message, tc.messageSubstring) {
				t.Errorf("first failure's message %q lacks %q", s.Failures[0].Message, tc.messageSubstring)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("the summary does not validate: %v", err)
			}
			// Streaming in small writes gives the same as reading at once.
			sc := NewScanner(options(ws))
			for i := 0; i < len(out); i += 7 {
				_, _ = sc.Write(out[i:min(i+7, len(out))])
			}
			if again := sc.Summaries(); len(again) != 1 || fmt.Sprint(*again[0]) != fmt.Sprint(*s) {
				t.Errorf("streamed in pieces: %+v", again)
			}
		})
	}
}

// TestRunnersReports reads each runner's real report files.
func TestRunnersReports(t *testing.T) {
	for _, tc := range []struct {
		file                    string
		workspace               string
		runner                  Runner
		passed, failed, skipped int
		results                 []string
		failures                []string
	}{
		{file: "pytest7.2.1-junit-pass.xml", runner: PytestJUnit, passed: 5, skipped: 1,
			results: []string{"p tests.test_calc.test_add", "p tests.test_calc.test_sub", "p tests.test_calc.test_table[1-1-2]", "p tests.test_calc.test_table[1000-1-1001]", "s tests.test_calc.test_later", "p tests.test_calc.TestStrings.test_upper"}},
		{file: "pytest7.2.1-junit-fail.xml", runner: PytestJUnit, passed: 3, failed: 2, skipped: 1, results: pyJUnit,
			failures: []string{"tests.test_calc.test_sub @tests/test_calc.py:15", "tests.test_calc.test_table[1000-1-1001] @tests/test_calc.py:22"}},
		{file: "jest30.5.2-json-pass.json", workspace: "/tmp/cap/jest", runner: JestJSON, passed: 5, skipped: 1, results: jestVPass},
		{file: "jest30.5.2-json-fail.json", workspace: "/tmp/cap/jest", runner: JestJSON, passed: 3, failed: 2, skipped: 1, results: jestVFail, failures: jestFailures},
		{file: "jest30.5.2-junit16.0.0-fail.xml", workspace: "/tmp/cap/jest", runner: JestJUnit, passed: 3, failed: 2, skipped: 1,
			results:  []string{"p upper case", "p add(1, 1)", "f add(1000, 1)", "p calc adds", "f calc subtracts", "s calc divides"},
			failures: []string{"add(1000, 1) @src/strs.test.js:6", "calc subtracts @src/calc.test.js:9"}},
		{file: "node20.20.2-test-junit-pass.xml", workspace: "/tmp/cap/node", runner: NodeJUnit, passed: 5, skipped: 1,
			results: []string{"p upper case", "p calc > adds", "p calc > subtracts", "s calc > divides", "p table > small", "p table > large"}}, // a suite's own cases come before its nested suites'.
		{file: "node20.20.2-test-junit-fail.xml", workspace: "/tmp/cap/node", runner: NodeJUnit, passed: 3, failed: 2, skipped: 1,
			results:  []string{"p upper case", "p calc > adds", "f calc > subtracts", "s calc > divides", "p table > small", "f table > large"},
			failures: []string{"calc > subtracts @test/calc.test.js:10", "table > large @test/calc.test.js:21"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			ws := tc.workspace
			if ws == "" {
				ws = "/workspace"
			}
			s, err := FromReport(tc.file, data, options(ws))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Runners, []string{string(tc.runner)}) {
				t.Errorf("runners %q, want %q", s.Runners, tc.runner)
			}
			if s.Passed != tc.passed || s.Failed != tc.failed || s.Skipped != tc.skipped {
				t.Errorf("counts %d/%d/%d, want %d/%d/%d", s.Passed, s.Failed, s.Skipped, tc.passed, tc.failed, tc.skipped)
			}
			if got := results(s); !slices.Equal(got, tc.results) {
				t.Errorf("results\n got %q\nwant %q", got, tc.results)
			}
			if got := failures(s); !slices.Equal(got, tc.failures) {
				t.Errorf("failures\n got %q\nwant %q", got, tc.failures)
			}
		})
	}
	for _, bad := range []string{"", "<testsuite><testcase>", "<html><body/></html>", `<?xml version="1.0" encoding="ISO-8859-1"?><testsuite/>`, `{"a":1}`, "plain text"} {
		if _, err := FromReport("report.xml", []byte(bad), Options{}); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestOneOutputSeveralRunners: a Makefile's output with go test -v and
// jest in it counts both; go test -json output is never also read as
// plain go test.
func TestOneOutputSeveralRunners(t *testing.T) {
	goV, _ := os.ReadFile("testdata/go1.26.8-test-v-fail.txt")
	jest, _ := os.ReadFile("testdata/jest30.5.2-fail.txt")
	sums := Parse(append(append(goV, '\n'), jest...), options("/workspace"))
	if len(sums) != 2 || sums[0].Runners[0] != string(GoTest) || sums[1].Runners[0] != string(Jest) {
		t.Fatalf("got %+v", sums)
	}
	if all := Combine(sums, nil); all.Passed != 6 || all.Failed != 5 || all.Skipped != 2 || !slices.Equal(all.Runners, []string{string(GoTest), string(Jest)}) {
		t.Errorf("combined %+v", all)
	}
	js, _ := os.ReadFile("testdata/go1.26.8-test-json-fail.txt")
	if sums := Parse(js, Options{}); len(sums) != 1 || sums[0].Runners[0] != string(GoTestJSON) {
		t.Errorf("go test -json read as %+v", sums)
	}
	if sums := Parse([]byte("building...\nok, done\nFAIL\nPASS\n1..2\n"), Options{}); len(sums) != 0 {
		t.Errorf("plain text recognised as %+v", sums)
	}
}

// TestCombineCountsARunnerOnce: pytest's output and its JUnit report are
// one run; jest's output and its JSON report too. An unknown writer's
// JUnit adds to them.
func TestCombineCountsARunnerOnce(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	outputs := slices.Concat(Parse(read("pytest7.2.1-fail.txt"), Options{}), Parse(read("go1.26.8-test-json-fail.txt"), Options{}))
	junit, err := FromReport("junit.xml", read("pytest7.2.1-junit-fail.xml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := FromReport("TEST-x.xml", []byte(`<testsuite name="com.acme.T"><testcase classname="com.acme.T" name="a"/></testsuite>`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := Combine(outputs, []*contract.TestSummary{junit, other})
	// go -json 3/3/1, pytest's JUnit 3/2/1 (its output left out), surefire 1/0/0.
	if got.Passed != 7 || got.Failed != 5 || got.Skipped != 2 {
		t.Errorf("combined %d/%d/%d", got.Passed, got.Failed, got.Skipped)
	}
	if want := []string{string(GoTestJSON), string(PytestJUnit), string(JUnit)}; !slices.Equal(got.Runners, want) {
		t.Errorf("runners %q, want %q", got.Runners, want)
	}
	if Combine(nil, nil) != nil {
		t.Error("nothing combined to something")
	}
}

// TestCaps: names past MaxTestResults are counted, not listed; failures
// past MaxTestFailures likewise; counts stay exact, and merging keeps
// both caps.
func TestCaps(t *testing.T) {
	var b strings.Builder
	n := contract.MaxTestResults + 500
	for i := range n {
		fmt.Fprintf(&b, "--- FAIL: TestN%d (0.00s)\n", i)
	}
	b.WriteString("FAIL\texample.com/m\t0.1s\n")
	s := Parse([]byte(b.String()), Options{})[0]
	if s.Failed != n || len(s.Results) != contract.MaxTestResults || s.MoreResults != 500 || len(s.Failures) != contract.MaxTestFailures {
		t.Errorf("failed %d, %d results + %d more, %d failures", s.Failed, len(s.Results), s.MoreResults, len(s.Failures))
	}
	m := Merge(s, s)
	if m.Failed != 2*n || len(m.Results) != contract.MaxTestResults || m.MoreResults != 2*n-contract.MaxTestResults || len(m.Failures) != contract.MaxTestFailures {
		t.Errorf("merged: failed %d, %d results + %d more, %d failures", m.Failed, len(m.Results), m.MoreResults, len(m.Failures))
	}
	if len(s.Results) != contract.MaxTestResults || s.MoreResults != 500 {
		t.Error("Merge changed its argument")
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	// A line longer than the cap is skipped whole; the next one counts.
	long := strings.Repeat("x", maxLine+10) + "\n--- FAIL: TestAfter (0.00s)\n"
	if s := Parse([]byte(long), Options{}); len(s) != 1 || s[0].Results[0].Name != "TestAfter" {
		t.Errorf("after a long line: %+v", s)
	}
}

// TestUntrustedNames: names and messages come out as visible text.
func TestUntrustedNames(t *testing.T) {
	out := "--- FAIL: Test\u202eevil\x00 (0.00s)\n    x_test.go:3: bad\x07 news\nFAIL\texample.com/m\t0.1s\n"
	s := Parse([]byte(out), Options{})[0]
	if err := s.Validate(); err != nil {
		t.Errorf("%+v: %v", s, err)
	}
}

// TestReadable: a failing go test -json run's tail reads as go test's
// text, not as JSON events; other output is left as it is.
func TestReadable(t *testing.T) {
	js, _ := os.ReadFile("testdata/go1.26.8-test-json-fail.txt")
	plain := Readable(string(js))
	if strings.Contains(plain, `"Action"`) || !strings.Contains(plain, "--- FAIL: TestSub") || !strings.Contains(plain, "calc_test.go:22: Sub(3, 2) = 1, want 2") {
		t.Errorf("readable:\n%s", plain)
	}
	for _, s := range []string{"", "plain\noutput\n", `{"not":"an event"}`} {
		if Readable(s) != s {
			t.Errorf("Readable(%q) changed it", s)
		}
	}
}

// TestGoJSONOtherModules: a failure in another module than the root's
// names no file; an event without a test name counts nothing.
func TestGoJSONOtherModules(t *testing.T) {
	g := NewScanner(Options{Module: "example.com/m", IsFile: func(p string) bool { return p == "sub/x_test.go" }})
	events := []map[string]string{
		{"Action": "run", "Package": "example.com/m/sub", "Test": "TestX"},
		{"Action": "output", "Package": "example.com/m/sub", "Test": "TestX", "Output": "    x_test.go:12: boom\x00\n"},
		{"Action": "fail", "Package": "example.com/m/sub", "Test": "TestX"},
		{"Action": "fail", "Package": "other.org/y", "Test": "TestY"},
		{"Action": "pass", "Package": "example.com/m", "Test": "TestZ"},
	}
	var all []byte
	for _, e := range events {
		b, _ := json.Marshal(e)
		all = append(append(all, b...), '\n')
	}
	all = append(all, []byte("not json\n{\"Action\":\"pass\"}\n")...) // no test name: not counted
	for i := 0; i < len(all); i += 7 {                                // writes that split lines
		_, _ = g.Write(all[i:min(i+7, len(all))])
	}
	sums := g.Summaries()
	if len(sums) != 1 {
		t.Fatalf("summaries %+v", sums)
	}
	s := sums[0]
	if s == nil || s.Passed != 1 || s.Failed != 2 || len(s.Failures) != 2 {
		t.Fatalf("summary %+v", s)
	}
	f := s.Failures[0]
	if f.Name != "example.com/m/sub.TestX" || f.File != "sub/x_test.go" || f.Line != 12 || f.Message != "    x_test.go:12: boom" {
		t.Errorf("failure %+v", f)
	}
	if s.Failures[1].File != "" || s.Failures[1].Line != 0 {
		t.Errorf("another module's file was named: %+v", s.Failures[1])
	}
	if sums := NewScanner(Options{}).Summaries(); sums != nil {
		t.Error("no events should give no summary")
	}
}

// Marks other tools print too (mocha's ✔, a checklist's ✓, a PASSED line)
// count only with the runner's own totals, which these runners always
// print: a failing mocha run must not read as all passed.
func TestMarksWithoutTotalsCountNothing(t *testing.T) {
	for _, out := range []string{
		"  calc\n    ✔ adds\n    ✔ subtracts\n  1) divides\n\n  2 passing (5ms)\n  1 failing\n", // mocha
		"PASS src/x.test.js\n  ✓ adds (3 ms)\n",                                                 // jest cut before its summary
		"tests/test_x.py::test_a PASSED                [100%]\n",                                // pytest cut before its summary
	} {
		if sums := Parse([]byte(out), Options{}); len(sums) != 0 {
			t.Errorf("%q read as %+v", out, sums)
		}
	}
}
