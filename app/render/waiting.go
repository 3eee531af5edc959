package render

import (
	"fmt"

	"github.com/inspecthq/inspect/policy"
)

// The progress comment's lines for a session that waits or repairs: the
// words for policy's admission and repair decisions (decision 0047).

// QueueText is the progress comment's line for a queued session, e.g.
// "Queued: position 2 in this repository's queue (at most 1 session runs
// at once here)." It is plain text built from numbers only, never from
// user input. An admitted session has no queue line: the result is "".
func QueueText(a policy.Admission) string {
	if a.Admit {
		return ""
	}
	pos := max(a.Position, 1)
	n := max(a.Cap, 0)
	runs := sessionsRun(n)
	switch a.Scope {
	case policy.ScopeRepo:
		return fmt.Sprintf("Queued: position %d in this repository's queue (at most %d %s at once here).", pos, n, runs)
	case policy.ScopeUser:
		return fmt.Sprintf("Queued: position %d in the queue of the person who asked for it (at most %d %s at once for one person).", pos, n, runs)
	case policy.ScopeInstallation:
		return fmt.Sprintf("Queued: position %d in this installation's queue (at most %d %s at once across all the repositories of this installation).", pos, n, runs)
	}
	return fmt.Sprintf("Queued: position %d, waiting for a free slot.", pos)
}

// sessionsRun is "session runs" after a count of 1, else "sessions run".
func sessionsRun(n int) string {
	if n == 1 {
		return "session runs"
	}
	return "sessions run"
}

// RepairNote is the sentence a repair session's progress comment carries,
// e.g. "Automatic repair 1 of 2 for this pull request." When the repair is
// the last one, it adds "This is the last automatic repair of this pull
// request: the repair budget (2) is now spent. Comment `<commandWord>
// <instructions>` to ask for more." commandWord is expected to be valid
// (ValidCommandWord); an invalid one is left out of the text. The note is
// built from numbers and the command word only; it is "" unless d starts
// a repair.
func RepairNote(d policy.RepairDecision, budget int, commandWord string) string {
	if d.Verdict != policy.RepairStart {
		return ""
	}
	n := max(d.Number, 1)
	budget = max(budget, n)
	s := fmt.Sprintf("Automatic repair %d of %d for this pull request.", n, budget)
	if !d.Last {
		return s
	}
	s += fmt.Sprintf(" This is the last automatic repair of this pull request: the repair budget (%d) is now spent.", budget)
	if policy.ValidCommandWord(commandWord) == nil {
		s += fmt.Sprintf(" Comment `%s <instructions>` to ask for more.", commandWord)
	} else {
		s += " Comment an Inspect command with instructions to ask for more."
	}
	return s
}
