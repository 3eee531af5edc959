package app

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/policy"
)

// Markers are hidden HTML comments in our comments. A replayed step looks
// for its marker before posting, so nothing is posted twice.
func sessionMarker(sessionID string) string { return "<!-- inspect:session=" + sessionID + " -->" }

// finalMarker marks the one reply of a session that ended without a
// progress comment (a refusal, a config error, giving up).
func finalMarker(sessionID string) string { return "<!-- inspect:final=" + sessionID + " -->" }
func commentMarker(commentID int64) string {
	return fmt.Sprintf("<!-- inspect:reply-to=%d -->", commentID)
}

func withIgnoredNote(body string, ignored int, commandWord string) string {
	if ignored <= 0 {
		return body
	}
	noun := "command was"
	if ignored > 1 {
		noun = "commands were"
	}
	return body + fmt.Sprintf("\n\n_Only the first `%s` command in a comment is used; %d more %s ignored._", commandWord, ignored, noun)
}

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

// runLink is where an attempt runs, for the progress comment: a Buildkite
// build's link and state, or nothing for the local executor.
type runLink struct {
	URL, State string
}

func progressBody(sess store.Session, commandWord string, run runLink) string {
	var b strings.Builder
	ti := infoOf(sess)
	if sess.TriggerKind == triggerRepair {
		fmt.Fprintf(&b, "🔧 **Inspect** is repairing the failing checks of this pull request for its author, @%s.\n\n", sess.RequesterLogin)
	} else {
		fmt.Fprintf(&b, "👀 **Inspect** is on it, @%s.\n\n", sess.RequesterLogin)
	}
	b.WriteString(quoteUntrusted(sess.Instructions, 500))
	b.WriteString("\n\n")
	b.WriteString(triggerNote(sess, ti, commandWord))
	fmt.Fprintf(&b, "| | |\n|---|---|\n| Status | %s |\n| Session | `%s` |\n", statusWord(sess), sess.ID)
	if sess.RetryOf != "" {
		fmt.Fprintf(&b, "| Retry of | `%s` |\n", sess.RetryOf)
	}
	if run.URL != "" {
		fmt.Fprintf(&b, "| Runs on | [%s](%s) |\n", cell(orWord(run.State, "build")), run.URL)
	}
	if sess.State == store.Queued && !sess.WaitingSince.IsZero() && ti.QueuedFor != "" {
		fmt.Fprintf(&b, "\n⏳ %s\n", ti.QueuedFor)
	} else if sess.State != store.Queued && !sess.WaitingSince.IsZero() {
		fmt.Fprintf(&b, "\nStarted %s, after waiting in the queue.\n", sess.AdmittedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if sess.State == store.Done && sess.Detail != "" {
		// Below the table, not in it: the detail may quote the agent, with
		// newlines, fences and pipes a table cell cannot hold.
		fmt.Fprintf(&b, "\n%s\n", sess.Detail)
	} else {
		fmt.Fprintf(&b, "\n`%s status` shows progress; `%s cancel` stops it.", commandWord, commandWord)
	}
	if sess.Truncated {
		fmt.Fprintf(&b, "\n\n_Your instructions were longer than %d KiB; only the first %d KiB were used._", policy.MaxInstructionBytes>>10, policy.MaxInstructionBytes>>10)
	}
	return withIgnoredNote(b.String(), sess.IgnoredCommands, commandWord)
}

func statusWord(sess store.Session) string {
	if sess.State == store.Done {
		return "done: " + string(sess.Outcome)
	}
	return string(sess.State)
}

func errorReply(sess store.Session) string {
	what := "Nothing was changed."
	if sess.CommitSHA != "" {
		// Giving up after the report began: say what exists, not "nothing".
		what = fmt.Sprintf("Commit `%.7s` was created", sess.CommitSHA)
		if sess.Branch != "" {
			what += fmt.Sprintf(" and pushed to `%s`", sess.Branch)
		}
		what += "; check it before relying on it."
	}
	return fmt.Sprintf("⚠️ Inspect stopped this session because of an internal error, @%s. %s "+
		"Operators can find the details under session `%s`; you can try again with a new comment.",
		sess.RequesterLogin, what, sess.ID)
}

func configErrorReply(sess store.Session, err error) string {
	return fmt.Sprintf("⚠️ @%s, Inspect cannot read this repository's configuration, so it did not start:\n\n```\n%s\n```\n\n"+
		"Fix the file on the default branch and comment again. See the configuration reference for the allowed keys.",
		sess.RequesterLogin, fence(err.Error()))
}

func waitingBody(sess store.Session, blocker, commandWord string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⏳ **Inspect** got your request, @%s, and will start it when session `%s` on this thread has finished.\n\n", sess.RequesterLogin, blocker)
	b.WriteString(quoteUntrusted(sess.Instructions, 500))
	fmt.Fprintf(&b, "\n\n| | |\n|---|---|\n| Status | waiting |\n| Session | `%s` |\n", sess.ID)
	fmt.Fprintf(&b, "\n`%s status` shows progress; `%s cancel` stops every session here.", commandWord, commandWord)
	return b.String()
}

// cell makes text safe inside one Markdown table cell: a pipe would end the
// cell (and any code span in it), a newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

func orWord(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// triggerNote says how a session came in, when it was not a plain comment:
// the label that removing cancels it, the review comment it answers, the
// repair budget it counts against.
func triggerNote(sess store.Session, ti triggerInfo, commandWord string) string {
	switch {
	case ti.Label != "":
		return fmt.Sprintf("Started by the %s label; removing the label cancels the session.\n\n", policy.PathCodeSpan(ti.Label))
	case ti.Review != nil:
		return fmt.Sprintf("Asked in a review comment on %s, %s.\n\n", policy.PathCodeSpan(ti.Review.Path), ti.Review.lines())
	case sess.TriggerKind == triggerRepair:
		var b strings.Builder
		if len(ti.Checks) > 0 {
			names := make([]string, len(ti.Checks))
			for i, n := range ti.Checks {
				names[i] = policy.PathCodeSpan(n)
			}
			fmt.Fprintf(&b, "Failing: %s. ", strings.Join(names, ", "))
		}
		d := policy.RepairDecision{Verdict: policy.RepairStart, Number: ti.RepairNumber, Last: ti.RepairLast}
		b.WriteString(policy.RepairNote(d, ti.RepairBudget, commandWord))
		b.WriteString("\n\n")
		return b.String()
	}
	return ""
}
