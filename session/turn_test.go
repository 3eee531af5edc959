package session

import (
	"slices"
	"testing"
)

func TestParseSteerMode(t *testing.T) {
	for in, want := range map[string]SteerMode{"": SteerInterrupt, "interrupt": SteerInterrupt, "queue": SteerQueue, "off": SteerOff} {
		if got, err := ParseSteerMode(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"Interrupt", "later", "false"} {
		if _, err := ParseSteerMode(in); err == nil {
			t.Errorf("%q was taken", in)
		}
	}
}

func TestAuthorsInTheOrderTheyFirstSpoke(t *testing.T) {
	turns := []Turn{{AuthorLogin: "alice", AuthorID: 1}, {AuthorLogin: "mara", AuthorID: 2}, {AuthorLogin: "alice", AuthorID: 1},
		{AuthorLogin: ""}, {AuthorLogin: "ada", AuthorID: 3}}
	var got []string
	for _, a := range Authors(turns) {
		got = append(got, a.AuthorLogin)
	}
	if want := []string{"alice", "mara", "ada"}; !slices.Equal(got, want) {
		t.Errorf("authors %v, want %v", got, want)
	}
}
