package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/session"
)

// A session's state changes here and nowhere else: through Move and End
// on a session the store then writes (MutateSession, Admit, an insert),
// and through the claim's and the result's SQL, whose WHERE names the
// transition's sources from session's table. Every write checks the change
// against that table (decision 0045).

// Move takes the named transition t, if the session's state is one it is
// taken from; the store checks the change again when it writes the session.
// Ending is End, which also sets the outcome.
func (s *Session) Move(t session.Transition) error {
	if t == session.End {
		return errors.New("session state: a session ends with End, which sets its outcome")
	}
	return s.take(t)
}

// End ends the session with its one outcome, the reason code and the
// human text that is posted.
func (s *Session) End(o session.Outcome, reason, detail string) error {
	if err := s.take(session.End); err != nil {
		return err
	}
	s.Outcome, s.Reason, s.Detail = o, reason, detail
	return nil
}

func (s *Session) take(t session.Transition) error {
	if !t.Allows(s.State()) {
		return &session.TransitionError{From: s.State(), To: t.To(), Name: t}
	}
	s.state = t.To()
	return nil
}

// Fixture is sess in state st, for tests' fixtures only (internal/layers
// fails on a call outside a _test.go file): the one way to hold a session
// in a state without walking the table to it. The store inserts a fixture
// in the state it carries.
func Fixture(st session.State, sess Session) Session {
	sess.state, sess.fixture = st, true
	return sess
}

// transitionSQL is the SQL list of t's sources, "($n, …)", and the
// statement's arguments: args, then t's target (the next placeholder), then
// its sources. A statement sets state to the target's placeholder and
// selects rows WHERE state IN the list, so it takes t and nothing else.
func transitionSQL(t session.Transition, args ...any) (sources string, all []any) {
	all = append(append([]any(nil), args...), string(t.To()))
	marks := make([]string, 0, len(t.From()))
	for _, st := range t.From() {
		all = append(all, string(st))
		marks = append(marks, fmt.Sprintf("$%d", len(all)))
	}
	return "(" + strings.Join(marks, ", ") + ")", all
}

// errBornMidway refuses to insert a session in a state past queued but
// short of done: the transitions to it are the store's checked writes.
var errBornMidway = errors.New("a session is born queued, or done (refused on the way in)")
