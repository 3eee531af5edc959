package testreport

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// pytestParser reads pytest's terminal output. Counts come from its
// summary line ("=== 2 failed, 3 passed, 1 skipped in 0.03s ===", or
// without the rules under -q); names from -v lines ("tests/x.py::test_y
// PASSED") and the short test summary ("FAILED tests/x.py::test_y - msg",
// every outcome with -rA); a failure's file, line and message from its
// section under FAILURES ("___ test_y ___", "E   ..." lines and
// "tests/x.py:15: AssertionError"). Errors count as failures, xpassed as
// passed, xfailed as skipped.
type pytestParser struct {
	b        *builder
	sections map[string]*pytestSection // by section header, up to MaxTestFailures
	current  *pytestSection
}

type pytestSection struct {
	file string
	line int
	msg  msgBuf
}

var (
	pytestSummaryRE = regexp.MustCompile(`^(?:=+ )?((?:\d+ [a-z]+(?:, )?)+) in \d+(?:\.\d+)?s(?: \([0-9:.]+\))?(?: =+)?$`)
	pytestCountRE   = regexp.MustCompile(`(\d+) ([a-z]+)`)
	pytestVerboseRE = regexp.MustCompile(`^(\S+\.py::\S.*?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)(?:\s|$)`)
	pytestShortRE   = regexp.MustCompile(`^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+\.py(?:::\S.*?)?)(?: - (.*))?$`)
	pytestHeaderRE  = regexp.MustCompile(`^_{3,} (.+?) _{3,}$`)
	pytestWhereRE   = regexp.MustCompile(`^(\S+\.py):(\d+): \S`)
)

func newPytestParser(opts Options) *pytestParser {
	p := &pytestParser{b: newBuilder(Pytest, opts), sections: map[string]*pytestSection{}}
	p.b.needTotals = true
	return p
}

func pytestOutcome(word string) contract.TestOutcome {
	switch word {
	case "PASSED", "XPASS":
		return contract.TestPassed
	case "FAILED", "ERROR":
		return contract.TestFailed
	}
	return contract.TestSkipped
}

func (p *pytestParser) line(line string) {
	if m := matchIf(strings.Contains(line, " in "), pytestSummaryRE, line); m != nil {
		var c [3]int
		known := false
		for _, n := range pytestCountRE.FindAllStringSubmatch(m[1], -1) {
			v, _ := strconv.Atoi(n[1])
			switch n[2] {
			case "passed", "xpassed":
				c[0] += v
			case "failed", "error", "errors":
				c[1] += v
			case "skipped", "xfailed":
				c[2] += v
			case "deselected", "warning", "warnings", "rerun", "subtests":
			default:
				continue
			}
			known = true
		}
		if known {
			p.b.total(c[0], c[1], c[2])
		}
		p.current = nil
		return
	}
	if m := matchIf(strings.Contains(line, ".py::"), pytestVerboseRE, line); m != nil {
		p.b.add(m[1], pytestOutcome(m[2]))
		return
	}
	if m := matchIf(strings.Contains(line, ".py"), pytestShortRE, line); m != nil {
		o := pytestOutcome(m[1])
		p.b.add(m[2], o)
		if o == contract.TestFailed && m[3] != "" {
			p.b.detail(m[2], "", 0, m[3])
		}
		return
	}
	if m := matchIf(strings.HasPrefix(line, "___"), pytestHeaderRE, line); m != nil {
		p.current = nil
		if len(p.sections) < contract.MaxTestFailures {
			p.current = &pytestSection{}
			p.sections[m[1]] = p.current
		}
		return
	}
	if strings.HasPrefix(line, "===") {
		p.current = nil // a section's end: "=== short test summary info ==="
		return
	}
	if p.current == nil {
		return
	}
	if m := pytestWhereRE.FindStringSubmatch(line); m != nil && p.current.file == "" {
		p.current.file = p.b.opts.repoPath(m[1])
		p.current.line, _ = strconv.Atoi(m[2])
	}
	if rest, ok := strings.CutPrefix(line, "E "); ok {
		p.current.msg.add(strings.TrimSpace(rest))
	}
}

// sectionFor finds a failure's section: its header is the test's name
// after the file ("test_y", "TestX.test_y", "test_t[1-2]"), or "ERROR at
// setup of test_y".
func (p *pytestParser) sectionFor(nodeID string) *pytestSection {
	_, rest, ok := strings.Cut(nodeID, "::")
	if !ok {
		return nil
	}
	header := strings.ReplaceAll(rest, "::", ".")
	for _, h := range []string{header, "ERROR at setup of " + header, "ERROR at teardown of " + header} {
		if s := p.sections[h]; s != nil {
			return s
		}
	}
	return nil
}

func (p *pytestParser) summary() *contract.TestSummary {
	for _, f := range p.b.sum.Failures {
		if s := p.sectionFor(f.Name); s != nil {
			p.b.detail(f.Name, s.file, s.line, s.msg.String())
		}
	}
	return p.b.summary()
}
