package testreport

import (
	"encoding/json"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// goJSONParser reads `go test -json` events (test2json). Lines that are
// not events are ignored. Every test and subtest counts, as go test's own
// events do; a package that failed to build counts as one failure named
// "<package> [build failed]", with the compiler's output as its message.
type goJSONParser struct {
	b       *builder
	outputs map[string]*strings.Builder // output of running tests, by package + name
	builds  map[string]*strings.Builder // build output, by import path
}

const maxRunningOutput = 256 // tests (and builds) whose output is kept at once

type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

func newGoJSONParser(opts Options) *goJSONParser {
	return &goJSONParser{b: newBuilder(GoTestJSON, opts), outputs: map[string]*strings.Builder{}, builds: map[string]*strings.Builder{}}
}

func decodeEvent(line string) (testEvent, bool) {
	line = strings.TrimSpace(line)
	var ev testEvent
	if len(line) == 0 || line[0] != '{' || json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
		return ev, false
	}
	return ev, ev.Package != "" || ev.Test != "" || ev.ImportPath != ""
}

func keep(m map[string]*strings.Builder, key, text string) {
	b := m[key]
	if b == nil {
		if len(m) >= maxRunningOutput {
			return
		}
		b = &strings.Builder{}
		m[key] = b
	}
	if b.Len() < contract.MaxTestMessageBytes {
		b.WriteString(text)
	}
}

func (g *goJSONParser) line(line string) {
	ev, ok := decodeEvent(line)
	if !ok {
		return
	}
	if ev.Action == "build-output" {
		keep(g.builds, ev.ImportPath, ev.Output)
		return
	}
	if ev.Test == "" {
		if ev.Action == "fail" && ev.FailedBuild != "" {
			name := ev.Package + " [build failed]"
			if g.b.add(name, contract.TestFailed) {
				out := ""
				if b := g.builds[ev.FailedBuild]; b != nil {
					out = b.String()
				}
				delete(g.builds, ev.FailedBuild)
				file, line := g.b.opts.locate(out)
				g.b.detail(name, file, line, out)
			}
		}
		if ev.Action == "start" || ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip" {
			g.b.recognised = true
		}
		return
	}
	key := ev.Package + "\x00" + ev.Test
	name := ev.Test
	if ev.Package != "" {
		name = ev.Package + "." + ev.Test
	}
	switch ev.Action {
	case "run":
		g.b.recognised = true
	case "output":
		keep(g.outputs, key, ev.Output)
	case "pass":
		g.b.add(name, contract.TestPassed)
		delete(g.outputs, key)
	case "skip":
		g.b.add(name, contract.TestSkipped)
		delete(g.outputs, key)
	case "fail":
		out := ""
		if b := g.outputs[key]; b != nil {
			out = b.String()
		}
		delete(g.outputs, key)
		if g.b.add(name, contract.TestFailed) {
			file, line := goFileLine(g.b.opts.Module, ev.Package, out)
			g.b.detail(name, file, line, goMessage(out))
		}
	}
}

func (g *goJSONParser) summary() *contract.TestSummary { return g.b.summary() }

// goMessage is a failing test's output without go test's own lines.
func goMessage(out string) string {
	var msg []string
	for l := range strings.SplitSeq(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		msg = append(msg, strings.TrimRight(l, " \t"))
	}
	return strings.Join(msg, "\n")
}

// goFileLineRE finds "    calc_test.go:12: message" in a test's output.
var goFileLineRE = regexp.MustCompile(`(?m)^\s+([A-Za-z0-9_.\-]+\.go):(\d+): `)

// goFileLine maps the first file:line in a test's output to a repository
// path through the root go.mod's module path; other modules' files stay
// unnamed.
func goFileLine(module, pkg, out string) (string, int) {
	m := goFileLineRE.FindStringSubmatch(out)
	if m == nil || module == "" {
		return "", 0
	}
	dir, ok := strings.CutPrefix(pkg, module)
	if !ok || (dir != "" && dir[0] != '/') {
		return "", 0
	}
	file := path.Join(strings.TrimPrefix(dir, "/"), m[1])
	n, _ := strconv.Atoi(m[2])
	return file, n
}

// Readable is a command's output tail for a person: go test -json events
// become the text they carry (what plain go test prints), so a failing
// run is never shown as raw JSON; any other output is returned as it is.
// A line that is not an event is kept.
func Readable(tail string) string {
	events, other := 0, 0
	for l := range strings.SplitSeq(tail, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, ok := decodeEvent(l); ok {
			events++
		} else {
			other++
		}
	}
	if events == 0 || events < other {
		return tail
	}
	var b strings.Builder
	for l := range strings.SplitSeq(tail, "\n") {
		ev, ok := decodeEvent(l)
		switch {
		case !ok:
			if strings.TrimSpace(l) != "" {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		case ev.Action == "output" || ev.Action == "build-output":
			b.WriteString(ev.Output)
		}
	}
	return b.String()
}
