package session

import (
	"errors"
	"testing"
)

// allowed is the table written out as the arrows it allows, independently
// of state.go: a change to the state machine changes both.
var allowed = map[[2]State]Transition{
	{Queued, Preparing}:     Admit,
	{Preparing, Dispatched}: Dispatch,
	{Preparing, Running}:    Claim,
	{Dispatched, Running}:   Claim,
	{Dispatched, Reporting}: Report,
	{Running, Reporting}:    Report,
	{Dispatched, Preparing}: Requeue,
	{Running, Preparing}:    Requeue,
	{Queued, Done}:          End,
	{Preparing, Done}:       End,
	{Dispatched, Done}:      End,
	{Running, Done}:         End,
	{Reporting, Done}:       End,
}

// Every pair of states: a change is allowed exactly when the table has an
// arrow for it (or it keeps the state), and it is named by that arrow.
func TestEveryPairOfStates(t *testing.T) {
	if len(States) != 6 {
		t.Fatalf("states = %v", States)
	}
	for _, from := range States {
		for _, to := range States {
			want, ok := allowed[[2]State{from, to}]
			got, gotOK := Between(from, to)
			if got != want || gotOK != ok {
				t.Errorf("Between(%s, %s) = %q %v, want %q %v", from, to, got, gotOK, want, ok)
			}
			err := CheckChange(from, to, outcomeIn(from), Cancelled)
			keeps := from == to
			switch {
			case (ok || keeps) && err != nil:
				t.Errorf("%s → %s refused: %v", from, to, err)
			case !ok && !keeps:
				var te *TransitionError
				if !errors.As(err, &te) || te.From != from || te.To != to {
					t.Errorf("%s → %s = %v, want a TransitionError", from, to, err)
				}
				if errors.Is(err, ErrLeftDone) != (from == Done) {
					t.Errorf("%s → %s: ErrLeftDone = %v", from, to, errors.Is(err, ErrLeftDone))
				}
			}
		}
	}
}

// outcomeIn is the outcome a session in state s carries: Cancelled when
// done, none before.
func outcomeIn(s State) Outcome {
	if s == Done {
		return Cancelled
	}
	return ""
}

// Each transition's sources and target, as the table states them.
func TestEveryTransition(t *testing.T) {
	if len(Transitions) != len(table) {
		t.Fatalf("Transitions lists %d, the table holds %d", len(Transitions), len(table))
	}
	arrows := 0
	for _, tr := range Transitions {
		for _, from := range States {
			_, want := allowed[[2]State{from, tr.To()}]
			want = want && allowed[[2]State{from, tr.To()}] == tr
			if tr.Allows(from) != want {
				t.Errorf("%s.Allows(%s) = %v", tr, from, !want)
			}
		}
		for _, from := range tr.From() {
			if allowed[[2]State{from, tr.To()}] != tr {
				t.Errorf("%s from %s to %s is not in the table", tr, from, tr.To())
			}
			arrows++
		}
	}
	if arrows != len(allowed) {
		t.Errorf("the transitions hold %d arrows, want %d", arrows, len(allowed))
	}
	if Transition("skip").Allows(Queued) || Transition("skip").To() != "" {
		t.Error("an unknown transition is taken")
	}
}

// Done is final and carries its one outcome.
func TestDoneKeepsItsOutcome(t *testing.T) {
	if err := CheckChange(Done, Done, Changed, Changed); err != nil {
		t.Errorf("recording on a done session: %v", err)
	}
	if err := CheckChange(Done, Done, Changed, NoChange); !errors.Is(err, ErrLeftDone) {
		t.Errorf("changing a done session's outcome = %v", err)
	}
	if err := CheckChange(Running, Done, "", ""); err == nil {
		t.Error("done without an outcome was allowed")
	}
	if err := CheckChange(Queued, Done, "", Refused); err != nil {
		t.Errorf("refusing a queued session: %v", err)
	}
}
