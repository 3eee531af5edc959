// Package policy holds Inspect's pure decisions: the comment command
// grammar, who may trigger a session, and the other rules the app applies.
// Nothing here does I/O, reads a clock or keeps state between calls. A
// decision is a typed reason with the facts behind it; the words said to
// people are app/render's (decision 0047).
package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what Parse found in a comment.
type Kind int

const (
	// Ignore: the comment holds no command; do nothing, say nothing.
	Ignore Kind = iota
	// Reply: answer with the help, after a short reason when
	// Parsed.Problem has one (app/render.HelpReply writes the words).
	Reply
	// Command: act on Parsed.Sub.
	Command
)

func (k Kind) String() string {
	switch k {
	case Ignore:
		return "ignore"
	case Reply:
		return "reply"
	case Command:
		return "command"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Subcommand is what a command asks for.
type Subcommand string

const (
	Run    Subcommand = "run" // start a session with Parsed.Instructions
	Help   Subcommand = "help"
	Status Subcommand = "status"
	Cancel Subcommand = "cancel"
	Retry  Subcommand = "retry"
	// Stop ends a running session's agent turn; the session goes on to
	// verify and report with what the workspace holds (decision 0071).
	// Only "stop" alone on the command line is Stop: with more words it is
	// a request like any other ("stop using the old API").
	Stop Subcommand = "stop"
)

// MaxInstructionBytes caps Parsed.Instructions; longer text is cut on a
// rune boundary and Parsed.Truncated is set.
const MaxInstructionBytes = 16 << 10

// Parsed is the result of Parse. A trigger stores it in its work payload
// (session.Trigger.Command): the JSON keys are a stored format (decision
// 0044), and Problem is never stored.
type Parsed struct {
	Kind Kind
	// Sub is set for Command (Run, Status, Cancel or Retry) and is Help for
	// every Reply: each reply carries the help text, so callers authorize
	// it as help.
	Sub Subcommand
	// Instructions is set for Run: the rest of the command line and the
	// lines after it, up to the next command line, with HTML comments and
	// invisible characters removed, trimmed, and at most
	// MaxInstructionBytes long. It is never empty for Run.
	Instructions string
	// Truncated reports that Instructions was cut to MaxInstructionBytes.
	Truncated bool
	// LegacyReply is where Parse put the words of a Reply before decision
	// 0047, under the stored key "Reply". Nothing sets it or reads it now:
	// a Reply is answered when it is accepted and never stored, and its
	// words are app/render's, from Problem. It stays so that triggers
	// stored before decode strictly and encode back byte for byte.
	LegacyReply string `json:"Reply"`
	// Ignored counts the further command lines in the comment; only the
	// first command counts.
	Ignored int
	// Problem is why a Reply answers with the help; the zero value when
	// the help was asked for (or nothing followed the command word).
	Problem ParseProblem `json:"-"`
}

// ParseReason is why a comment got the help instead of a command.
type ParseReason string

const (
	// ParseArguments: a subcommand that takes no arguments got some
	// (ParseProblem.Subcommand).
	ParseArguments ParseReason = "arguments"
	// ParseUnknownOption: the first word is an option
	// (ParseProblem.Option), and commands take none.
	ParseUnknownOption ParseReason = "unknown_option"
)

// ParseProblem is what Parse found wrong with a command, for the reply.
type ParseProblem struct {
	Reason ParseReason // "" for none
	// Subcommand is the subcommand given arguments (ParseArguments).
	Subcommand Subcommand
	// Option is the option as written, hidden characters removed
	// (ParseUnknownOption). It is untrusted text: the renderer shows it
	// in a code span, sanitised and cut.
	Option string
}

// Parse finds the command in the body of a newly created comment.
//
// A command line starts with up to three spaces, then commandWord exactly,
// then a space, a tab or the end of the line. The match is byte-exact and
// case-sensitive ("/Inspect" is ignored): nothing is normalised, so a
// look-alike (Cyrillic і, fullwidth ／), a zero-width character or a bidi
// control in or before the word makes the line an ordinary line. Tabs, or
// four or more spaces, before the word make it a Markdown code block, which
// never counts.
//
// Lines GitHub does not show as text at the start of a line never count:
// lines in fenced code blocks, quoted lines, lines inside HTML comments and
// other hidden HTML (see markdown.go), and the line after "[label]:".
//
// After the command word:
//   - nothing (on that line or after), or nothing but hidden text: help.
//   - "help" as the first word: help; any words after it are ignored.
//   - "status", "cancel" or "retry" as the first word: that subcommand.
//     They take no arguments, so more words on the same line get a short
//     reply and help instead of a guess; lines after the command line are
//     taken as commentary and ignored. The subcommand word matches ignoring
//     ASCII case ("/inspect Retry" retries rather than starting a session
//     with the instructions "Retry").
//   - "stop" alone on the command line: Stop (lines after it are
//     commentary). "stop" with more words on its line is a Run: the
//     words are a request ("stop using the old API").
//   - a first word of dashes (-, –, —, …) and then a letter: "unknown
//     option" and help.
//   - anything else: Run. The instructions are the rest of the command line
//     plus the following lines, so a bare command word on its own line
//     followed by a multi-line request runs that request. Subcommands and
//     options are recognised on the command line only.
//
// Only the first command line counts; Ignored counts the others, and the
// instructions stop where the next command line starts.
//
// An invalid commandWord (see ValidCommandWord) matches nothing.
func Parse(body string, commandWord string) Parsed {
	if ValidCommandWord(commandWord) != nil {
		return Parsed{}
	}
	if !strings.Contains(body, commandWord) {
		return Parsed{}
	}
	body = normalizeBody(body)
	s := newScanner(body, commandWord)
	cmds := s.run()
	if len(cmds) == 0 {
		return Parsed{}
	}
	first := cmds[0]
	ignored := len(cmds) - 1
	line := CleanText(s.visible(first.rest, s.lineEnd(first.line)))
	word, more := firstWord(line)
	if asciiEqualFold(word, string(Stop)) && more == "" {
		return Parsed{Kind: Command, Sub: Stop, Ignored: ignored}
	}
	if sub, ok := subcommandOf(word); ok {
		switch {
		case sub == Help:
			return Parsed{Kind: Reply, Sub: Help, Ignored: ignored}
		case more != "":
			return Parsed{Kind: Reply, Sub: Help, Ignored: ignored, Problem: ParseProblem{Reason: ParseArguments, Subcommand: sub}}
		default:
			return Parsed{Kind: Command, Sub: sub, Ignored: ignored}
		}
	}
	if isOption(word) {
		return Parsed{Kind: Reply, Sub: Help, Ignored: ignored, Problem: ParseProblem{Reason: ParseUnknownOption, Option: word}}
	}

	end := len(body)
	if len(cmds) > 1 {
		end = s.starts[cmds[1].line] - 1 // up to the newline before it
	}
	instr, truncated := capBytes(strings.TrimSpace(CleanText(s.visible(first.rest, end))), MaxInstructionBytes)
	if instr == "" {
		return Parsed{Kind: Reply, Sub: Help, Ignored: ignored}
	}
	return Parsed{Kind: Command, Sub: Run, Instructions: instr, Truncated: truncated, Ignored: ignored}
}

// ValidCommandWord checks a configured command word: "/" and then 2 to 32
// characters from [a-z0-9-].
func ValidCommandWord(w string) error {
	name, ok := strings.CutPrefix(w, "/")
	if !ok {
		return fmt.Errorf("command word %q must start with \"/\"", w)
	}
	if n := utf8.RuneCountInString(name); n < 2 || n > 32 {
		return fmt.Errorf("command word %q must have 2 to 32 characters after \"/\", not %d", w, n)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("command word %q may only use a-z, 0-9 and \"-\" after \"/\", not %q", w, r)
		}
	}
	return nil
}

// normalizeBody makes the body valid UTF-8 with LF line endings. A lone CR
// ends a line, as in CommonMark.
func normalizeBody(body string) string {
	if !utf8.ValidString(body) {
		body = strings.ToValidUTF8(body, "\uFFFD")
	}
	if strings.IndexByte(body, '\r') >= 0 {
		body = strings.ReplaceAll(body, "\r\n", "\n")
		body = strings.ReplaceAll(body, "\r", "\n")
	}
	return body
}

// subcommandOf recognises a subcommand word, ignoring ASCII case only.
func subcommandOf(word string) (Subcommand, bool) {
	for _, sub := range []Subcommand{Help, Status, Cancel, Retry} {
		if asciiEqualFold(word, string(sub)) {
			return sub, true
		}
	}
	return "", false
}

// firstWord splits off the first whitespace-separated word of s; more is
// what follows it, trimmed.
func firstWord(s string) (word, more string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// isDash reports whether r is a hyphen or dash that people (or their
// keyboards' autocorrect) put in front of an option.
func isDash(r rune) bool {
	switch r {
	case '-', '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\uFE58', '\uFE63', '\uFF0D':
		return true
	}
	return false
}

// isOption reports whether word looks like a command-line option: one or
// more dashes and then a letter ("--x", "-v", "—force"). A lone dash, only
// dashes, or a dash before a digit ("-1 is returned") are ordinary text.
func isOption(word string) bool {
	rest := strings.TrimLeftFunc(word, isDash)
	if rest == word || rest == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return unicode.IsLetter(r)
}

// capBytes cuts s to at most max bytes on a rune boundary, then trims
// trailing space.
func capBytes(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	return strings.TrimRightFunc(TruncateUTF8(s, max), unicode.IsSpace), true
}

// ParseRequest reads a request typed into the dashboard's start form: the
// whole text is a run's instructions (no command word, and no subcommands:
// "status" there is a request about status), with HTML comments and
// invisible characters removed and cut at MaxInstructionBytes, as a
// comment's are. Empty text is a Reply (with the help, had it come from a
// comment).
func ParseRequest(text string) Parsed {
	body := normalizeBody(text)
	// A word the text cannot hold: the scan only finds its HTML comments.
	s := newScanner(body, "\x00")
	s.run()
	instr, truncated := capBytes(strings.TrimSpace(CleanText(s.visible(0, len(body)))), MaxInstructionBytes)
	if instr == "" {
		return Parsed{Kind: Reply, Sub: Help}
	}
	return Parsed{Kind: Command, Sub: Run, Instructions: instr, Truncated: truncated}
}
