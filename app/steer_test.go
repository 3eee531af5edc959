package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// say posts body on the pull request as sender and runs the workers; it
// returns the comment's id.
func (h *harness) say(t *testing.T, sender, body string) int64 {
	t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: body, sender: sender, onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	return h.lastComment
}

// turns asks the channel for the turns after after, as the supervisor
// does, without waiting.
func (sv *supervisor) turns(after int) []contract.Turn {
	var resp contract.TurnsResponse
	sv.call("GET", contract.PathTurns+fmt.Sprintf("?after=%d&wait=0s", after), nil, &resp, 200)
	return resp.Turns
}

func reacted(rs []fakegithub.Reaction, content string) bool {
	return slices.ContainsFunc(rs, func(r fakegithub.Reaction) bool { return r.Content == content })
}

func TestASteeringCommentIsATurnOfTheRunningSession(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect first")
	if spec.Steer == nil || spec.Steer.Mode != contract.SteerInterrupt {
		t.Fatalf("the spec's steer: %+v", spec.Steer)
	}
	running := h.onlySession()

	// A writer's message: a turn of the running session, acknowledged
	// with 🚀 (not the 👀 of a new request), and no session of its own.
	id := h.say(t, "mara", "/inspect use the new API instead")
	if n := len(h.sessions()); n != 1 {
		t.Fatalf("%d sessions: the message started one of its own", n)
	}
	rs := h.gh.CommentReactions(owner, repoName, id)
	if !reacted(rs, render.TurnReaction) || reacted(rs, "eyes") {
		t.Errorf("reactions on the message: %+v", rs)
	}
	got := sv.turns(0)
	if len(got) != 1 || got[0] != (contract.Turn{Seq: 1, Author: "mara", Message: "use the new API instead"}) {
		t.Fatalf("the supervisor got %+v", got)
	}

	// A reader's message: one refusal, whatever the replays, and nothing
	// else changes.
	before := len(h.comments(prNumber))
	h.say(t, "bob", "/inspect delete the tests")
	h.runWorkers()
	replies := h.comments(prNumber)
	if len(replies) != before+1 {
		t.Fatalf("the reader got %d replies", len(replies)-before)
	}
	// A comment without the command word steers nothing, whoever writes it.
	h.say(t, "alice", "please also stop using the old API")
	// "stop" with more words is a request; alone, a stop.
	h.say(t, "alice", "/inspect stop using the old API")
	h.say(t, "ada", "/inspect stop")
	if n := len(h.comments(prNumber)); n != before+1 {
		t.Errorf("%d more replies than the refusal", n-before-1)
	}
	got = sv.turns(1)
	want := []contract.Turn{{Seq: 2, Author: "alice", Message: "stop using the old API"}, {Seq: 3, Author: "ada", Stop: true}}
	if !slices.Equal(got, want) {
		t.Fatalf("the supervisor got %+v, want %+v", got, want)
	}
	sv.turns(3) // it has them all
	stored, err := h.st.SessionTurns(context.Background(), running.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range stored {
		if tn.State != session.TurnDelivered || tn.AttemptID != spec.AttemptID {
			t.Errorf("turn %d: %s by %s", tn.Seq, tn.State, tn.AttemptID)
		}
	}

	// The session ends: its turns are done with its outcome.
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	stored, err = h.st.SessionTurns(context.Background(), running.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range stored {
		if tn.State != session.TurnDone || tn.Outcome != string(session.Changed) {
			t.Errorf("turn %d after the end: %s, %q", tn.Seq, tn.State, tn.Outcome)
		}
	}
}

func TestStopWithNothingRunningSaysSoOnce(t *testing.T) {
	h, _ := newSessionHarness(t)
	withRealPR(t, h)
	h.say(t, "alice", "/inspect stop")
	h.runWorkers()
	h.expectOneReply(prNumber, "Nothing to stop")
	if n := len(h.sessions()); n != 0 {
		t.Errorf("a stop started %d sessions", n)
	}
}

func TestQueueModeReachesTheSpec(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig + "steer: queue\nlimits:\n  turn_timeout: 5m\n"}, "queue")
	_, spec := startOnPR(t, h, ex, "/inspect first")
	if spec.Steer == nil || spec.Steer.Mode != contract.SteerQueue || spec.Steer.TurnTimeout.Std() != 5*time.Minute {
		t.Fatalf("the spec's steer: %+v", spec.Steer)
	}
}
