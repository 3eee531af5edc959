package session

import (
	"errors"
	"fmt"
)

// State is a session's place in its life. The strings are what
// sessions.state stores.
type State string

// The session states, in order.
const (
	Queued     State = "queued"
	Preparing  State = "preparing"
	Dispatched State = "dispatched"
	Running    State = "running"
	Reporting  State = "reporting"
	Done       State = "done"
)

// States are every state, in order.
var States = []State{Queued, Preparing, Dispatched, Running, Reporting, Done}

// Outcome is how a done session ended: exactly one per done session, never
// changed. The strings are what sessions.outcome stores.
type Outcome string

// The outcomes.
const (
	Changed            Outcome = "changed"
	NoChange           Outcome = "no_change"
	VerificationFailed Outcome = "verification_failed"
	ChangeRefused      Outcome = "change_refused"
	Refused            Outcome = "refused"
	TimedOut           Outcome = "timed_out"
	Cancelled          Outcome = "cancelled"
	Errored            Outcome = "error"
)

// Transition is a named change of state: the only way a session's state
// changes. Each is taken by one step of the engine (decision 0045):
//
//	transition  from                                  to          taken by
//	Admit       queued                                preparing   store.Admit, past the caps
//	Dispatch    preparing                             dispatched  the executor took the attempt
//	Claim       preparing, dispatched                 running     store.ClaimAttempt (the supervisor's claim)
//	Report      dispatched, running                   reporting   store.RecordResult (the result arrived)
//	Requeue     dispatched, running                   preparing   a lost attempt's re-dispatch, a handback
//	End         queued … reporting (all but done)     done        refusals, cancels, timeouts, errors, the report
//
// A session is born queued (or ended at once: refused at the door, which is
// End from queued). A message after a session ended never reopens it: it
// is a new session, born queued, that continues the same conversation
// (decision 0072); a message while it runs is a turn of it (turn.go,
// decision 0071), which moves no state. A write that keeps the state (recording what a step
// created) is not a transition and is always allowed, but a done session's
// outcome never changes.
type Transition string

// The transitions.
const (
	Admit    Transition = "admit"
	Dispatch Transition = "dispatch"
	Claim    Transition = "claim"
	Report   Transition = "report"
	Requeue  Transition = "requeue"
	End      Transition = "end"
)

// Transitions are every transition, in the table's order.
var Transitions = []Transition{Admit, Dispatch, Claim, Report, Requeue, End}

// arrow is one row of the table.
type arrow struct {
	from []State
	to   State
}

// table is the state machine: every transition with its sources and its
// target. Nothing moves a session's state but these.
var table = map[Transition]arrow{
	Admit:    {from: []State{Queued}, to: Preparing},
	Dispatch: {from: []State{Preparing}, to: Dispatched},
	Claim:    {from: []State{Preparing, Dispatched}, to: Running},
	Report:   {from: []State{Dispatched, Running}, to: Reporting},
	Requeue:  {from: []State{Dispatched, Running}, to: Preparing},
	End:      {from: []State{Queued, Preparing, Dispatched, Running, Reporting}, to: Done},
}

// From lists the states t may be taken from.
func (t Transition) From() []State { return append([]State(nil), table[t].from...) }

// To is the state t leads to ("" for a transition not in the table).
func (t Transition) To() State { return table[t].to }

// Allows reports whether t may be taken from state from.
func (t Transition) Allows(from State) bool {
	for _, s := range table[t].from {
		if s == from {
			return true
		}
	}
	return false
}

// Between names the transition that moves a session from one state to
// another, if the table has one.
func Between(from, to State) (Transition, bool) {
	for _, t := range Transitions {
		if table[t].to == to && t.Allows(from) {
			return t, true
		}
	}
	return "", false
}

// ErrLeftDone is the refusal of any write that moves a done session, or
// changes its outcome.
var ErrLeftDone = errors.New("a done session never leaves done")

// TransitionError refuses a change of state outside the table. It wraps
// ErrLeftDone when the session was done.
type TransitionError struct {
	From, To State
	// Name is the transition that was asked for, when one was.
	Name Transition
}

func (e *TransitionError) Error() string {
	if e.From == Done && e.To == Done {
		return "session state: a done session keeps its outcome"
	}
	if e.Name != "" {
		return fmt.Sprintf("session state: %s is not taken from %s", e.Name, e.From)
	}
	return fmt.Sprintf("session state: no transition from %s to %s", e.From, e.To)
}

// Unwrap is ErrLeftDone for a move out of done.
func (e *TransitionError) Unwrap() error {
	if e.From == Done {
		return ErrLeftDone
	}
	return nil
}

// CheckChange is the rule every write of a session obeys: the state stays
// as it was or moves along the table, and a done session keeps its outcome;
// a session that is done has an outcome.
func CheckChange(from, to State, fromOutcome, toOutcome Outcome) error {
	if from == Done && (to != Done || toOutcome != fromOutcome) {
		return &TransitionError{From: from, To: to}
	}
	if from != to {
		if _, ok := Between(from, to); !ok {
			return &TransitionError{From: from, To: to}
		}
	}
	if to == Done && toOutcome == "" {
		return errors.New("session state: done without an outcome")
	}
	return nil
}
