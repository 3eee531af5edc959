package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// say posts body on the pull request as sender and runs the workers; it
// returns the comment's id.
func (h *harness) say(t testing.TB, sender, body string) int64 {
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
	if r := replies[len(replies)-1].Body; !strings.Contains(r, "sending a message to a running Inspect session needs the write") {
		t.Errorf("the refusal: %s", r)
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

// A request after a session ended continues its conversation (decision
// 0072): a new session linked to it, told the earlier turns and the
// commits others pushed since, whose commit credits every author.
func TestAContinuationAfterTheEndCarriesTheConversationAndItsAuthors(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect fix the flaky test")
	h.say(t, "mara", "/inspect also handle zero")
	if got := sv.turns(0); len(got) != 1 {
		t.Fatalf("turns %+v", got)
	}
	sv.turns(1)
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	first := h.onlySession()
	if first.Outcome != session.Changed || first.Branch != "fix-flaky" {
		t.Fatalf("the first session: %s %q (%s)\n%s", first.Outcome, first.Branch, first.Detail, h.logs)
	}
	show := gitShow(t, h.gh.GitDir(owner, repoName), first.CommitSHA)
	for _, who := range []string{"alice", "mara"} {
		if !strings.Contains(show, "Co-authored-by: "+who+" <") {
			t.Errorf("the first commit does not credit %s:\n%s", who, show)
		}
	}
	// Someone pushes meanwhile; then ada asks for more.
	pushed := h.gh.CommitFiles(owner, repoName, "fix-flaky", map[string]string{"notes.md": "by hand\n"}, "notes written by hand")
	h.clock.Advance(time.Minute)
	h.say(t, "ada", "/inspect now add docs")
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	if next.ID == "" || next.Info().Continues != first.ID {
		t.Fatalf("the continuation %+v does not continue %s\n%s", next, first.ID, h.logs)
	}
	sv2 := h.claim(ex.last(t))
	spec2 := sv2.spec()
	if spec2.PinnedSHA != pushed {
		t.Errorf("the continuation works on %s, not the head as it is now (%s)", spec2.PinnedSHA, pushed)
	}
	var history, since bool
	for _, c := range spec2.Context {
		if c.Kind != contract.ContextEarlierSession {
			continue
		}
		history = history || (strings.Contains(c.Text, "fix the flaky test") && strings.Contains(c.Text, "Then @mara said:\n\nalso handle zero"))
		since = since || (strings.Contains(c.Text, "notes written by hand") && strings.Contains(c.Text, pushed[:12]))
	}
	if !history || !since {
		t.Errorf("the continuation's context (history %v, commits since %v): %+v", history, since, spec2.Context)
	}
	h.runWorkers()
	sv2.upload(spec2, 0, contract.FileChange{Path: "DOCS.md", Mode: contract.ModeFile, Content: []byte("docs\n")})
	h.runWorkers()
	next, _ = h.st.GetSession(context.Background(), next.ID)
	if next.Outcome != session.Changed {
		t.Fatalf("the continuation: %s (%s)\n%s", next.Outcome, next.Detail, h.logs)
	}
	show = gitShow(t, h.gh.GitDir(owner, repoName), next.CommitSHA)
	for _, who := range []string{"ada", "alice", "mara"} {
		if !strings.Contains(show, "Co-authored-by: "+who+" <") {
			t.Errorf("the continuation's commit does not credit %s:\n%s", who, show)
		}
	}
	// The earlier attempt's evidence is as it was.
	a, err := h.st.GetAttempt(context.Background(), first.AttemptID)
	if err != nil || a.Result == "" {
		t.Errorf("the first attempt's result: %v", err)
	}
}

// A message the agent never took (its run ended first, or its CLI's
// conversation could not be continued) is not lost: it starts a session
// of its own when the session ends, continuing the conversation, as a
// request that waited did before turns. A cancel drops it with the rest.
func TestAnUndeliveredMessageStartsASessionWhenTheSessionEnds(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect first")
	h.say(t, "mara", "/inspect then the second thing")
	first := h.onlySession()
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	if next.Instructions != "then the second thing" || next.RequesterLogin != "mara" || next.Info().Continues != first.ID || !next.Active() {
		t.Fatalf("the undelivered message's session: %+v\n%s", next, h.logs)
	}
	if len(ex.launches) != 2 {
		t.Errorf("launches %d: the message's session was not dispatched", len(ex.launches))
	}
}

func TestACancelDropsTheUndeliveredMessages(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	startOnPR(t, h, ex, "/inspect first")
	h.say(t, "mara", "/inspect then the second thing")
	h.say(t, "alice", "/inspect cancel")
	h.runWorkers()
	if n := len(h.sessions()); n != 1 {
		t.Fatalf("%d sessions after the cancel\n%s", n, h.logs)
	}
}

func TestStopWithSteeringOffSaysToCancel(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig + "steer: off\n"}, "no steering")
	_, spec := startOnPR(t, h, ex, "/inspect first")
	if spec.Steer != nil {
		t.Errorf("steer: off, yet the spec steers: %+v", spec.Steer)
	}
	before := len(h.comments(prNumber))
	h.say(t, "alice", "/inspect stop")
	if got := h.comments(prNumber); len(got) != before+1 || !strings.Contains(got[len(got)-1].Body, "cancel") {
		t.Errorf("replies %+v", got[before:])
	}
	if turns, err := h.st.SessionTurns(context.Background(), h.onlySession().ID); err != nil || len(turns) != 0 {
		t.Errorf("turns %+v %v", turns, err)
	}
}

