package testreport

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// tapParser reads `node --test`'s TAP (its reporter when output is not a
// terminal). Counts come from the closing "# pass N", "# fail N",
// "# skipped N", "# todo N" and "# cancelled N" lines (cancelled counts as
// failed, todo as skipped); names from each "ok N - name" and "not ok N -
// name", joined to the "# Subtest:" names above them by indentation
// ("suite > test"), with "# SKIP"/"# TODO" as skipped. A suite (describe)
// is no test: its YAML block says type: 'suite'. A failure's message and
// location come from its YAML block's error: and location: keys.
type tapParser struct {
	b       *builder
	stack   []string // subtest names by nesting level
	pending *tapResult
	inError int // indentation of an error: |- block being read, or -1
}

type tapResult struct {
	name    string
	outcome contract.TestOutcome
	suite   bool
	loc     string
	msg     msgBuf
}

var (
	tapVersionRE = regexp.MustCompile(`^TAP version \d+$`)
	tapSubtestRE = regexp.MustCompile(`^(\s*)# Subtest: (.*)$`)
	tapResultRE  = regexp.MustCompile(`^(\s*)(not ok|ok) \d+(?: - (.*?))?(?: # (SKIP|TODO)\b.*)?$`)
	tapTotalRE   = regexp.MustCompile(`^# (pass|fail|cancelled|skipped|todo) (\d+)$`)
	tapKeyRE     = regexp.MustCompile(`^(\s+)(type|location|error): ?(.*)$`)
)

func newTAPParser(opts Options) *tapParser {
	return &tapParser{b: newBuilder(NodeTAP, opts), inError: -1}
}

