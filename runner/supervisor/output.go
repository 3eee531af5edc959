package supervisor

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// tailBuffer keeps the last max bytes written to it. It keeps more than
// the output tail evidence will hold, so that redaction sees a secret whole
// before the tail is cut (contract.TailOutput's rule), and so that only a
// secret straddling the far start of the window can be cut.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped bool
	tests   *goTestParser // optional: also parse go test -json lines
}

func newTailBuffer(keep int64) *tailBuffer {
	return &tailBuffer{max: int(max(4*keep, 1<<20))}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tests != nil {
		t.tests.write(p)
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// tail redacts what was kept and returns its last keep bytes for
// CommandResult.OutputTail.
func (t *tailBuffer) tail(red *contract.Redactor, keep int64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tail, cut := contract.TailOutput(red.RedactBytes(t.buf), int(keep))
	return tail, cut || t.dropped
}

// goTestParser reads `go test -json` events from a verify command's output,
// line by line as it streams, and counts test results. Lines that are not
// test events (plain output, other tools) are ignored, so it can watch
// every verify command.
type goTestParser struct {
	line    []byte
	long    bool // the current line exceeded maxLine and is skipped
	seen    bool // at least one test event was read
	sum     contract.TestSummary
	outputs map[string]*strings.Builder // output of running tests, by package + name
	module  string                      // the root go.mod's module path, for file names
}

const (
	maxEventLine     = 1 << 20
	maxTestOutput    = contract.MaxTestMessageBytes
	maxRunningOutput = 256 // tests whose output is kept at once
)

type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func newGoTestParser(module string) *goTestParser {
	return &goTestParser{outputs: map[string]*strings.Builder{}, module: module}
}

func (g *goTestParser) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !g.long {
			g.line = append(g.line, chunk...)
			if len(g.line) > maxEventLine {
				g.line, g.long = g.line[:0], true
			}
		}
		if i < 0 {
			return
		}
		if !g.long {
			g.event(g.line)
		}
		g.line, g.long = g.line[:0], false
		p = p[i+1:]
	}
}

func (g *goTestParser) event(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var ev testEvent
	if json.Unmarshal(line, &ev) != nil || ev.Action == "" || ev.Test == "" {
		return
	}
	key := ev.Package + "\x00" + ev.Test
	switch ev.Action {
	case "run":
		g.seen = true
	case "output":
		b := g.outputs[key]
		if b == nil {
			if len(g.outputs) >= maxRunningOutput {
				return
			}
			b = &strings.Builder{}
			g.outputs[key] = b
		}
		if b.Len() < maxTestOutput {
			b.WriteString(ev.Output)
		}
	case "pass":
		g.seen = true
		g.sum.Passed++
		delete(g.outputs, key)
	case "skip":
		g.seen = true
		g.sum.Skipped++
		delete(g.outputs, key)
	case "fail":
		g.seen = true
		g.sum.Failed++
		out := ""
		if b := g.outputs[key]; b != nil {
			out = b.String()
		}
		delete(g.outputs, key)
		if len(g.sum.Failures) < contract.MaxTestFailures {
			g.sum.Failures = append(g.sum.Failures, g.failure(ev, out))
		}
	}
}

// fileLine finds "    calc_test.go:12: message" in a test's output.
var fileLine = regexp.MustCompile(`(?m)^\s+([A-Za-z0-9_.\-]+\.go):(\d+): `)

func (g *goTestParser) failure(ev testEvent, out string) contract.TestFailure {
	f := contract.TestFailure{Name: cleanLine(ev.Package + "." + ev.Test)}
	if ev.Package == "" {
		f.Name = cleanLine(ev.Test)
	}
	var msg []string
	for l := range strings.SplitSeq(out, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		msg = append(msg, strings.TrimRight(l, " \t"))
	}
	f.Message = cleanText(strings.Join(msg, "\n"), contract.MaxTestMessageBytes)
	if m := fileLine.FindStringSubmatch(out); m != nil && g.module != "" {
		// Map the package to a repository path through the root go.mod's
		// module path; other modules' files stay unnamed.
		dir, ok := strings.CutPrefix(ev.Package, g.module)
		if ok && (dir == "" || dir[0] == '/') {
			file := path.Join(strings.TrimPrefix(dir, "/"), m[1])
			if contract.ValidatePath(file) == nil {
				f.File = file
				f.Line, _ = strconv.Atoi(m[2])
			}
		}
	}
	return f
}

// summary is the tests seen, or nil when there were none.
func (g *goTestParser) summary() *contract.TestSummary {
	if !g.seen {
		return nil
	}
	s := g.sum
	return &s
}

// moduleLine reads the module path from a go.mod.
var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?\s*$`)

// cleanLine makes untrusted text a single line without control or
// invisible characters.
func cleanLine(s string) string {
	return contract.CleanProgressMessage(s)
}

// cleanText makes untrusted text valid for a text field: valid UTF-8, no
// hidden characters (policy.IsHidden, NUL among them), at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = policy.CleanText(s)
	return policy.TruncateUTF8(s, max)
}
