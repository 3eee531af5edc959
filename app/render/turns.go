package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// The words about a session's turns (decision 0071): the replies to a
// message that could not steer, the list of turns in the PR body, and the
// commit's trailers for everyone who asked.

// TurnReaction is the reaction on a comment that became a turn of a
// running session: distinct from the 👀 of a request being looked at, it
// says the message went on to the agent that is already working.
const TurnReaction = "rocket"

// steerSubcommand marks a refusal of a message to a running session, for
// its words only: policy decides it as a run (decision 0071).
const steerSubcommand policy.Subcommand = "steer"

// SteerRefusal is Refusal for a message to a running session: the same
// decision, said of a message rather than of a new session.
func SteerRefusal(d policy.Decision) string {
	if d.Subcommand == policy.Run {
		d.Subcommand = steerSubcommand
	}
	return Refusal(d)
}

// TooManyTurnsReply refuses a message past the session's turns.
func TooManyTurnsReply(sess store.Session, max int, commandWord string) string {
	return fmt.Sprintf("Session `%s` has taken its %d messages; this one was not sent to the agent. Ask again with `%s <instructions>` once it has ended.",
		sess.ID, max, commandWord)
}

// NothingToStopReply answers `stop` when no session runs on the thread.
func NothingToStopReply() string {
	return "Nothing to stop: no Inspect session is running on this thread."
}

// SteeringOffReply answers `stop` in a repository whose sessions take no
// messages (`steer: off`).
func SteeringOffReply(commandWord string) string {
	return fmt.Sprintf("This repository's sessions take no messages while they run (`steer: off`), so there is no turn to stop. Use `%s cancel` to end the session.", commandWord)
}

// maxTurnRows caps the turns a PR body lists.
const maxTurnRows = 30

// maxTurnMessageRunes caps a turn's message where it is listed.
const maxTurnMessageRunes = 200

// TurnsSection lists a session's turns for its pull request's body: who
// asked what, when, and what came of it. Every message is untrusted text,
// shown in a code span (no mention, reference, closing keyword or image
// acts); logins are written without "@" so the list pings nobody.
func TurnsSection(turns []session.Turn) string {
	if len(turns) < 2 {
		return "" // the request alone: the body says it already
	}
	var b strings.Builder
	b.WriteString("### Turns\n\n")
	if len(turns) > maxTurnRows {
		// Held to GitHub's body limit: the newest, the page has them all.
		fmt.Fprintf(&b, "_The newest %d of %d turns; the session's page lists them all._\n\n", maxTurnRows, len(turns))
		turns = turns[len(turns)-maxTurnRows:]
	}
	b.WriteString("| # | Who | When | Asked | What came of it |\n|---|---|---|---|---|\n")
	for _, t := range turns {
		asked := "stop"
		if !t.Stop {
			msg := t.Message
			if r := []rune(msg); len(r) > maxTurnMessageRunes {
				msg = string(r[:maxTurnMessageRunes]) + "…"
			}
			asked = untrustedSpan(msg)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", t.Seq, cell(defuse(t.AuthorLogin)), t.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"),
			cell(asked), cell(TurnOutcome(t)))
	}
	return b.String()
}

// TurnOutcome says what came of a turn, in a few words.
func TurnOutcome(t session.Turn) string {
	switch t.State {
	case session.TurnPending:
		return "waiting for the agent"
	case session.TurnDelivered:
		return "with the agent"
	}
	switch t.Outcome {
	case "":
		return "done"
	case store.TurnUndelivered:
		return "not delivered: the session ended first"
	}
	return strings.ReplaceAll(t.Outcome, "_", " ")
}

// CoAuthorTrailers are the commit's Co-authored-by trailers: one for each
// author of a turn, in the order they first spoke (GitHub credits each).
func CoAuthorTrailers(authors []session.Turn) string {
	var b strings.Builder
	for _, a := range authors {
		fmt.Fprintf(&b, "Co-authored-by: %s <%d+%s@users.noreply.github.com>\n", a.AuthorLogin, a.AuthorID, a.AuthorLogin)
	}
	return b.String()
}

// turnsHeading starts TurnsSection.
const turnsHeading = "### Turns\n\n"

// WithTurns is a pull request's body with its turns list replaced by
// section (TurnsSection): a continuation that pushes onto the pull
// request an earlier session opened keeps its list current (decision
// 0072). The list is the body's last "### Turns" heading and the note and
// table rows after it, each a line of ours (a message is one cell of a
// row); a body without one gets section at its end. A person's edits
// elsewhere in the body are kept.
func WithTurns(body, section string) string {
	if section == "" {
		return body
	}
	body = strings.ReplaceAll(body, "\r\n", "\n") // as GitHub keeps a body edited in the browser
	i := strings.LastIndex(body, "\n"+turnsHeading)
	if i < 0 {
		return strings.TrimRight(body, "\n") + "\n\n" + section
	}
	start := i + 1
	rest, used := body[start+len(turnsHeading):], 0
	for rest != "" {
		line, after, found := strings.Cut(rest, "\n")
		blankBeforeTable := line == "" && strings.HasPrefix(after, "|")
		if !strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "_The newest ") && !blankBeforeTable {
			break
		}
		used += len(line)
		if found {
			used++
		}
		rest = after
	}
	return body[:start] + section + body[start+len(turnsHeading)+used:]
}

// AgentStartedFresh says, as plain text, that a continuation's agent
// started a new conversation instead of resuming its own, and why (the
// evidence's contract.AgentStateNote.Fresh, decision 0072: the state was
// gone, too old, too big or another CLI's); "" when it resumed or had
// nothing to resume. The page shows it as text; the PR body as
// AgentStartedFreshMarkdown.
func AgentStartedFresh(n *contract.AgentStateNote) string {
	if n == nil || n.Fresh == "" {
		return ""
	}
	return freshSentence(CleanLine(n.Fresh))
}

// AgentStartedFreshMarkdown is AgentStartedFresh for a PR body: the
// reason can name a file of the agent's own state, untrusted text, so it
// is a code span.
func AgentStartedFreshMarkdown(n *contract.AgentStateNote) string {
	if n == nil || n.Fresh == "" {
		return ""
	}
	return freshSentence(untrustedSpan(n.Fresh))
}

func freshSentence(why string) string {
	return "The agent started a new conversation, not its own earlier one (" + why + "): it was told the earlier turns as text."
}
