package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
	"github.com/inspecthq/inspect/runner/testreport"
)

// TestCollectJUnit lays out a workspace by hand: what counts and what is
// refused.
func TestCollectJUnit(t *testing.T) {
	work := t.TempDir()
	since := fsNow(t.TempDir())
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := func(name string) string {
		return `<testsuite><testcase classname="c" name="` + name + `"><failure message="m"/></testcase></testsuite>`
	}
	// testreport's hand-written reports, in the shapes their tools write.
	report := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "testreport", "testdata", "handwritten", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write("target/surefire-reports/TEST-com.acme.CalcTest.xml", report("surefire.xml"))
	write("junit.xml", report("jest-junit.xml"))
	write("reports/pytest-junit.xml", report("pytest-junit.xml"))
	write("src/test/java/com/acme/CalcTest.java", "class CalcTest {}\n")
	write("src/sum.test.js", "test()\n")
	write("tests/test_calc.py", "def test_add(): pass\n")
	// Not by the convention, too deep, or in a skipped directory.
	write("results.xml", one("not-by-name"))
	write("a/b/c/d/e/f/TEST-deep-enough.xml", one("deep-enough"))
	write("a/b/c/d/e/f/g/TEST-too-deep.xml", one("too-deep"))
	write("node_modules/x/junit.xml", one("node-modules"))
	write(".git/TEST-git.xml", one("git"))
	write(".inspect/TEST-inspect.xml", one("inspect"))
	// Committed before the verify phase.
	old := write("TEST-old.xml", one("old"))
	hourAgo := since.Add(-time.Hour)
	if err := os.Chtimes(old, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	// Malformed, and over the size cap (never parsed: it would fail to).
	write("TEST-broken.xml", "<testsuite><testcase name='x'>")
	write("TEST-huge.xml", one("huge")+strings.Repeat(" ", junitMaxFileBytes))
	// Symlinks, to a file outside and to a directory, are not followed.
	if err := os.Symlink("/etc/passwd", filepath.Join(work, "TEST-x.xml")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "TEST-outside.xml"), []byte(one("outside")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(work, "linked")); err != nil {
		t.Fatal(err)
	}
	// A FIFO must not block the walk.
	if err := syscall.Mkfifo(filepath.Join(work, "TEST-fifo.xml"), 0o644); err != nil {
		t.Fatal(err)
	}

	var logBuf strings.Builder
	got := testreport.Combine(nil, collectReports(context.Background(), work, since, nil, testreport.Options{Workspace: "/workspace"}, zerolog.New(&logBuf)))
	if got == nil {
		t.Fatal("no results")
	}
	// Files in lexical order of the walk: a/.../TEST-deep-enough.xml,
	// junit.xml, reports/pytest-junit.xml, target/...
	var names []string
	for _, f := range got.Failures {
		names = append(names, f.Name)
	}
	wantNames := "[c.deep-enough sum adds 1 + 1 to equal 2 tests.test_calc.test_add tests.test_calc.test_div com.acme.CalcTest.testAdd]"
	if fmt.Sprint(names) != wantNames || got.Passed != 3 || got.Failed != 5 || got.Skipped != 3 {
		t.Errorf("got %d/%d/%d %v\nwant 3/5/3 %s\nlog:\n%s", got.Passed, got.Failed, got.Skipped, names, wantNames, logBuf.String())
	}
	for _, f := range got.Failures {
		if f.Name == "com.acme.CalcTest.testAdd" && (f.File != "src/test/java/com/acme/CalcTest.java" || f.Line != 12) {
			t.Errorf("surefire location %s:%d", f.File, f.Line)
		}
	}
	for _, want := range []string{"TEST-broken.xml", "TEST-huge.xml"} {
		if !strings.Contains(logBuf.String(), want) {
			t.Errorf("the log does not mention %s:\n%s", want, logBuf.String())
		}
	}
	for _, never := range []string{"TEST-x.xml", "TEST-fifo.xml", "TEST-old.xml", "linked"} {
		if strings.Contains(logBuf.String(), never) {
			t.Errorf("%s was opened:\n%s", never, logBuf.String())
		}
	}

	// Nothing new: no summary at all.
	if got := collectReports(context.Background(), work, since.Add(time.Hour), nil, testreport.Options{}, zerolog.Nop()); got != nil {
		t.Errorf("reports older than the verify phase: %+v", got)
	}
}

func TestCollectJUnitCapsTheNumberOfReports(t *testing.T) {
	work := t.TempDir()
	for i := range junitMaxFiles + 5 {
		p := filepath.Join(work, fmt.Sprintf("TEST-%03d.xml", i))
		if err := os.WriteFile(p, []byte(`<testsuite><testcase name="t"/></testsuite>`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := testreport.Combine(nil, collectReports(context.Background(), work, time.Time{}, nil, testreport.Options{}, zerolog.Nop()))
	if got == nil || got.Passed != junitMaxFiles {
		t.Errorf("got %+v, want %d passed", got, junitMaxFiles)
	}
}

// A verify command's Surefire report is read after it ran, and merged with
// go test -json's results; a report committed to the repository is not.
func TestVerifyCommandsJUnitReportsAreCollected(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{
		"reports/TEST-committed.xml": `<testsuite><testcase classname="old" name="committed"><failure message="stale"/></testcase></testsuite>`,
	})
	spec := ch.Spec("sess-j", "sess-j-a1", sha, []string{"sh", "agent/idle.sh"},
		command("test", time.Minute, "sh", "agent/gotest-fail.sh"),
		command("java", time.Minute, "sh", "-c", `mkdir -p target/surefire-reports && cat > target/surefire-reports/TEST-com.acme.CalcTest.xml <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.acme.CalcTest" tests="3" failures="1" skipped="1">
  <testcase name="testAdd" classname="com.acme.CalcTest"><failure message="expected: &lt;2&gt; but was: &lt;3&gt;">at com.acme.CalcTest.testAdd(CalcTest.java:12)
at calc_test.go:7</failure></testcase>
  <testcase name="testSub" classname="com.acme.CalcTest"/>
  <testcase name="testMul" classname="com.acme.CalcTest"><skipped/></testcase>
</testsuite>
EOF
exit 1`),
	)
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	want := contract.TestSummary{Passed: 2, Failed: 2, Skipped: 2, Failures: []contract.TestFailure{
		{Name: "example.com/widgets.TestAdd", File: "calc_test.go", Line: 7, Message: "    calc_test.go:7: Add(1, 1) = 3, want 2"},
		{Name: "com.acme.CalcTest.testAdd", File: "calc_test.go", Line: 7, Message: "expected: <2> but was: <3>"},
	}, Results: []contract.TestResult{
		{Name: "example.com/widgets.TestAdd", Outcome: contract.TestFailed},
		{Name: "example.com/widgets.TestSub", Outcome: contract.TestPassed},
		{Name: "example.com/widgets.TestSkip", Outcome: contract.TestSkipped},
		{Name: "com.acme.CalcTest.testAdd", Outcome: contract.TestFailed},
		{Name: "com.acme.CalcTest.testSub", Outcome: contract.TestPassed},
		{Name: "com.acme.CalcTest.testMul", Outcome: contract.TestSkipped},
	}, Runners: []string{"go test -json", "JUnit XML"}}
	if ev.Tests == nil || fmt.Sprint(*ev.Tests) != fmt.Sprint(want) {
		t.Errorf("tests %+v\nwant %+v", ev.Tests, want)
	}
	// The report is a file the verify command wrote: never part of the
	// change, which was fixed before verify ran.
	if u.Manifest == nil || len(u.Manifest.Files) != 0 {
		t.Errorf("manifest %+v, want the agent's empty change", u.Manifest)
	}
}

func TestReportPathsFromArgv(t *testing.T) {
	got := reportPaths([]contract.Command{
		{Argv: []string{"python3", "-m", "pytest", "--junitxml=out/py.xml"}},
		{Argv: []string{"npx", "jest", "--json", "--outputFile", "/workspace/out/jest.json"}},
		{Argv: []string{"sh", "-c", "node --test --test-reporter=junit --test-reporter-destination=node.xml && gotestsum --junitfile go.xml"}},
		{Argv: []string{"pytest", "--junitxml=../outside.xml", "--junitxml=/etc/x.xml", "--junitxml"}},
	})
	want := []string{"out/py.xml", "out/jest.json", "node.xml", "go.xml"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Real runners' output and a report a verify command names in its argv
// (jest's --json --outputFile, by no naming convention) give the counts;
// jest's own output is then left out: its report counted that run.
func TestVerifyCommandsOutputAndNamedReports(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "testreport", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-r", "sess-r-a1", sha, []string{"sh", "agent/idle.sh"},
		command("pytest", time.Minute, "sh", "-c", `printf '%s' "$1"; exit 1`, "sh", read("pytest7.2.1-fail.txt")),
		command("jest", time.Minute, "sh", "-c", `mkdir -p out && printf '%s' "$1" > out/r.json && printf '%s' "$2"; exit 1`, "sh",
			read("jest30.5.2-json-fail.json"), read("jest30.5.2-fail.txt"), "--json", "--outputFile=out/r.json"),
	)
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	tests := ev.Tests
	if tests == nil || tests.Passed != 6 || tests.Failed != 4 || tests.Skipped != 2 {
		t.Fatalf("tests %+v, want 6 passed, 4 failed, 2 skipped", tests)
	}
	if want := []string{"pytest", "jest JSON report"}; !slices.Equal(tests.Runners, want) {
		t.Errorf("runners %q, want %q", tests.Runners, want)
	}
	var names []string
	for _, r := range tests.Results {
		names = append(names, string(r.Outcome)+" "+r.Name)
	}
	// pytest without -v names its failures; jest's report names every test
	// (its paths are outside /workspace here, so they go unnamed).
	if len(names) != 8 || names[0] != "failed tests/test_calc.py::test_sub" || names[2] != "passed upper case" || names[4] != "failed add(1000, 1)" {
		t.Errorf("results %q", names)
	}
}