// A message in a review thread of the running session's pull request is
// a turn too, acknowledged on the review comment.
func TestAReviewCommentSteersTheRunningSession(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, _ := startOnPR(t, h, ex, "/inspect first")
	body := "/inspect use a table test here"
	id := h.gh.AddReviewComment(owner, repoName, prNumber, fakegithub.ReviewComment{User: "mara", Body: body, Path: "calc.go", Line: 3, Side: "RIGHT"})
	if code, msg := h.deliver("pull_request_review_comment", reviewCommentEvent(t, id, body, "mara", "calc.go", 3, "")); code != 200 {
		t.Fatalf("status %d: %s", code, msg)
	}
	h.runWorkers()
	if n := len(h.sessions()); n != 1 {
		t.Fatalf("%d sessions: the review comment started one of its own", n)
	}
	if rs := h.gh.ReviewCommentReactions(owner, repoName, id); !reacted(rs, render.TurnReaction) {
		t.Errorf("reactions on the review comment: %+v", rs)
	}
	if got := sv.turns(0); len(got) != 1 || got[0].Message != "use a table test here" || got[0].Author != "mara" {
		t.Errorf("the supervisor got %+v", got)
	}
}

// A continuation that pushes onto the pull request an earlier session of
// its conversation opened rewrites that pull request's turns list, so it
// is the whole conversation's (decision 0072); what a person wrote in the
// body stays.
func TestAContinuationOnInspectsPRRewritesItsTurns(t *testing.T) {
	h, ex := newSessionHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the flaky test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect also handle zero", sender: "mara"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv.turns(0)
	sv.turns(1)
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	first := h.onlySession()
	if first.Outcome != session.Changed || first.PRNumber == 0 {
		t.Fatalf("the first session: %s PR %d (%s)\n%s", first.Outcome, first.PRNumber, first.Detail, h.logs)
	}
	ctx := context.Background()
	c := h.client(t)
	pr, _, err := c.PullRequests.Get(ctx, owner, repoName, first.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pr.GetBody(), "`also handle zero`") {
		t.Fatalf("the first PR body lists no turns:\n%s", pr.GetBody())
	}
	// A reviewer notes something in the body, as people do.
	edited := pr.GetBody() + "\r\n\r\nReviewed by hand: looks right."
	if _, _, err := c.PullRequests.Edit(ctx, owner, repoName, first.PRNumber, &github.PullRequest{Body: github.String(edited)}); err != nil {
		t.Fatal(err)
	}

	h.clock.Advance(time.Minute)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect now add docs", sender: "ada", onPR: true, number: first.PRNumber})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv2 := h.claim(ex.last(t))
	spec2 := sv2.spec()
	h.runWorkers()
	sv2.upload(spec2, 0, contract.FileChange{Path: "DOCS.md", Mode: contract.ModeFile, Content: []byte("docs\n")})
	h.runWorkers()
	onPR, err := h.st.SessionsForTarget(ctx, repoID, first.PRNumber, 10)
	if err != nil || len(onPR) != 1 || onPR[0].Outcome != session.Changed || onPR[0].PRNumber != first.PRNumber {
		t.Fatalf("the continuation: %+v (%v)\n%s", onPR, err, h.logs)
	}
	pr, _, err = c.PullRequests.Get(ctx, owner, repoName, first.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	if strings.Count(body, "### Turns") != 1 || strings.Count(body, "`also handle zero`") != 1 || !strings.Contains(body, "| ada |") || !strings.Contains(body, "`now add docs`") {
		t.Errorf("the PR body's turns are not the conversation's:\n%s", body)
	}
	if !strings.Contains(body, "Reviewed by hand: looks right.") {
		t.Errorf("the reviewer's note is gone:\n%s", body)
	}
}

// A message in a review thread that the running session never took (it
// ended first) becomes a session of its own, continuing the conversation,
// that answers in that review thread, as a review comment asking when
// nothing ran does; the pull request's conversation gets nothing of it.
func TestAnUndeliveredReviewMessageAnswersInItsReviewThread(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect first")
	first := h.onlySession()
	root := h.gh.AddReviewComment(owner, repoName, prNumber, fakegithub.ReviewComment{User: "bob", Body: "this sum looks odd", Path: "calc.go", Line: 3, Side: "RIGHT"})
	body := "/inspect use a table test here"
	id := h.gh.AddReviewComment(owner, repoName, prNumber, fakegithub.ReviewComment{User: "mara", Body: body, Path: "calc.go", Line: 3, Side: "RIGHT", InReplyTo: root})
	var event map[string]any
	if err := json.Unmarshal(reviewCommentEvent(t, id, body, "mara", "calc.go", 3, ""), &event); err != nil {
		t.Fatal(err)
	}
	event["comment"].(map[string]any)["in_reply_to_id"] = float64(root)
	if code, msg := h.deliver("pull_request_review_comment", marshal(t, event)); code != 200 {
		t.Fatalf("status %d: %s", code, msg)
	}
	h.runWorkers()
	// The session ends before its supervisor asks for the message.
	sv.upload(spec, 0, fixedCalc)
	h.runWorkers()
	conversation := len(h.comments(prNumber))
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	r := next.Info().Review
	if next.TriggerKind != session.KindReviewComment || r == nil || r.CommentID != id || r.ThreadID() != root || r.Path != "calc.go" || r.Line != 3 || next.Info().Continues != first.ID {
		t.Fatalf("the undelivered message's session: %s %+v, continues %q\n%s", next.TriggerKind, r, next.Info().Continues, h.logs)
	}
	sv2 := h.claim(ex.last(t))
	spec2 := sv2.spec()
	if !slices.ContainsFunc(spec2.Context, func(c contract.ContextItem) bool {
		return c.Kind == contract.ContextReviewComment && strings.Contains(c.Source, "calc.go, line 3")
	}) {
		t.Errorf("the session's spec does not say where the comment sits: %+v", spec2.Context)
	}
	h.runWorkers()
	sv2.upload(spec2, 0, contract.FileChange{Path: "calc_test.go", Mode: contract.ModeFile, Content: []byte("package calc\n")})
	h.runWorkers()
	if next, _ = h.st.GetSession(context.Background(), next.ID); next.State() != session.Done {
		t.Fatalf("the message's session: %s/%s (%s)\n%s", next.State(), next.Outcome, next.Detail, h.logs)
	}
	var replies []fakegithub.ReviewComment
	for _, rc := range h.gh.ReviewComments(owner, repoName, prNumber) {
		if rc.User == h.gh.BotLogin() {
			replies = append(replies, rc)
		}
	}
	if len(replies) != 1 || replies[0].InReplyTo != root || !strings.Contains(replies[0].Body, "done: ") {
		t.Errorf("review thread replies %+v, want one in %d's thread with the outcome", replies, root)
	}
	if got := h.comments(prNumber); len(got) != conversation {
		t.Errorf("the message's session answered on the conversation: %+v", got[conversation:])
	}
}
