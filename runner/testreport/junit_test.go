package testreport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// handwritten reads a report in testdata/handwritten: hand-written in the
// shapes Surefire, pytest and jest-junit write, for what the captured ones
// do not show (failure locations from the testcase's attributes and the
// failure's text, errors, a report with no names). The supervisor's
// report tests read the same files.
func handwritten(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "handwritten", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseJUnit(t *testing.T) {
	files := map[string]bool{
		"tests/test_calc.py":                   true,
		"src/test/java/com/acme/CalcTest.java": true,
		"src/sum.test.js":                      true,
	}
	isFile := func(p string) bool { return files[p] }
	for _, tc := range []struct {
		name string
		xml  string
		want contract.TestSummary
	}{
		{"pytest", handwritten(t, "pytest-junit.xml"), contract.TestSummary{Passed: 1, Failed: 2, Skipped: 1, Failures: []contract.TestFailure{
			// The assertion's line in the text wins over the test's.
			{Name: "tests.test_calc.test_add", File: "tests/test_calc.py", Line: 5, Message: "assert 3 == 2\n +  where 3 = add(1, 1)"},
			// pytest's line attribute is 0-based.
			{Name: "tests.test_calc.test_div", File: "tests/test_calc.py", Line: 12, Message: "fixture 'db' not found"},
		}}},
		{"surefire", handwritten(t, "surefire.xml"), contract.TestSummary{Passed: 1, Failed: 1, Skipped: 1, Failures: []contract.TestFailure{
			{Name: "com.acme.CalcTest.testAdd", File: "src/test/java/com/acme/CalcTest.java", Line: 12, Message: "expected: <2> but was: <3>"},
		}}},
		{"jest-junit", handwritten(t, "jest-junit.xml"), contract.TestSummary{Passed: 1, Failed: 1, Skipped: 1, Failures: []contract.TestFailure{
			{Name: "sum adds 1 + 1 to equal 2", File: "src/sum.test.js", Line: 9, Message: "Error: expect(received).toBe(expected) // Object.is equality\n\nExpected: 2\nReceived: 3\n    at Object.toBe (/workspace/node_modules/expect/build/index.js:9:1)\n    at Object.<anonymous> (/workspace/src/sum.test.js:9:20)"},
		}}},
		{"nameless, no location", `<testsuite><testcase><failure message="` + strings.Repeat("é", 600) + `">at /etc/passwd:1 and ../x.go:3</failure></testcase></testsuite>`,
			contract.TestSummary{Failed: 1, Failures: []contract.TestFailure{{Name: "(unnamed test)", Message: strings.Repeat("é", 600)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJUnit([]byte(tc.xml), Options{Workspace: "/workspace", IsFile: isFile})
			if err != nil {
				t.Fatal(err)
			}
			got.Results, got.Runners = nil, nil // TestRunnersReports has those
			if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "<testsuite><testcase>", "<html><body/></html>", `<?xml version="1.0" encoding="ISO-8859-1"?><testsuite/>`} {
		if _, err := parseJUnit([]byte(bad), Options{IsFile: isFile}); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
