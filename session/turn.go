package session

import (
	"fmt"
	"time"
)

// A session is a conversation of turns (decision 0071): the first turn is
// the request that started it (the session's own instructions and
// requester, never stored apart), and each later turn is a message someone
// who may trigger sent while it ran, by a `/inspect <message>` comment on
// the thread it answers on or from its dashboard page. An attempt runs the
// first turn and those that steer it, and ends, as before, with verify and
// a commit. A message after the session ended is the first turn of a new
// session linked to the same conversation (decision 0072).

// TurnState is where a turn is on its way to the agent. The strings are
// what turns.state stores.
type TurnState string

// The turn states, in order.
const (
	// TurnPending: admitted and stored; the supervisor has not taken it.
	TurnPending TurnState = "pending"
	// TurnDelivered: the supervisor took it over the session channel (it
	// asked for the turns after it); the agent is running it or will.
	TurnDelivered TurnState = "delivered"
	// TurnDone: the attempt that took it ended; Turn.Outcome says how.
	TurnDone TurnState = "done"
)

// TurnSource is where a turn came from. The strings are what turns.source
// stores.
type TurnSource string

// The turn sources.
const (
	// TurnFromRequest is the first turn: the request that started the
	// session (a comment, a label, a repair, the dashboard's form).
	TurnFromRequest TurnSource = "request"
	// TurnFromComment is a `/inspect <message>` comment (Turn.CommentID).
	TurnFromComment TurnSource = "comment"
	// TurnFromReviewComment is one in a review thread (Turn.CommentID).
	TurnFromReviewComment TurnSource = "review_comment"
	// TurnFromDashboard is a message from the session's page.
	TurnFromDashboard TurnSource = "dashboard"
)

// Turn is one message of a session's conversation.
type Turn struct {
	// Seq numbers the session's turns: 0 is the request, 1… the messages
	// that came while it ran, in the order they were admitted. The session
	// channel hands the supervisor the turns after the last Seq it has.
	Seq int
	// SessionID is the session the turn belongs to.
	SessionID string
	// AuthorLogin and AuthorID are the GitHub user who wrote it.
	AuthorLogin string
	AuthorID    int64
	Source      TurnSource
	// CommentID is the comment (or review comment) that carried it; 0 for
	// the dashboard and for most requests.
	CommentID int64
	// Review is where a review comment that carried it sits, and its
	// thread (TurnFromReviewComment): a message never delivered becomes a
	// session that answers in that thread, as the comment would have.
	Review *ReviewComment
	// Message is what the author asked, cleaned as a command's
	// instructions are (policy.Parse). It is untrusted text.
	Message string
	// Stop says the turn is `/inspect stop`: it ends the agent's turn and
	// the session goes on to verify and report with what the workspace
	// holds. Message is empty then.
	Stop  bool
	State TurnState
	// AttemptID is the attempt that took it (set when delivered).
	AttemptID string
	// Outcome is what came of it, once done: the session's outcome for
	// the attempt that ran it, or why it never ran.
	Outcome string
	// CreatedAt is when it was admitted; DeliveredAt and DoneAt when it
	// moved on (zero until then).
	CreatedAt, DeliveredAt, DoneAt time.Time
}

// SteerMode is what a repository's `steer:` setting makes of a message to a
// running session. The strings are the config's values.
type SteerMode string

// The steer modes.
const (
	// SteerInterrupt (the default) stops the agent's current run and
	// continues its conversation with the message at once.
	SteerInterrupt SteerMode = "interrupt"
	// SteerQueue delivers the message when the agent's current run ends.
	SteerQueue SteerMode = "queue"
	// SteerOff keeps the rule before turns: a later request waits for the
	// running session and starts a session of its own.
	SteerOff SteerMode = "off"
)

// ParseSteerMode reads a `steer:` value; "" is SteerInterrupt.
func ParseSteerMode(s string) (SteerMode, error) {
	switch m := SteerMode(s); m {
	case "":
		return SteerInterrupt, nil
	case SteerInterrupt, SteerQueue, SteerOff:
		return m, nil
	}
	return "", fmt.Errorf("must be %q, %q or %q", SteerInterrupt, SteerQueue, SteerOff)
}

// MaxTurnsPerSession caps the turns a session takes beyond its first: a
// message past it is refused with a reply (Open-Inspect queues ten
// follow-ups; so do we).
const MaxTurnsPerSession = 10

// RequestTurn is a session's first turn: its own request.
func RequestTurn(sessionID, login string, id int64, commentID int64, instructions string, at time.Time) Turn {
	return Turn{Seq: 0, SessionID: sessionID, AuthorLogin: login, AuthorID: id, Source: TurnFromRequest,
		CommentID: commentID, Message: instructions, State: TurnDone, CreatedAt: at}
}

// Authors are the distinct authors of turns, in the order they first
// spoke (login and id), for the commit's Co-authored-by trailers.
func Authors(turns []Turn) []Turn {
	seen := map[string]bool{}
	var out []Turn
	for _, t := range turns {
		if t.AuthorLogin == "" || seen[t.AuthorLogin] {
			continue
		}
		seen[t.AuthorLogin] = true
		out = append(out, Turn{AuthorLogin: t.AuthorLogin, AuthorID: t.AuthorID})
	}
	return out
}
