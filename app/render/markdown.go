package render

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// Untrusted text is text Inspect did not write: a request, an issue's
// title, the agent's answer, a command's argv or output, a test's name, an
// error that quotes a repository's file, a path, a label. On GitHub it is
// shown only inside code, which GitHub's documented rules leave inert: no
// closing keyword, issue reference or mention acts inside a fenced code
// block or a code span, and no image or HTML renders there. The text cannot
// end its code early: a fence is longer than any run of backticks in it,
// and a code span holds none. On top of that, what would act if the text
// were ever read outside code is defused (defuse), with visible full-width
// look-alikes, never hidden characters, so it stays readable (decision
// 0024). fakegithub.MarkdownEffects judges the result by GitHub's rules.

// untrustedBlock shows untrusted text whole, shortened to limit runes, in a
// fenced code block of its own: the returned block starts and ends with
// its fence lines, with no newline after the closing one, which must end
// its line (callers put a blank line or the end of the body after it).
func untrustedBlock(text string, limit int) string {
	text = policy.CleanText(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(text))
	if utf8.RuneCountInString(text) > limit {
		text = string([]rune(text)[:limit]) + "…"
	}
	text = defuse(strings.TrimRight(text, "\n"))
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return fence + "\n" + text + "\n" + fence
}

// untrustedSpan shows one untrusted value as a code span on one line:
// hidden characters and line breaks out, a backtick (which would end the
// span) shown as "'".
func untrustedSpan(s string) string {
	s = strings.ReplaceAll(CleanLine(s), "`", "'")
	if s == "" {
		return "` `"
	}
	return "`" + defuse(s) + "`"
}

// pathSpan is a path or a name as pathCodeSpan shows it (a code span of
// at most 120 runes, with no backtick), defused.
func pathSpan(p string) string { return defuse(pathCodeSpan(p)) }

var (
	// issueRef is a "#N" reference (also the end of "OWNER/REPO#N"): GitHub
	// links it when the number ends at a non-word character.
	issueRef = regexp.MustCompile(`#([0-9]+)\b`)
	// ghRef is GitHub's other short form, "GH-N".
	ghRef = regexp.MustCompile(`(?i)\b(GH)-([0-9]+)\b`)
	// issueURL is an issue's or pull request's URL, which closing keywords
	// take as a reference too.
	issueURL = regexp.MustCompile(`(?i)\b(https?)://([^\s/]+/[^\s/]+/[^\s/]+/(?:issues|pull)/[0-9]+)`)
	// mention is "@login" or "@org/team": an "@" after the start or a
	// non-word character, before a login's first character.
	mention = regexp.MustCompile(`(^|[^A-Za-z0-9_])@([A-Za-z0-9])`)
)

// defuse makes untrusted text inert even where it might be read as text,
// keeping it readable: an issue reference's "#" becomes "＃" (U+FF03) and
// "GH-N" "GH－N" (U+FF0D), an issue URL's "://" becomes "：//" (U+FF1A), a
// mention's "@" becomes "＠" (U+FF20), and "<!--" (an HTML comment, and
// the start of Inspect's own markers, which a replay looks for) becomes
// "＜!--" (U+FF1C). None of them is hidden (policy.IsHidden), and no
// closing keyword, reference or mention rule of GitHub's matches them.
func defuse(s string) string {
	s = issueRef.ReplaceAllString(s, "＃$1")
	s = ghRef.ReplaceAllString(s, "$1－$2")
	s = issueURL.ReplaceAllString(s, "$1：//$2")
	s = mention.ReplaceAllString(s, "$1＠$2")
	return strings.ReplaceAll(s, "<!--", "＜!--")
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// cell makes text safe inside one Markdown table cell: a pipe would end the
// cell (and any code span in it), a newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
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
