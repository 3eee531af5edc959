package testreport

import (
	"bytes"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// lineParser reads one runner's output, a line at a time (without its
// newline, terminal escapes removed), and gives what it recognised.
type lineParser interface {
	line(s string)
	summary() *contract.TestSummary
}

// Scanner reads a command's output as it streams and parses it for every
// runner at once. It is an io.Writer; it is not safe for concurrent use
// (the caller's writer serialises writes).
type Scanner struct {
	buf     []byte
	long    bool // the current line exceeded maxLine and is skipped
	goJSON  *goJSONParser
	goPlain *goPlainParser
	others  []lineParser
}

// NewScanner returns a Scanner for one command's output.
func NewScanner(opts Options) *Scanner {
	return &Scanner{
		goJSON:  newGoJSONParser(opts),
		goPlain: newGoPlainParser(opts),
		others:  []lineParser{newPytestParser(opts), newJestParser(opts), newTAPParser(opts), newSpecParser(opts)},
	}
}

// Write never fails.
func (s *Scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.long {
			s.buf = append(s.buf, chunk...)
			if len(s.buf) > maxLine {
				s.buf, s.long = s.buf[:0], true
			}
		}
		if i < 0 {
			break
		}
		if !s.long {
			s.feed(s.buf)
		}
		s.buf, s.long = s.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (s *Scanner) feed(raw []byte) {
	line := StripTerminal(strings.TrimRight(string(raw), "\r"))
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:] // a progress line rewritten in place: its last state
	}
	s.goJSON.line(line)
	s.goPlain.line(line)
	for _, p := range s.others {
		p.line(line)
	}
}

// Summaries ends the output (a last line without a newline counts) and
// returns one summary per runner recognised, in a fixed order. go test
// -json output is never also read as plain go test output.
func (s *Scanner) Summaries() []*contract.TestSummary {
	if len(s.buf) > 0 && !s.long {
		s.feed(s.buf)
	}
	s.buf, s.long = nil, false
	var out []*contract.TestSummary
	if j := s.goJSON.summary(); j != nil {
		out = append(out, j)
	} else if p := s.goPlain.summary(); p != nil {
		out = append(out, p)
	}
	for _, p := range s.others {
		if sum := p.summary(); sum != nil {
			out = append(out, sum)
		}
	}
	return out
}

// Parse reads a whole output (or its tail) at once: a pure function of
// out and opts.
func Parse(out []byte, opts Options) []*contract.TestSummary {
	s := NewScanner(opts)
	_, _ = s.Write(out) // never fails
	return s.Summaries()
}
