// Package testreport turns what test runners print, and the report files
// they write, into counts and named results (contract.TestSummary).
//
// A verify command's output goes through a Scanner, line by line as it
// streams (Parse is the same over bytes already read): every parser sees
// every line and says whether it recognised its runner's output. The
// runners read from output are plain `go test` (with or without -v),
// `go test -json`, pytest (its summary line, -v lines and the short test
// summary), jest (its "Tests:" line, --verbose marks and ● failures) and
// `node --test`, as TAP (its default when output is not a terminal) or
// its spec reporter. Report files (FromReport) are JUnit XML, whichever
// runner wrote it, and jest's --json report. Combine puts the parts of
// one attempt together, counting a runner once when both its output and
// its report were read (decision 0076).
//
// Everything read is untrusted: names and messages are cleaned to valid,
// visible text and capped, and the number of names kept is bounded
// (contract.MaxTestResults, contract.MaxTestFailures), with the counts
// kept exact.
package testreport

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// Runner names a format the counts were read from, as
// contract.TestSummary.Runners lists it.
type Runner string

// The formats read.
const (
	GoTestJSON  Runner = "go test -json"
	GoTest      Runner = "go test"
	Pytest      Runner = "pytest"
	Jest        Runner = "jest"
	NodeTAP     Runner = "node --test (TAP)"
	NodeSpec    Runner = "node --test (spec)"
	JestJSON    Runner = "jest JSON report"
	JUnit       Runner = "JUnit XML"
	PytestJUnit Runner = "pytest JUnit XML"
	JestJUnit   Runner = "jest-junit XML"
	NodeJUnit   Runner = "node --test JUnit XML"
	GoJUnit     Runner = "gotestsum JUnit XML"
)

// family is the test runner behind a format: a report of a family
// replaces the output of the same family (Combine). "" for a report whose
// writer is not known.
func family(r string) string {
	switch Runner(r) {
	case GoTestJSON, GoTest, GoJUnit:
		return "go"
	case Pytest, PytestJUnit:
		return "pytest"
	case Jest, JestJSON, JestJUnit:
		return "jest"
	case NodeTAP, NodeSpec, NodeJUnit:
		return "node"
	}
	return ""
}

// Options is what the parsers know of the workspace, to name the files
// of failing tests.
type Options struct {
	// Module is the root go.mod's module path ("" for none): a Go
	// package's files are named through it.
	Module string
	// Workspace is where the repository was when the tests ran (the
	// sandbox's /workspace); absolute paths under it are the
	// repository's.
	Workspace string
	// IsFile says whether a repository-relative path is a regular file of
	// the workspace; a failure's file is named only then. Nil names none.
	IsFile func(rel string) bool
}

// Caps on what is read.
const (
	maxName    = 1 << 10
	maxLine    = 1 << 20 // longer output lines are skipped
	maxSeen    = 10 * contract.MaxTestResults
	maxPending = 10_000 // go test results waiting for their package's line
)

// builder gathers one runner's results with the caps applied. A name
// given twice (pytest -v and its short summary both name a test) counts
// once; details of a failure fill in what was still missing.
type builder struct {
	runner     Runner
	opts       Options
	recognised bool
	// needTotals: the runner always ends with its totals, and marks that
	// other tools print too (✔, ✓, "x.py::y PASSED") count only with them.
	needTotals   bool
	sum          contract.TestSummary
	counted      [3]int          // passed, failed, skipped, by name
	totals       *[3]int         // the runner's own totals, when it prints them
	seen         map[string]bool // names read so far, up to maxSeen
	failureIndex map[string]int  // name → index in sum.Failures
}

func newBuilder(r Runner, opts Options) *builder {
	return &builder{runner: r, opts: opts, seen: map[string]bool{}, failureIndex: map[string]int{}}
}

func outcomeIndex(o contract.TestOutcome) int {
	switch o {
	case contract.TestPassed:
		return 0
	case contract.TestFailed:
		return 1
	}
	return 2
}

// add records a named test's outcome; it reports false when the name was
// already read (and is not counted again).
func (b *builder) add(name string, o contract.TestOutcome) bool {
	b.recognised = true
	name = cleanName(name)
	if b.seen[name] {
		return false
	}
	if len(b.seen) < maxSeen {
		b.seen[name] = true
	}
	b.counted[outcomeIndex(o)]++
	if len(b.sum.Results) < contract.MaxTestResults {
		b.sum.Results = append(b.sum.Results, contract.TestResult{Name: name, Outcome: o})
	} else {
		b.sum.MoreResults++
	}
	if o == contract.TestFailed && len(b.sum.Failures) < contract.MaxTestFailures {
		b.failureIndex[name] = len(b.sum.Failures)
		b.sum.Failures = append(b.sum.Failures, contract.TestFailure{Name: name})
	}
	return true
}

