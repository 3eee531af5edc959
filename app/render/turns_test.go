package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// The turns a PR body lists are untrusted text: nothing in them mentions,
// references, closes or renders on GitHub.
func TestTurnsSectionActsOnNothing(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	attack := "@octocat fixes #1 ![x](https://evil.example/x.png) <img src=x> `code` | pipe"
	turns := []session.Turn{
		session.RequestTurn("s1", "alice", 5000, 0, "fix it", at),
		{Seq: 1, AuthorLogin: "mara", Message: attack, State: session.TurnDone, Outcome: "changed", CreatedAt: at},
		{Seq: 2, AuthorLogin: "ada", Stop: true, State: session.TurnDelivered, CreatedAt: at},
	}
	body := TurnsSection(turns)
	e := fakegithub.MarkdownEffects(body)
	if len(e.Mentions) != 0 || len(e.Closes) != 0 || len(e.References) != 0 || len(e.Images) != 0 || len(e.HTML) != 0 {
		t.Errorf("the turns act: %+v\n%s", e, body)
	}
	for _, want := range []string{"| 1 | mara |", "| 2 | ada |", "stop", "with the agent", "changed"} {
		if !strings.Contains(body, want) {
			t.Errorf("the section lacks %q:\n%s", want, body)
		}
	}
	msg := CommitMessageWith(store.Session{ID: "s1", Number: 1, RequesterLogin: "alice", RequesterID: 5000, Instructions: "fix it"}, append(turns, session.Turn{Seq: 3, AuthorLogin: "alice"}))
	for _, want := range []string{"Co-authored-by: alice <5000+alice@", "Co-authored-by: mara <0+mara@", "Co-authored-by: ada <0+ada@"} {
		if strings.Count(msg, want) != 1 {
			t.Errorf("the commit message credits %q %d times:\n%s", want, strings.Count(msg, want), msg)
		}
	}
}

// WithTurns replaces the body's turns list, and only it: the note of a
// long list, a body edited in the browser (CRLF) and what follows the
// list are kept; a body without one gets it at its end.
func TestWithTurnsReplacesTheListOnly(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	old := []session.Turn{session.RequestTurn("s1", "alice", 1, 0, "fix it", at), {Seq: 1, AuthorLogin: "mara", Message: "also zero", State: session.TurnDone, CreatedAt: at}}
	now := append(old, session.RequestTurn("s2", "ada", 2, 0, "add docs", at))
	body := "Fixes the test.\n\n" + TurnsSection(old) + "\n---\nOpened by the App."
	got := WithTurns(strings.ReplaceAll(body, "\n", "\r\n"), TurnsSection(now))
	if want := "Fixes the test.\n\n" + TurnsSection(now) + "\n---\nOpened by the App."; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	many := make([]session.Turn, maxTurnRows+2)
	for i := range many {
		many[i] = session.Turn{Seq: i, AuthorLogin: "mara", Message: "m", State: session.TurnDone, CreatedAt: at}
	}
	if got := WithTurns("Body.\n\n"+TurnsSection(many)+"\nAfter.", TurnsSection(now)); got != "Body.\n\n"+TurnsSection(now)+"\nAfter." {
		t.Errorf("a long list's note was left:\n%s", got)
	}
	if got := WithTurns("Body.\n", TurnsSection(now)); got != "Body.\n\n"+TurnsSection(now) {
		t.Errorf("a body without a list:\n%s", got)
	}
	if got := WithTurns("Body.", ""); got != "Body." {
		t.Errorf("an empty section changed the body: %q", got)
	}
}
