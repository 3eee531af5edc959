package testreport

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// jestParser reads jest's default reporter. Counts come from its "Tests:"
// line ("Tests:       2 failed, 1 skipped, 3 passed, 6 total", summed when
// several runs print one); names from the --verbose tree under each
// "PASS/FAIL file" line (✓ passed, ✕ failed, ○ skipped or todo; jest is
// verbose by itself when one file runs) and from the "● suite › test"
// headers of failures, whose following lines are the message. A test is
// named "file › describe › test", as the JSON report names it here too.
type jestParser struct {
	b       *builder
	file    string
	groups  []jestGroup // describe lines of the verbose tree, by indent
	failing string      // the failure whose message lines follow
	msg     msgBuf
}

type jestGroup struct {
	indent int
	name   string
}

var (
	jestFileRE   = regexp.MustCompile(`^(PASS|FAIL) (\S+)(?: \(.*\))?$`)
	jestTestRE   = regexp.MustCompile(`^(\s+)(✓|✕|○(?: skipped| todo)?) (.+?)(?: \(\d+(?:\.\d+)? m?s\))?$`)
	jestHeaderRE = regexp.MustCompile(`^  ● (.+)$`)
	jestTotalsRE = regexp.MustCompile(`^Tests:\s+(.*\d+ total)$`)
	jestCountRE  = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|total)`)
	jestGroupRE  = regexp.MustCompile(`^(\s+)(\S.*)$`)
)

func newJestParser(opts Options) *jestParser {
	j := &jestParser{b: newBuilder(Jest, opts)}
	j.b.needTotals = true
	return j
}

func (j *jestParser) name(parts ...string) string {
	if j.file != "" {
		parts = append([]string{j.file}, parts...)
	}
	return strings.Join(parts, " › ")
}

func (j *jestParser) endFailure() {
	if j.failing != "" {
		msg := j.msg.String()
		file, line := j.b.opts.locate(msg)
		j.b.detail(j.failing, file, line, msg)
	}
	j.failing, j.msg = "", msgBuf{}
}

func (j *jestParser) line(line string) {
	if m := matchIf(strings.HasPrefix(line, "Tests:"), jestTotalsRE, line); m != nil {
		j.endFailure()
		var c [3]int
		for _, n := range jestCountRE.FindAllStringSubmatch(m[1], -1) {
			v, _ := strconv.Atoi(n[1])
			switch n[2] {
			case "passed":
				c[0] += v
			case "failed":
				c[1] += v
			case "skipped", "todo":
				c[2] += v
			}
		}
		j.b.total(c[0], c[1], c[2])
		return
	}
	if m := matchIf(strings.HasPrefix(line, "PASS ") || strings.HasPrefix(line, "FAIL "), jestFileRE, line); m != nil {
		j.endFailure()
		j.file, j.groups = j.b.opts.repoPath(m[2]), nil
		if j.file == "" {
			j.file = m[2]
		}
		return
	}
	if strings.HasPrefix(line, "Test Suites:") || strings.HasPrefix(line, "Summary of all failing tests") {
		j.endFailure()
		return
	}
	if m := matchIf(strings.HasPrefix(line, "  ● "), jestHeaderRE, line); m != nil {
		j.endFailure()
		if m[1] == "Test suite failed to run" {
			return
		}
		name := j.name(m[1])
		j.b.add(name, contract.TestFailed)
		j.failing = name
		return
	}
	if j.failing != "" {
		j.msg.add(line)
		return
	}
	if j.file == "" {
		return
	}
	if m := matchIf(hasMark(line), jestTestRE, line); m != nil {
		indent := len(m[1])
		j.pop(indent)
		o := contract.TestPassed
		switch {
		case m[2] == "✕":
			o = contract.TestFailed
		case strings.HasPrefix(m[2], "○"):
			o = contract.TestSkipped
		}
		parts := make([]string, 0, len(j.groups)+1)
		for _, g := range j.groups {
			parts = append(parts, g.name)
		}
		j.b.add(j.name(append(parts, m[3])...), o)
		return
	}
	if m := matchIf(len(j.groups) < 64 && strings.HasPrefix(line, " "), jestGroupRE, line); m != nil {
		indent := len(m[1])
		j.pop(indent)
		j.groups = append(j.groups, jestGroup{indent, strings.TrimSpace(m[2])})
	}
}

// pop closes the describe groups at indent or deeper.
func (j *jestParser) pop(indent int) {
	for len(j.groups) > 0 && j.groups[len(j.groups)-1].indent >= indent {
		j.groups = j.groups[:len(j.groups)-1]
	}
}

func (j *jestParser) summary() *contract.TestSummary {
	j.endFailure()
	return j.b.summary()
}

// jestJSON is the part of jest's --json report read here.
type jestJSON struct {
	NumTotalTests   *int `json:"numTotalTests"`
	NumPassedTests  int  `json:"numPassedTests"`
	NumFailedTests  int  `json:"numFailedTests"`
	NumPendingTests int  `json:"numPendingTests"`
	NumTodoTests    int  `json:"numTodoTests"`
	TestResults     []struct {
		Name             string `json:"name"`
		Message          string `json:"message"`
		AssertionResults []struct {
			AncestorTitles  []string `json:"ancestorTitles"`
			Title           string   `json:"title"`
			Status          string   `json:"status"`
			FailureMessages []string `json:"failureMessages"`
			Location        *struct {
				Line int `json:"line"`
			} `json:"location"`
		} `json:"assertionResults"`
	} `json:"testResults"`
}

var errNotJest = errors.New("not a jest --json report (no numTotalTests)")

// parseJestJSON reads jest's --json report: counts from its totals, names
// and outcomes from each file's assertion results.
func parseJestJSON(data []byte, opts Options) (*contract.TestSummary, error) {
	var r jestJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if r.NumTotalTests == nil {
		return nil, errNotJest
	}
	b := newBuilder(JestJSON, opts)
	b.total(r.NumPassedTests, r.NumFailedTests, r.NumPendingTests+r.NumTodoTests)
	for _, f := range r.TestResults {
		file := opts.repoPath(f.Name)
		for _, a := range f.AssertionResults {
			parts := append([]string{}, a.AncestorTitles...)
			parts = append(parts, a.Title)
			if file != "" {
				parts = append([]string{file}, parts...)
			}
			name := strings.Join(parts, " › ")
			o := contract.TestSkipped
			switch a.Status {
			case "passed":
				o = contract.TestPassed
			case "failed":
				o = contract.TestFailed
			}
			if !b.add(name, o) || o != contract.TestFailed {
				continue
			}
			msg := StripTerminal(strings.Join(a.FailureMessages, "\n"))
			where, line := "", 0
			for _, h := range opts.locations(msg) {
				if h.file == file {
					where, line = h.file, h.line
					break
				}
			}
			if where == "" && a.Location != nil && file != "" {
				where, line = file, a.Location.Line
			}
			b.detail(name, where, line, msg)
		}
	}
	return b.summary(), nil
}