// detail fills in a listed failure's file, line and message where they
// are still empty. file is repository-relative and checked with IsFile.
func (b *builder) detail(name, file string, line int, msg string) {
	i, ok := b.failureIndex[cleanName(name)]
	if !ok {
		return
	}
	f := &b.sum.Failures[i]
	if f.File == "" && file != "" && b.isFile(file) {
		f.File, f.Line = file, max(line, 0)
	}
	if f.Message == "" {
		f.Message = cleanText(strings.TrimRight(msg, " \t\n"), contract.MaxTestMessageBytes)
	}
}

func (b *builder) isFile(rel string) bool {
	return b.opts.IsFile != nil && contract.ValidatePath(rel) == nil && b.opts.IsFile(rel)
}

// total adds to the runner's own totals.
func (b *builder) total(passed, failed, skipped int) {
	b.recognised = true
	if b.totals == nil {
		b.totals = &[3]int{}
	}
	b.totals[0] += passed
	b.totals[1] += failed
	b.totals[2] += skipped
}

// summary is what was read, or nil when the runner's output was not seen.
func (b *builder) summary() *contract.TestSummary {
	if !b.recognised || (b.needTotals && b.totals == nil) {
		return nil
	}
	s := b.sum
	c := b.counted
	if b.totals != nil {
		c = *b.totals
	}
	s.Passed, s.Failed, s.Skipped = c[0], c[1], c[2]
	s.Runners = []string{string(b.runner)}
	return &s
}

// ansi matches terminal escape sequences (colours, cursor movement) and
// Buildkite's timestamp markers, which runners print even when piped.
var ansi = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|_[^\x07]*\x07|[@-Z\\-_])`)

// StripTerminal removes terminal escape sequences from s.
func StripTerminal(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}

// matchIf runs re over s only when ok, a cheap test that lines which
// cannot match fail: every parser sees every line of every output.
func matchIf(ok bool, re *regexp.Regexp, s string) []string {
	if !ok {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// hasMark reports whether s may hold a runner's mark (✓ ✕ ○ ✔ ✖ ▶, all
// U+2xxx, or ﹣, U+FE63) by their UTF-8 lead bytes: faster than looking
// for each rune.
func hasMark(s string) bool {
	return strings.IndexByte(s, 0xE2) >= 0 || strings.IndexByte(s, 0xEF) >= 0
}

// cleanName makes a test's name one line of visible text, capped.
func cleanName(s string) string {
	s = strings.TrimSpace(contract.CleanProgressMessage(s))
	s = policy.TruncateUTF8(s, maxName)
	if s == "" {
		return "(unnamed test)"
	}
	return s
}

// cleanText makes untrusted text valid for a text field: valid UTF-8, no
// hidden characters (policy.IsHidden, NUL among them), at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = policy.CleanText(s)
	return policy.TruncateUTF8(s, max)
}

// repoPath makes a path a runner printed repository-relative, or "" when
// it cannot be one: absolute paths count only inside the workspace.
func (o Options) repoPath(p string) string {
	if o.Workspace != "" {
		if rest, ok := strings.CutPrefix(p, strings.TrimRight(o.Workspace, "/")+"/"); ok {
			p = rest
		}
	}
	if strings.HasPrefix(p, "/") {
		return ""
	}
	p = strings.TrimPrefix(p, "./")
	if p == "" || contract.ValidatePath(p) != nil {
		return ""
	}
	return p
}

// textLocation finds "path/to/file.ext:12" in failure text: pytest's
// "tests/test_calc.py:5: AssertionError", a stack frame's
// "(/workspace/src/sum.test.js:5:20)".
var textLocation = regexp.MustCompile(`(?m)(?:^|[\s("'\[])(/?(?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_.\-]+\.[A-Za-z0-9]+):(\d+)`)

// locate returns the first path:line in text that names a regular file
// of the workspace, or "" and 0.
func (o Options) locate(text string) (string, int) {
	for _, h := range o.locations(text) {
		return h.file, h.line
	}
	return "", 0
}

type location struct {
	file string
	line int
}

// locations are the path:line pairs in text that name regular files of
// the workspace, in order (at most 16 are looked at).
func (o Options) locations(text string) []location {
	if o.IsFile == nil {
		return nil
	}
	if len(text) > 64<<10 {
		text = text[:64<<10]
	}
	var hits []location
	for _, m := range textLocation.FindAllStringSubmatch(text, 16) {
		p := o.repoPath(m[1])
		n, err := strconv.Atoi(m[2])
		if p == "" || err != nil || n <= 0 || !o.IsFile(p) {
			continue
		}
		hits = append(hits, location{p, n})
	}
	return hits
}

// msgBuf collects a failure's message lines, capped.
type msgBuf struct {
	b strings.Builder
}

func (m *msgBuf) add(line string) {
	if m.b.Len() >= contract.MaxTestMessageBytes {
		return
	}
	m.b.WriteString(line)
	m.b.WriteByte('\n')
}

func (m *msgBuf) String() string { return strings.TrimSpace(m.b.String()) }
