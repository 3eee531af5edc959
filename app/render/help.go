package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/inspecthq/inspect/policy"
)

// The help, and the short replies to a comment policy.Parse answers with
// it (decision 0047).

// maxOptionRunes caps how much of an unknown option is echoed back.
const maxOptionRunes = 40

// HelpText is the help for every subcommand, one line each with an example.
// commandWord is expected to be valid (policy.ValidCommandWord). No line of
// the help starts with the command word, so posting it never triggers
// anything.
func HelpText(commandWord string) string {
	w := commandWord
	var b strings.Builder
	b.WriteString("**Inspect commands.** Write one at the start of a line in a new comment:\n\n")
	fmt.Fprintf(&b, "- `%s <instructions>` — start a coding-agent session; the instructions may continue on the next lines. Example: `%s fix the failing unit tests`\n", w, w)
	fmt.Fprintf(&b, "- `%s help` — show this help. Example: `%s help`\n", w, w)
	fmt.Fprintf(&b, "- `%s status` — show the state of the session on this issue or pull request. Example: `%s status`\n", w, w)
	fmt.Fprintf(&b, "- `%s cancel` — stop the queued or running session here. Example: `%s cancel`\n", w, w)
	fmt.Fprintf(&b, "- `%s retry` — run the last session here again, as a new session. Example: `%s retry`\n", w, w)
	b.WriteString("\nOnly the first command in a comment counts, and edited comments are not read again. " +
		"Starting, retrying and cancelling sessions needs write, maintain or admin access to the repository.\n")
	return b.String()
}

// HelpReply answers a comment that policy.Parse answered with the help
// (Kind Reply): the problem's short reason, if it has one, then the help.
// An unknown option is shown in a code span, sanitised and cut
// (optionSpanText).
func HelpReply(p policy.ParseProblem, commandWord string) string {
	switch p.Reason {
	case policy.ParseArguments:
		return fmt.Sprintf("`%s %s` takes no arguments.\n\n", commandWord, p.Subcommand) + HelpText(commandWord)
	case policy.ParseUnknownOption:
		return fmt.Sprintf("Unknown option `%s`: Inspect commands take no options.\n\n", optionSpanText(p.Option)) + HelpText(commandWord)
	}
	return HelpText(commandWord)
}

// optionSpanText makes untrusted option text safe inside a Markdown code
// span: no backticks, no control or invisible characters, at most
// maxOptionRunes runes (the last one an ellipsis when cut).
func optionSpanText(word string) string {
	var rs []rune
	for _, r := range word {
		if r == '`' || policy.IsHidden(r) || unicode.IsSpace(r) {
			continue
		}
		rs = append(rs, r)
	}
	if len(rs) > maxOptionRunes {
		rs = append(rs[:maxOptionRunes-1], '…')
	}
	return string(rs)
}
