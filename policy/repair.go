package policy

import (
	"fmt"
	"time"
)

// The reasons DecideRepair gives. They are for logs only: automatic
// triggers never post refusals. ReasonForkPR and
// ReasonInsufficientPermission are shared with Authorize.
const (
	ReasonRepairDisabled       Reason = "repair_disabled"
	ReasonNoMatchingCheck      Reason = "no_matching_check"
	ReasonPRClosed             Reason = "pr_closed"
	ReasonBotAuthor            Reason = "bot_author"
	ReasonHeadMoved            Reason = "head_moved"
	ReasonBudgetSpent          Reason = "budget_spent"
	ReasonOwnCommitBudgetSpent Reason = "own_commit_budget_spent"
	ReasonSessionActive        Reason = "session_active"
	ReasonCooldown             Reason = "cooldown"
)

// RepairFacts is everything DecideRepair decides on.
type RepairFacts struct {
	Enabled     bool // repo config turns repair on
	Matched     bool // a failing check's name matches the repo's patterns
	PROpen      bool
	Fork        bool // head repo differs from base repo (or was deleted)
	AuthorIsBot bool
	AuthorRole  Role // the PR author's role_name
	HeadMoved   bool // the failing commit is no longer the PR's head
	Repairs     int  // repair sessions this PR already had
	Budget      int  // Limits.RepairsPerPR (0 means no repairs at all)
	OnOwnCommit bool // the failing commit is one Inspect made
	// ActiveSession: a session of any kind is active on this PR.
	ActiveSession bool
	// LastRepairEnd is when the PR's last repair session ended (zero: none).
	LastRepairEnd time.Time
	Cooldown      time.Duration
	Now           time.Time
}

// RepairVerdict is what to do about a failing check.
type RepairVerdict int

const (
	// RepairSkip: do nothing, say nothing; log the reason. It is the zero
	// value, so a RepairDecision nobody filled in never starts anything.
	RepairSkip RepairVerdict = iota
	// RepairStart: start repair session number Number.
	RepairStart
	// RepairWait: look again at Until (or, when Until is zero, when the
	// active session ends).
	RepairWait
)

func (v RepairVerdict) String() string {
	switch v {
	case RepairSkip:
		return "skip"
	case RepairStart:
		return "start"
	case RepairWait:
		return "wait"
	}
	return fmt.Sprintf("RepairVerdict(%d)", int(v))
}

// RepairDecision is DecideRepair's answer.
type RepairDecision struct {
	Verdict RepairVerdict
	// Reason is a stable code for logs; "" for RepairStart.
	Reason Reason
	// Until is, for RepairWait, when to look again (the cooldown's end);
	// zero for session_active, where the caller polls.
	Until time.Time
	// Number is, for RepairStart, this repair's number: Repairs+1.
	Number int
	// Last is, for RepairStart, whether this repair spends the budget
	// (Number == Budget).
	Last bool
}

// DecideRepair decides whether a failing check on a pull request gets an
// automatic repair session now, later, or never.
//
// Skips are silent: an automatic trigger has nobody to answer, and a
// refusal posted on every failing check would be noise. The caller logs
// the Reason.
//
// The checks run in this order, and the first that applies decides:
//  1. repair disabled, then no matching check: the repository's own
//     choice, which is the answer for almost every failing check, costs
//     nothing to know, and says nothing about the pull request;
//  2. pull request closed: nobody wants work on it;
//  3. fork: a repair pushes to the head branch, which Inspect cannot do
//     on a fork, and a fork's code is not the repository's to run;
//  4. bot author: a bot's pull request (dependency updates and the like)
//     is the bot's to fix, and a repair racing the bot's own pushes could
//     loop between the two automations;
//  5. the author's permission, by the same rule as Authorize (built-in
//     write, maintain or admin role): a repair acts for the author, so it
//     does only what the author could have asked for with a command;
//  6. head moved: a newer commit is there, and its own checks will say
//     whether it needs a repair; repairing a stale commit wastes a
//     session and would push onto work it has not seen;
//  7. budget: a final skip, checked before the waits so that a pull
//     request without repairs left never waits only to be skipped. When
//     the failing commit is Inspect's own, the reason says so
//     (own_commit_budget_spent): the repairs ran out with a repair's own
//     result still failing, which is worth telling apart in logs;
//  8. an active session on the pull request: wait until it ends (its
//     pushes may fix the check, or move the head), with Until zero;
//  9. cooldown: wait until LastRepairEnd + Cooldown, last because it is
//     the only condition that passes with time alone.
//
// Facts 1 to 7 do not change by waiting for this commit, so they skip;
// 8 and 9 do, so they wait.
func DecideRepair(f RepairFacts) RepairDecision {
	skip := func(r Reason) RepairDecision { return RepairDecision{Verdict: RepairSkip, Reason: r} }
	switch {
	case !f.Enabled:
		return skip(ReasonRepairDisabled)
	case !f.Matched:
		return skip(ReasonNoMatchingCheck)
	case !f.PROpen:
		return skip(ReasonPRClosed)
	case f.Fork:
		return skip(ReasonForkPR)
	case f.AuthorIsBot:
		return skip(ReasonBotAuthor)
	case !CanWrite(f.AuthorRole):
		return skip(ReasonInsufficientPermission)
	case f.HeadMoved:
		return skip(ReasonHeadMoved)
	case f.Repairs >= f.Budget:
		if f.OnOwnCommit {
			return skip(ReasonOwnCommitBudgetSpent)
		}
		return skip(ReasonBudgetSpent)
	case f.ActiveSession:
		return RepairDecision{Verdict: RepairWait, Reason: ReasonSessionActive}
	}
	if !f.LastRepairEnd.IsZero() && f.Cooldown > 0 {
		if until := f.LastRepairEnd.Add(f.Cooldown); f.Now.Before(until) {
			return RepairDecision{Verdict: RepairWait, Reason: ReasonCooldown, Until: until}
		}
	}
	n := max(f.Repairs, 0) + 1
	return RepairDecision{Verdict: RepairStart, Number: n, Last: n >= f.Budget}
}
