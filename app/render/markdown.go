package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// quoteUntrusted renders untrusted text as a Markdown quote, shortened, with
// @-mentions defused so echoing a request cannot ping people.
func quoteUntrusted(text string, max int) string {
	if utf8.RuneCountInString(text) > max {
		runes := []rune(text)
		text = string(runes[:max]) + "…"
	}
	text = strings.ReplaceAll(text, "@", "@\u200b")
	text = strings.ReplaceAll(text, "<!--", "&lt;!--")
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// cell makes text safe inside one Markdown table cell: a pipe would end the
// cell (and any code span in it), a newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

// fence keeps untrusted output inside its code block, and keeps it from
// carrying one of our hidden markers into a bot comment.
func fence(s string) string {
	return strings.NewReplacer("```", "'''", "<!--", "<\u200b!--").Replace(s)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CleanLine makes untrusted text one plain line: hidden characters and
// line breaks out.
func CleanLine(s string) string {
	return strings.Join(strings.Fields(policy.CleanText(s)), " ")
}

// LineRange is "line 12" or "lines 10–12", for a review comment's place.
func LineRange(startLine, line int) string {
	if startLine > 0 && startLine != line {
		return fmt.Sprintf("lines %d–%d", startLine, line)
	}
	return fmt.Sprintf("line %d", line)
}

// WithIgnoredNote adds, to a reply to a comment with more than one command
// in it, that only the first was used.
func WithIgnoredNote(body string, ignored int, commandWord string) string {
	if ignored <= 0 {
		return body
	}
	noun := "command was"
	if ignored > 1 {
		noun = "commands were"
	}
	return body + fmt.Sprintf("\n\n_Only the first `%s` command in a comment is used; %d more %s ignored._", commandWord, ignored, noun)
}
