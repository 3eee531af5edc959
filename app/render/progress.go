package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// RunLink is where an attempt runs, for the progress comment: a Buildkite
// build's link, its state as the executor reports it and the attempt's
// number, or nothing (no URL) for the local executor.
type RunLink struct {
	URL, State string
	Attempt    int
}

// label is the link's text: "build", its state, and which attempt it is
// when it is not the first.
func (r RunLink) label() string {
	label := "build"
	if r.State != "" {
		label += " (" + r.State + ")"
	}
	if r.Attempt > 1 {
		label += fmt.Sprintf(", attempt %d", r.Attempt)
	}
	return label
}

// Origin is what a session's way in adds to its progress comment: the
// fields of the session's stored trigger info that the comment shows.
type Origin struct {
	// Repair says the session is a repair of failing checks, which the
	// comment addresses to the pull request's author.
	Repair bool
	// Label is the label that started a label session.
	Label string
	// Review is the review comment a review-comment session answers.
	Review *ReviewSpot
	// Checks are the failing checks a repair session repairs.
	Checks []string
	// RepairNumber, RepairBudget and RepairLast are the repair's place in
	// its pull request's budget.
	RepairNumber, RepairBudget int
	RepairLast                 bool
	// QueuedFor is the queue's line while the session waits for capacity.
	QueuedFor string
	// SignIn is the dashboard's sign-in link, for a requester who has not
	// signed in (their PRs are then the App's, not theirs); "" for none.
	SignIn string
}

// ReviewSpot is where a review comment sits in the diff.
type ReviewSpot struct {
	Path            string
	Line, StartLine int
}

// ProgressBody is the session's progress comment, edited as it moves on.
func ProgressBody(sess store.Session, origin Origin, commandWord string, run RunLink) string {
	var b strings.Builder
	if origin.Repair {
		fmt.Fprintf(&b, "🔧 **Inspect** is repairing the failing checks of this pull request for its author, @%s.\n\n", sess.RequesterLogin)
	} else {
		fmt.Fprintf(&b, "👀 **Inspect** is on it, @%s.\n\n", sess.RequesterLogin)
	}
	b.WriteString(untrustedBlock(sess.Instructions, 500))
	b.WriteString("\n\n")
	b.WriteString(triggerNote(origin, commandWord))
	fmt.Fprintf(&b, "| | |\n|---|---|\n| Status | %s |\n| Session | `%s` |\n", StatusWord(sess), sess.ID)
	if sess.RetryOf != "" {
		fmt.Fprintf(&b, "| Retry of | `%s` |\n", sess.RetryOf)
	}
	if run.URL != "" {
		fmt.Fprintf(&b, "| Runs on | [%s](%s) |\n", cell(run.label()), run.URL)
	}
	if sess.State() == session.Queued && !sess.WaitingSince.IsZero() && origin.QueuedFor != "" {
		fmt.Fprintf(&b, "\n⏳ %s\n", origin.QueuedFor)
	} else if sess.State() != session.Queued && !sess.WaitingSince.IsZero() {
		fmt.Fprintf(&b, "\nStarted %s, after waiting in the queue.\n", sess.AdmittedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if sess.State() == session.Done && sess.Detail != "" {
		// Below the table, not in it: the detail may quote the agent, with
		// newlines, fences and pipes a table cell cannot hold.
		fmt.Fprintf(&b, "\n%s\n", sess.Detail)
	} else {
		fmt.Fprintf(&b, "\n`%s status` shows progress; `%s cancel` stops it.", commandWord, commandWord)
	}
	if origin.SignIn != "" {
		fmt.Fprintf(&b, "\n\n[Sign in to Inspect](%s) to have the pull requests you ask for opened as you.", origin.SignIn)
	}
	if sess.Truncated {
		fmt.Fprintf(&b, "\n\n_Your instructions were longer than %d KiB; only the first %d KiB were used._", policy.MaxInstructionBytes>>10, policy.MaxInstructionBytes>>10)
	}
	return WithIgnoredNote(b.String(), sess.IgnoredCommands, commandWord)
}

// StatusWord is a session's state in a word or two: its state, or "done:"
// and its outcome, with what a reviewer must see of its reason when the
// verdict over the comparison with the base gave one (decision 0081). It
// is the check run's title once the session is done.
func StatusWord(sess store.Session) string {
	if sess.State() == session.Done {
		return "done: " + string(sess.Outcome) + reasonNote(sess.Reason)
	}
	return string(sess.State())
}

// reasonNote is the few words StatusWord adds for a verdict's reason.
func reasonNote(reason string) string {
	switch reason {
	case verdict.ReasonNotReproduced:
		return ", not reproduced"
	case verdict.ReasonNotFixed:
		return ", not fixed (a failing test removed or skipped)"
	case verdict.ReasonFailsWhereBaseFailed:
		return ", fails only where the base failed"
	}
	return ""
}

// WaitingBody is the progress comment of a session that waits for an
// earlier one (blocker) on the same thread.
func WaitingBody(sess store.Session, blocker, commandWord string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⏳ **Inspect** got your request, @%s, and will start it when session `%s` on this thread has finished.\n\n", sess.RequesterLogin, blocker)
	b.WriteString(untrustedBlock(sess.Instructions, 500))
	fmt.Fprintf(&b, "\n\n| | |\n|---|---|\n| Status | waiting |\n| Session | `%s` |\n", sess.ID)
	fmt.Fprintf(&b, "\n`%s status` shows progress; `%s cancel` stops every session here.", commandWord, commandWord)
	return b.String()
}

// triggerNote says how a session came in, when it was not a plain comment:
// the label that removing cancels it, the review comment it answers, the
// repair budget it counts against.
func triggerNote(origin Origin, commandWord string) string {
	switch {
	case origin.Label != "":
		return fmt.Sprintf("Started by the %s label; removing the label cancels the session.\n\n", pathSpan(origin.Label))
	case origin.Review != nil:
		return fmt.Sprintf("Asked in a review comment on %s, %s.\n\n", pathSpan(origin.Review.Path), LineRange(origin.Review.StartLine, origin.Review.Line))
	case origin.Repair:
		var b strings.Builder
		if len(origin.Checks) > 0 {
			names := make([]string, len(origin.Checks))
			for i, n := range origin.Checks {
				names[i] = pathSpan(n)
			}
			fmt.Fprintf(&b, "Failing: %s. ", strings.Join(names, ", "))
		}
		d := policy.RepairDecision{Verdict: policy.RepairStart, Number: origin.RepairNumber, Last: origin.RepairLast}
		b.WriteString(RepairNote(d, origin.RepairBudget, commandWord))
		b.WriteString("\n\n")
		return b.String()
	}
	return ""
}

// OriginOf is what the session's way in adds to its progress comment.
func OriginOf(sess store.Session) Origin {
	ti := sess.Info()
	o := Origin{Repair: sess.TriggerKind == session.KindRepair, Label: ti.Label, Checks: ti.Checks,
		RepairNumber: ti.RepairNumber, RepairBudget: ti.RepairBudget, RepairLast: ti.RepairLast, QueuedFor: ti.QueuedFor}
	if r := ti.Review; r != nil {
		o.Review = &ReviewSpot{Path: r.Path, Line: r.Line, StartLine: r.StartLine}
	}
	return o
}