// tapUnescape undoes TAP's escapes in a name ("\#", "\\").
func tapUnescape(s string) string {
	return strings.NewReplacer(`\#`, "#", `\\`, `\`).Replace(s)
}

func (t *tapParser) finish() {
	p := t.pending
	t.pending, t.inError = nil, -1
	if p == nil || p.suite {
		return
	}
	if t.b.add(p.name, p.outcome) && p.outcome == contract.TestFailed {
		file, line := "", 0
		if p.loc != "" {
			file, line = t.b.opts.locate(p.loc)
		}
		t.b.detail(p.name, file, line, p.msg.String())
	}
}

func (t *tapParser) line(line string) {
	if strings.HasPrefix(line, "TAP version ") && tapVersionRE.MatchString(line) {
		t.b.recognised = true
		return
	}
	if m := matchIf(t.b.recognised && strings.HasPrefix(line, "# "), tapTotalRE, line); m != nil {
		t.finish()
		v, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "pass":
			t.b.total(v, 0, 0)
		case "fail", "cancelled":
			t.b.total(0, v, 0)
		case "skipped", "todo":
			t.b.total(0, 0, v)
		}
		return
	}
	if m := matchIf(strings.Contains(line, "# Subtest: "), tapSubtestRE, line); m != nil {
		t.finish()
		level := len(m[1]) / 4
		if level > 64 {
			return
		}
		t.stack = append(t.stack[:min(level, len(t.stack))], tapUnescape(m[2]))
		return
	}
	if m := matchIf(t.b.recognised && strings.Contains(line, "ok "), tapResultRE, line); m != nil {
		t.finish()
		level := len(m[1]) / 4
		parts := append([]string{}, t.stack[:min(level, len(t.stack))]...)
		name := tapUnescape(m[3])
		t.pending = &tapResult{name: strings.Join(append(parts, name), " > "), outcome: contract.TestPassed}
		switch {
		case m[4] != "":
			t.pending.outcome = contract.TestSkipped
		case m[2] == "not ok":
			t.pending.outcome = contract.TestFailed
		}
		t.stack = t.stack[:min(level, len(t.stack))]
		return
	}
	if t.pending == nil {
		return
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if t.inError >= 0 {
		if indent > t.inError || strings.TrimSpace(line) == "" {
			t.pending.msg.add(strings.TrimSpace(line))
			return
		}
		t.inError = -1
	}
	m := tapKeyRE.FindStringSubmatch(line)
	if m == nil {
		return
	}
	val := strings.Trim(strings.TrimSpace(m[3]), `'"`)
	switch m[2] {
	case "type":
		t.pending.suite = val == "suite"
	case "location":
		t.pending.loc = val
	case "error":
		if val == "|-" || val == "|" || val == ">-" {
			t.inError = len(m[1])
		} else {
			t.pending.msg.add(val)
		}
	}
}

func (t *tapParser) summary() *contract.TestSummary {
	t.finish()
	return t.b.summary()
}

// specParser reads `node --test --test-reporter=spec` (node's reporter
// on a terminal). Counts come from its "ℹ pass N" lines (as for TAP);
// names from "✔ name (1ms)" (passed), "✖ name" (failed) and "﹣ name"
// (skipped) under the "▶ suite" lines that group them ("suite > test"); a
// "✔/✖" line that closes a group is no test. Its list of failing tests at
// the end names nothing again.
type specParser struct {
	b       *builder
	groups  []jestGroup
	failing string
	msg     msgBuf
	done    bool // past "✖ failing tests:"
}

var (
	specGroupRE  = regexp.MustCompile(`^(\s*)▶ (.+)$`)
	specResultRE = regexp.MustCompile(`^(\s*)(✔|✖|﹣) (.+?)(?: \(\d+(?:\.\d+)?m?s\))?(?: # (.*))?$`)
	specTotalRE  = regexp.MustCompile(`^ℹ (pass|fail|cancelled|skipped|todo) (\d+)$`)
)

func newSpecParser(opts Options) *specParser {
	s := &specParser{b: newBuilder(NodeSpec, opts)}
	s.b.needTotals = true
	return s
}

func (s *specParser) endFailure() {
	if s.failing != "" {
		msg := s.msg.String()
		file, line := s.b.opts.locate(msg)
		s.b.detail(s.failing, file, line, msg)
	}
	s.failing, s.msg = "", msgBuf{}
}

func (s *specParser) line(line string) {
	if m := matchIf(strings.HasPrefix(line, "ℹ "), specTotalRE, line); m != nil {
		s.endFailure()
		v, _ := strconv.Atoi(m[2])
		switch m[1] {
		case "pass":
			s.b.total(v, 0, 0)
		case "fail", "cancelled":
			s.b.total(0, v, 0)
		case "skipped", "todo":
			s.b.total(0, 0, v)
		}
		return
	}
	if line == "✖ failing tests:" {
		s.endFailure()
		s.done = true
		return
	}
	if s.done {
		return
	}
	if m := matchIf(hasMark(line), specGroupRE, line); m != nil {
		s.endFailure()
		indent := len(m[1])
		s.pop(indent)
		if len(s.groups) < 64 {
			s.groups = append(s.groups, jestGroup{indent, m[2]})
		}
		return
	}
	if m := matchIf(hasMark(line), specResultRE, line); m != nil {
		s.endFailure()
		indent := len(m[1])
		if n := len(s.groups); n > 0 && s.groups[n-1].indent == indent && s.groups[n-1].name == m[3] {
			s.groups = s.groups[:n-1] // the group's own end
			return
		}
		s.pop(indent)
		parts := make([]string, 0, len(s.groups)+1)
		for _, g := range s.groups {
			parts = append(parts, g.name)
		}
		name := strings.Join(append(parts, m[3]), " > ")
		o := contract.TestPassed
		switch {
		case m[2] == "﹣" || strings.HasPrefix(m[4], "SKIP") || strings.HasPrefix(m[4], "TODO"):
			o = contract.TestSkipped
		case m[2] == "✖":
			o = contract.TestFailed
		}
		if s.b.add(name, o) && o == contract.TestFailed {
			s.failing = name
		}
		return
	}
	if s.failing != "" {
		s.msg.add(strings.TrimSpace(line))
	}
}

func (s *specParser) pop(indent int) {
	for len(s.groups) > 0 && s.groups[len(s.groups)-1].indent >= indent {
		s.groups = s.groups[:len(s.groups)-1]
	}
}

func (s *specParser) summary() *contract.TestSummary {
	s.endFailure()
	return s.b.summary()
}
