package testreport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Hand-written reports in the shapes Surefire, pytest and jest-junit
// write, for what the captured ones do not show: failure locations from
// the testcase's attributes and the failure's text, errors, and a report
// with no names.
const pytestReport = `<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="4">
<testcase classname="tests.test_calc" name="test_add" file="tests/test_calc.py" line="2" time="0.001">
<failure message="assert 3 == 2&#10; +  where 3 = add(1, 1)">def test_add():
&gt;       assert add(1, 1) == 2
E       assert 3 == 2

tests/test_calc.py:5: AssertionError</failure></testcase>
<testcase classname="tests.test_calc" name="test_sub" file="tests/test_calc.py" line="7"/>
<testcase classname="tests.test_calc" name="test_div" file="tests/test_calc.py" line="11"><error message="fixture 'db' not found">file /workspace/tests/test_calc.py, line 12</error></testcase>
<testcase classname="tests.test_calc" name="test_skip" file="tests/test_calc.py" line="15"><skipped type="pytest.skip" message="later">tests/test_calc.py:16: later</skipped></testcase>
</testsuite></testsuites>`

const surefireReport = `<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" name="com.acme.CalcTest" time="0.05" tests="3" errors="0" skipped="1" failures="1">
  <properties><property name="java.version" value="21"/></properties>
  <testcase name="testAdd" classname="com.acme.CalcTest" time="0.01">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;" type="org.opentest4j.AssertionFailedError"><![CDATA[org.opentest4j.AssertionFailedError: expected: <2> but was: <3>
	at com.acme.CalcTest.testAdd(CalcTest.java:12)
	at src/test/java/com/acme/CalcTest.java:12
]]></failure>
    <system-out><![CDATA[hello]]></system-out>
  </testcase>
  <testcase name="testSub" classname="com.acme.CalcTest" time="0.001"/>
  <testcase name="testMul" classname="com.acme.CalcTest" time="0"><skipped message="disabled"/></testcase>
</testsuite>`

const jestReport = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="3" failures="1" errors="0" time="1.2">
  <testsuite name="sum" errors="0" failures="1" skipped="1" timestamp="2024-01-01T00:00:00" time="0.9" tests="3">
    <testcase classname="sum adds 1 + 2 to equal 3" name="sum adds 1 + 2 to equal 3" time="0.004"/>
    <testcase classname="sum adds 1 + 1 to equal 2" name="sum adds 1 + 1 to equal 2" time="0.003">
      <failure>Error: expect(received).toBe(expected) // Object.is equality

Expected: 2
Received: 3
    at Object.toBe (/workspace/node_modules/expect/build/index.js:9:1)
    at Object.&lt;anonymous&gt; (/workspace/src/sum.test.js:9:20)</failure>
    </testcase>
    <testcase classname="sum later" name="sum later" time="0"><skipped/></testcase>
  </testsuite>
</testsuites>`

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
		{"pytest", pytestReport, contract.TestSummary{Passed: 1, Failed: 2, Skipped: 1, Failures: []contract.TestFailure{
			// The assertion's line in the text wins over the test's.
			{Name: "tests.test_calc.test_add", File: "tests/test_calc.py", Line: 5, Message: "assert 3 == 2\n +  where 3 = add(1, 1)"},
			// pytest's line attribute is 0-based.
			{Name: "tests.test_calc.test_div", File: "tests/test_calc.py", Line: 12, Message: "fixture 'db' not found"},
		}}},
		{"surefire", surefireReport, contract.TestSummary{Passed: 1, Failed: 1, Skipped: 1, Failures: []contract.TestFailure{
			{Name: "com.acme.CalcTest.testAdd", File: "src/test/java/com/acme/CalcTest.java", Line: 12, Message: "expected: <2> but was: <3>"},
		}}},
		{"jest-junit", jestReport, contract.TestSummary{Passed: 1, Failed: 1, Skipped: 1, Failures: []contract.TestFailure{
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
