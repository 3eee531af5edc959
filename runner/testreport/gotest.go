package testreport

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// goPlainParser reads plain `go test` output. "--- PASS/FAIL/SKIP: Name"
// lines name tests (without -v only failures are printed); they come
// before their package's "ok"/"FAIL" line, which names the package, so
// they wait for it. "FAIL pkg [build failed]" counts as one failure, as in
// go test -json. Without -v (no "=== RUN" line seen) passing tests are
// not named or counted: FailuresOnly says so.
type goPlainParser struct {
	b       *builder
	verbose bool
	pending []goPending
	current string                   // the test whose output lines follow
	output  map[string]*goPendingMsg // messages by test name, for pending tests
	build   msgBuf                   // compiler output since the last "# pkg" line
}

type goPending struct {
	name    string
	outcome contract.TestOutcome
}

type goPendingMsg struct {
	msg  msgBuf
	file string // the first "x_test.go:12: " in its output
	line int
}

var (
	goResultRE  = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S.*?) \(\d+(?:\.\d+)?s\)$`)
	goRunRE     = regexp.MustCompile(`^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S.*)$`)
	goPackageRE = regexp.MustCompile(`^(ok|FAIL)\s*\t(\S+)(?:\t(?:\d+(?:\.\d+)?s|\(cached\))| \[(?:build|setup) failed\])`)
	goBuildRE   = regexp.MustCompile(`^FAIL\s*\t(\S+) \[(build|setup) failed\]`)
	goMsgRE     = regexp.MustCompile(`^\s+([A-Za-z0-9_.\-]+\.go):(\d+): `)
)

func newGoPlainParser(opts Options) *goPlainParser {
	return &goPlainParser{b: newBuilder(GoTest, opts), output: map[string]*goPendingMsg{}}
}

func (g *goPlainParser) line(line string) {
	if m := matchIf(strings.HasPrefix(line, "=== "), goRunRE, line); m != nil {
		g.verbose = true
		g.current = m[1]
		return
	}
	if m := matchIf(strings.Contains(line, "--- "), goResultRE, line); m != nil {
		g.b.recognised = true
		o := contract.TestPassed
		switch m[1] {
		case "FAIL":
			o = contract.TestFailed
		case "SKIP":
			o = contract.TestSkipped
		}
		g.current = m[2]
		if len(g.pending) >= maxPending {
			g.flush("") // a package line never came: name them as they are
		}
		g.pending = append(g.pending, goPending{name: m[2], outcome: o})
		return
	}
	if m := matchIf(strings.HasPrefix(line, "FAIL"), goBuildRE, line); m != nil {
		g.flush(m[1])
		name := m[1] + " [" + m[2] + " failed]"
		if g.b.add(name, contract.TestFailed) {
			msg := g.build.String()
			file, ln := g.b.opts.locate(msg)
			g.b.detail(name, file, ln, msg)
		}
		g.build = msgBuf{}
		return
	}
	if m := matchIf(strings.HasPrefix(line, "ok") || strings.HasPrefix(line, "FAIL"), goPackageRE, line); m != nil {
		g.b.recognised = true
		g.flush(m[2])
		g.build = msgBuf{}
		return
	}
	if len(line) > 2 && line[0] == '#' && line[1] == ' ' {
		g.build = msgBuf{} // "# pkg": the compiler's output follows
		return
	}
	if m := matchIf(g.current != "" && strings.Contains(line, ".go:"), goMsgRE, line); m != nil {
		p := g.output[g.current]
		if p == nil {
			if len(g.output) >= maxRunningOutput {
				return
			}
			p = &goPendingMsg{}
			g.output[g.current] = p
		}
		if p.file == "" {
			p.file = m[1]
			p.line, _ = strconv.Atoi(m[2])
		}
		p.msg.add(line)
		return
	}
	g.build.add(line)
}

// flush names the pending tests as pkg's.
func (g *goPlainParser) flush(pkg string) {
	for _, p := range g.pending {
		name := p.name
		if pkg != "" {
			name = pkg + "." + p.name
		}
		if !g.b.add(name, p.outcome) || p.outcome != contract.TestFailed {
			continue
		}
		if o := g.output[p.name]; o != nil {
			file, line := "", 0
			if o.file != "" {
				file, line = goFileLine(g.b.opts.Module, pkg, "\t"+o.file+":"+strconv.Itoa(o.line)+": ")
			}
			g.b.detail(name, file, line, o.msg.String())
		}
	}
	g.pending = g.pending[:0]
	clear(g.output)
	g.current = ""
}

func (g *goPlainParser) summary() *contract.TestSummary {
	g.flush("")
	s := g.b.summary()
	if s != nil && !g.verbose {
		s.FailuresOnly = true
	}
	return s
}
