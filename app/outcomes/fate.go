// Package outcomes is what became of the pull requests Inspect opened: a
// PR's fate as a pure function of the events seen on it (Apply), what a
// fate adds to the rollup (Contribution), and the figures a rollup shows
// (Summarize). It does no I/O, in the manner of policy-bot's evaluator:
// the store and the webhook handlers hand it facts, it answers with facts
// (decision 0074).
package outcomes

import (
	"time"
)

// State is where a PR stands now.
type State string

// The states. A reopened PR is open again; a fate that changes is counted
// once, as it stands.
const (
	Open   State = "open"
	Merged State = "merged"
	Closed State = "closed"
)

// WithdrawWindow is how soon after opening a close by the requester or by
// Inspect counts as withdrawn rather than closed unmerged.
const WithdrawWindow = 10 * time.Minute

// RevertWindow is how long after its merge a revert still counts against
// a change.
const RevertWindow = 30 * 24 * time.Hour

// Tokens are the model tokens a session spent, as the store counts them
// (decision 0053); money is computed from them at the server's prices.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite, Total int64
}

// Add is t plus o times sign.
func (t Tokens) Add(o Tokens, sign int64) Tokens {
	return Tokens{t.Input + sign*o.Input, t.Output + sign*o.Output, t.CacheRead + sign*o.CacheRead,
		t.CacheWrite + sign*o.CacheWrite, t.Total + sign*o.Total}
}

// Dims are the dimensions a PR (and its session) is counted under; they
// are the session's and never change.
type Dims struct {
	RepoID    int64
	Repo      string // owner/name
	Week      string // Week of the session's creation
	Trigger   string // session.TriggerKind's stored name
	Preset    string // the agent preset, "" when the session never ran one
	Model     string
	Requester string
}

// Fate is one PR Inspect opened, as it stands.
type Fate struct {
	Dims
	Number         int
	InstallationID int64
	SessionID      string
	OpenedAt       time.Time

	State State
	// Withdrawn: closed unmerged by its requester or by Inspect within
	// WithdrawWindow of opening.
	Withdrawn bool
	// ClosedBy is who merged or closed it; ClosedAt when.
	ClosedBy string
	ClosedAt time.Time
	MergedAt time.Time
	MergeSHA string

	// FirstReviewAt is the first review by a human.
	FirstReviewAt time.Time
	// ReviewRounds counts reviews requesting changes.
	ReviewRounds int
	// ReviewComments are humans' comments on the diff; ThreadComments
	// humans' comments on the conversation.
	ReviewComments, ThreadComments int
	// LaterTurns counts sessions run on the PR after it was opened.
	LaterTurns int

	// RevertedAt is when a revert of the merged change landed (zero: none);
	// RevertedBy says how it was found ("pr:owner/repo#N", "commit:<sha>",
	// "patch:<sha>").
	RevertedAt time.Time
	RevertedBy string

	// Tokens is the opening session's usage.
	Tokens Tokens
}

// EventKind names what happened to a PR.
type EventKind string

// The events.
const (
	EventOpened        EventKind = "opened"
	EventClosed        EventKind = "closed" // merged or not: Event.Merged
	EventReopened      EventKind = "reopened"
	EventReview        EventKind = "review"
	EventReviewComment EventKind = "review_comment"
	EventThreadComment EventKind = "thread_comment"
	EventLaterTurn     EventKind = "later_turn"
	EventReverted      EventKind = "reverted"
	// EventComments sets the counts the API reports (reconcile): the
	// larger of the known and reported counts is kept.
	EventComments EventKind = "comments"
)

// Actor is who did it, as the event names them.
type Actor struct {
	Login string
	// Bot: GitHub's user type is "Bot"; Inspect is true when it is our App.
	Bot, Inspect bool
}

// Human reports whether the actor is a person (their review and comments
// count as review effort).
func (a Actor) Human() bool { return !a.Bot && !a.Inspect && a.Login != "" }

// Event is one thing that happened to a PR.
type Event struct {
	Kind  EventKind
	At    time.Time
	Actor Actor
	// Merged and MergeSHA: a close that merged, and its merge commit.
	Merged   bool
	MergeSHA string
	// ReviewState is a review's state as GitHub spells it
	// ("changes_requested", "approved", "commented").
	ReviewState string
	// RevertedBy says how a revert was found.
	RevertedBy string
	// ReviewComments and ThreadComments are EventComments' counts.
	ReviewComments, ThreadComments int
}

// Apply is f after ev. changed is false when ev changes nothing (an event
// that does not apply to the state f is in, or one by a bot).
func Apply(f Fate, ev Event) (out Fate, changed bool) {
	out = f
	switch ev.Kind {
	case EventClosed:
		if f.State != Open {
			return f, false
		}
		out.ClosedBy, out.ClosedAt = ev.Actor.Login, ev.At
		if ev.Merged {
			out.State, out.MergedAt, out.MergeSHA = Merged, ev.At, ev.MergeSHA
			return out, true
		}
		out.State = Closed
		out.Withdrawn = (ev.Actor.Inspect || (ev.Actor.Login != "" && ev.Actor.Login == f.Requester)) &&
			!f.OpenedAt.IsZero() && ev.At.Sub(f.OpenedAt) <= WithdrawWindow
		return out, true
	case EventReopened:
		if f.State != Closed {
			return f, false
		}
		out.State, out.Withdrawn, out.ClosedBy, out.ClosedAt = Open, false, "", time.Time{}
		return out, true
	case EventReview:
		if !ev.Actor.Human() {
			return f, false
		}
		if out.FirstReviewAt.IsZero() || ev.At.Before(out.FirstReviewAt) {
			out.FirstReviewAt = ev.At
		}
		if ev.ReviewState == "changes_requested" {
			out.ReviewRounds++
		}
		return out, true
	case EventReviewComment, EventThreadComment:
		if !ev.Actor.Human() {
			return f, false
		}
		if ev.Kind == EventReviewComment {
			out.ReviewComments++
		} else {
			out.ThreadComments++
		}
		return out, true
	case EventComments:
		out.ReviewComments = max(out.ReviewComments, ev.ReviewComments)
		out.ThreadComments = max(out.ThreadComments, ev.ThreadComments)
		return out, out != f
	case EventLaterTurn:
		out.LaterTurns++
		return out, true
	case EventReverted:
		if f.State != Merged || !f.RevertedAt.IsZero() || !WithinRevertWindow(f.MergedAt, ev.At) {
			return f, false
		}
		out.RevertedAt, out.RevertedBy = ev.At, ev.RevertedBy
		return out, true
	}
	return f, false
}

// WithinRevertWindow reports whether a revert at `at` counts against a
// change merged at mergedAt.
func WithinRevertWindow(mergedAt, at time.Time) bool {
	return !mergedAt.IsZero() && !at.Before(mergedAt) && at.Sub(mergedAt) <= RevertWindow
}

// Week is the week t falls in, named by its Monday (UTC), "2006-01-02":
// it sorts as time does.
func Week(t time.Time) string {
	t = t.UTC()
	offset := (int(t.Weekday()) + 6) % 7
	return time.Date(t.Year(), t.Month(), t.Day()-offset, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}
