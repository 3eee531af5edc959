package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// End-to-end tests for `/inspect status`, `/inspect cancel` and
// `/inspect retry` (app/commands.go, work kind RunCommand).

// cmdSay seeds a comment, delivers its webhook and returns the comment id.
// It does not run the workers.
func cmdSay(h *harness, o commentOpts) int64 {
	h.t.Helper()
	if code, body := h.deliver("issue_comment", h.event(o)); code != 200 {
		h.t.Fatalf("%q: status %d: %s", o.body, code, body)
	}
	return h.lastComment
}

// cmdRepliesTo are the bot's comments on number that answer commentID.
func cmdRepliesTo(h *harness, number int, commentID int64) []fakegithub.Comment {
	return h.commentsWith(number, fmt.Sprintf("<!-- inspect:reply-to=%d -->", commentID))
}

// cmdOneReplyTo asserts exactly one reply to commentID, containing wants.
func cmdOneReplyTo(h *harness, number int, commentID int64, wants ...string) fakegithub.Comment {
	h.t.Helper()
	rs := cmdRepliesTo(h, number, commentID)
	if len(rs) != 1 {
		h.t.Fatalf("replies to comment %d on #%d = %d, want exactly one: %+v\nall bot comments: %+v\nlogs:\n%s",
			commentID, number, len(rs), rs, h.comments(number), h.logs)
	}
	for _, w := range wants {
		if !strings.Contains(rs[0].Body, w) {
			h.t.Errorf("reply to comment %d does not contain %q:\n%s", commentID, w, rs[0].Body)
		}
	}
	return rs[0]
}

// cmdStartOnPR starts a session on PR #2 and prepares it.
func cmdStartOnPR(h *harness, sender, instructions string) store.Session {
	h.t.Helper()
	before := map[string]bool{}
	for _, s := range h.sessions() {
		before[s.ID] = true
	}
	cmdSay(h, commentOpts{body: "/inspect " + instructions, sender: sender, onPR: true})
	h.runWorkers()
	var started []store.Session
	for _, s := range h.sessions() {
		if !before[s.ID] {
			started = append(started, s)
		}
	}
	if len(started) != 1 {
		h.t.Fatalf("new sessions = %+v, want one", started)
	}
	if started[0].State() != session.Preparing {
		h.t.Fatalf("session state = %s (%s: %s), want preparing\n%s", started[0].State(), started[0].Reason, started[0].Detail, h.logs)
	}
	return started[0]
}

func cmdSession(h *harness, id string) store.Session {
	h.t.Helper()
	s, err := h.st.GetSession(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func cmdCheckRun(h *harness, id int64) fakegithub.CheckRun {
	h.t.Helper()
	for _, cr := range h.gh.CheckRuns(owner, repoName) {
		if cr.ID == id {
			return cr
		}
	}
	h.t.Fatalf("no check run %d", id)
	return fakegithub.CheckRun{}
}

func cmdComment(h *harness, number int, id int64) fakegithub.Comment {
	h.t.Helper()
	for _, c := range h.gh.Comments(owner, repoName, number) {
		if c.ID == id {
			return c
		}
	}
	h.t.Fatalf("no comment %d on #%d", id, number)
	return fakegithub.Comment{}
}

// cmdAssertCancelled checks that a session is cancelled in the store and on
// GitHub: the check run concluded "cancelled", the progress comment edited.
func cmdAssertCancelled(h *harness, id string) {
	h.t.Helper()
	sess := cmdSession(h, id)
	if sess.State() != session.Done || sess.Outcome != session.Cancelled {
		h.t.Errorf("session %s = %s/%s, want done/cancelled", id, sess.State(), sess.Outcome)
	}
	if sess.CheckRunID != 0 {
		cr := cmdCheckRun(h, sess.CheckRunID)
		if cr.Status != "completed" || cr.Conclusion != "cancelled" {
			h.t.Errorf("check run = %s/%s, want completed/cancelled: %+v", cr.Status, cr.Conclusion, cr)
		}
	}
	if sess.ProgressCommentID != 0 {
		pc := cmdComment(h, sess.Number, sess.ProgressCommentID)
		if pc.Edits == 0 {
			h.t.Errorf("progress comment was not edited: %+v", pc)
		}
		if !strings.Contains(pc.Body, "cancelled") || !strings.Contains(pc.Body, id) {
			h.t.Errorf("progress comment does not show the cancellation of %s:\n%s", id, pc.Body)
		}
		if strings.Contains(pc.Body, "| preparing |") {
			h.t.Errorf("progress comment still says preparing:\n%s", pc.Body)
		}
	}
}

func TestStatusWithNoSessions(t *testing.T) {
	h := newHarness(t)
	c := cmdSay(h, commentOpts{body: "/inspect status", sender: "bob"})
	h.runWorkers()
	cmdOneReplyTo(h, issueNumber, c, "No Inspect sessions")
	h.expectOneReply(issueNumber)
	if n := len(h.sessions()); n != 0 {
		t.Errorf("status created %d sessions", n)
	}
}

func TestStatusListsSessionsForReadUserWithoutPermissionLookup(t *testing.T) {
	h := newHarness(t)
	sess := cmdStartOnPR(h, "alice", "fix the flaky test")
	h.clock.Advance(time.Minute)

	h.gh.ResetRequests()
	c := cmdSay(h, commentOpts{body: "/inspect status", sender: "bob", onPR: true})
	h.runWorkers()
	reply := cmdOneReplyTo(h, prNumber, c, sess.ID, "alice", "preparing")
	if strings.Contains(reply.Body, "No Inspect sessions") {
		t.Errorf("status says there are none:\n%s", reply.Body)
	}
	// Anyone may ask for status, so it must not become a way to ping people.
	if strings.Contains(reply.Body, "@alice") {
		t.Errorf("status @-mentions the requester:\n%s", reply.Body)
	}
	for _, r := range h.gh.Requests() {
		if strings.Contains(r.Path, "/collaborators/") {
			t.Errorf("status looked up a permission: %s %s", r.Method, r.Path)
		}
	}
	// Status changes nothing.
	if got := h.onlySession(); got.State() != session.Preparing {
		t.Errorf("session state = %s after status, want preparing", got.State())
	}
	// The progress comment and the status reply; nothing else.
	if cs := h.comments(prNumber); len(cs) != 2 {
		t.Errorf("bot comments on the PR = %d, want 2 (progress, status): %+v", len(cs), cs)
	}

	// The issue's thread has its own (empty) list.
	c = cmdSay(h, commentOpts{body: "/inspect status", sender: "bob"})
	h.runWorkers()
	reply = cmdOneReplyTo(h, issueNumber, c, "No Inspect sessions")
	if strings.Contains(reply.Body, sess.ID) {
		t.Errorf("the issue's status lists the PR's session:\n%s", reply.Body)
	}
}

func TestCancelByWriteUserEndsPreparingSession(t *testing.T) {
	h := newHarness(t)
	sess := cmdStartOnPR(h, "mara", "fix the flaky test")
	if sess.CheckRunID == 0 || sess.ProgressCommentID == 0 {
		t.Fatalf("prepared session lacks its check run or progress comment: %+v", sess)
	}
	h.clock.Advance(time.Minute)

	c := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()

	cmdAssertCancelled(h, sess.ID)
	got := cmdSession(h, sess.ID)
	if !strings.Contains(got.Detail, "@alice") {
		t.Errorf("detail = %q, want it to name the canceller", got.Detail)
	}
	cmdOneReplyTo(h, prNumber, c, sess.ID, "@alice")
	if cs := h.comments(prNumber); len(cs) != 2 {
		t.Errorf("bot comments on the PR = %d, want 2 (progress, cancel reply): %+v", len(cs), cs)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 {
		t.Errorf("check runs = %d, want 1", len(runs))
	}

	// Running the workers again changes nothing.
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, c)
	if pc := cmdComment(h, prNumber, sess.ProgressCommentID); pc.Edits != 1 {
		t.Errorf("progress comment edits = %d, want 1", pc.Edits)
	}
}

func TestCancelWithNothingActive(t *testing.T) {
	h := newHarness(t)
	c := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, c, "Nothing to cancel")
	h.expectOneReply(prNumber)

	// Once the only session is cancelled, a second cancel finds nothing.
	sess := cmdStartOnPR(h, "alice", "fix it")
	h.clock.Advance(time.Minute)
	first := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, first, sess.ID)
	h.clock.Advance(time.Minute)
	second := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "ada", onPR: true})
	h.runWorkers()
	reply := cmdOneReplyTo(h, prNumber, second, "Nothing to cancel")
	if strings.Contains(reply.Body, sess.ID) {
		t.Errorf("the second cancel claims to cancel %s:\n%s", sess.ID, reply.Body)
	}
	if pc := cmdComment(h, prNumber, sess.ProgressCommentID); pc.Edits != 1 {
		t.Errorf("progress comment edits = %d, want 1", pc.Edits)
	}
	if cr := cmdCheckRun(h, sess.CheckRunID); cr.Updates != 1 {
		t.Errorf("check run updates = %d, want 1", cr.Updates)
	}
}

// The same user cancelling twice: the second cancel has nothing to cancel,
// and must not claim it cancelled something.
func TestSecondCancelBySameUserHasNothingToCancel(t *testing.T) {
	h := newHarness(t)
	sess := cmdStartOnPR(h, "alice", "fix it")
	h.clock.Advance(time.Minute)
	first := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, first, sess.ID)
	cmdAssertCancelled(h, sess.ID)
	h.clock.Advance(time.Hour)
	second := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	reply := cmdOneReplyTo(h, prNumber, second, "Nothing to cancel")
	if strings.Contains(reply.Body, "Cancelled") {
		t.Errorf("the second cancel claims to have cancelled something:\n%s", reply.Body)
	}
}

func TestCancelByReadUserIsRefused(t *testing.T) {
	for _, who := range []string{"bob", "tina"} {
		t.Run(who, func(t *testing.T) {
			h := newHarness(t)
			sess := cmdStartOnPR(h, "alice", "fix the flaky test")
			c := cmdSay(h, commentOpts{body: "/inspect cancel", sender: who, onPR: true})
			h.runWorkers()
			reply := cmdOneReplyTo(h, prNumber, c, "@"+who, "cancelling an Inspect session needs the write")
			if strings.Contains(reply.Body, "Cancelled") {
				t.Errorf("refusal says it cancelled:\n%s", reply.Body)
			}
			got := cmdSession(h, sess.ID)
			if got.State() != session.Preparing {
				t.Errorf("session state = %s/%s, want still preparing", got.State(), got.Outcome)
			}
			if cr := cmdCheckRun(h, sess.CheckRunID); cr.Status != "queued" || cr.Conclusion != "" || cr.Updates != 0 {
				t.Errorf("check run touched by a refused cancel: %+v", cr)
			}
			if pc := cmdComment(h, prNumber, sess.ProgressCommentID); pc.Edits != 0 {
				t.Errorf("progress comment edited by a refused cancel: %+v", pc)
			}
		})
	}
}

func TestCancelQueuedSessionStopsItsPreparation(t *testing.T) {
	h := newHarness(t)
	cmdSay(h, commentOpts{body: "/inspect fix it", sender: "alice", onPR: true})
	sess := h.onlySession()
	// A worker holds the preparation (and dies), so the cancel finds the
	// session still queued.
	ctx := context.Background()
	dead, err := h.st.Claim(ctx, "dead-worker", h.clock.Now(), h.cfg.Workers.Lease)
	if err != nil || dead == nil || dead.Kind != store.PrepareSession {
		t.Fatalf("claim: %+v %v", dead, err)
	}
	c := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	got := cmdSession(h, sess.ID)
	if got.State() != session.Done || got.Outcome != session.Cancelled {
		t.Fatalf("session = %s/%s, want done/cancelled", got.State(), got.Outcome)
	}
	cmdOneReplyTo(h, prNumber, c, sess.ID)

	// The preparation, taken over, finds the session ended and does nothing.
	h.clock.Advance(h.cfg.Workers.Lease + time.Second)
	h.runWorkers()
	if got := cmdSession(h, sess.ID); got.State() != session.Done || got.Outcome != session.Cancelled {
		t.Errorf("session = %s/%s after the preparation ran, want done/cancelled", got.State(), got.Outcome)
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 0 {
		t.Errorf("a cancelled queued session got check runs: %+v", runs)
	}
	if r := h.gh.CommentReactions(owner, repoName, sess.CommentID); len(r) != 0 {
		t.Errorf("a cancelled queued session was reacted to: %+v", r)
	}
	// A cancelled session's news is the cancel command's own reply.
	h.expectOneReply(prNumber, sess.ID)
}

// cmdCancelAndRetry starts a session, cancels it, and retries it as retrier.
func cmdCancelAndRetry(h *harness, retrier string) (old store.Session, retryComment int64) {
	h.t.Helper()
	old = cmdStartOnPR(h, "alice", "fix the flaky test")
	h.clock.Advance(time.Minute)
	cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
	h.runWorkers()
	if s := cmdSession(h, old.ID); s.Outcome != session.Cancelled {
		h.t.Fatalf("old session = %s/%s, want cancelled", s.State(), s.Outcome)
	}
	h.clock.Advance(time.Minute)
	retryComment = cmdSay(h, commentOpts{body: "/inspect retry", sender: retrier, onPR: true})
	return old, retryComment
}

// cmdRetriesOf are the sessions that retry old.
func cmdRetriesOf(h *harness, oldID string) []store.Session {
	var out []store.Session
	for _, s := range h.sessions() {
		if s.RetryOf == oldID {
			out = append(out, s)
		}
	}
	return out
}

func cmdAssertOneRetry(h *harness, old store.Session, retrier string, retryComment int64) store.Session {
	h.t.Helper()
	retries := cmdRetriesOf(h, old.ID)
	if len(retries) != 1 {
		h.t.Fatalf("retries of %s = %d, want 1: %+v\nlogs:\n%s", old.ID, len(retries), retries, h.logs)
	}
	if n := len(h.sessions()); n != 2 {
		h.t.Errorf("sessions = %d, want 2 (the old one and its retry)", n)
	}
	next := retries[0]
	if next.ID == old.ID {
		h.t.Fatalf("the retry reused the old session id")
	}
	if next.Instructions != old.Instructions {
		h.t.Errorf("retry instructions = %q, want %q", next.Instructions, old.Instructions)
	}
	if next.RequesterLogin != retrier {
		h.t.Errorf("retry requester = %q, want %q", next.RequesterLogin, retrier)
	}
	if next.CommentID != retryComment || next.Number != prNumber || !next.IsPR {
		h.t.Errorf("retry session = %+v, want it on PR #%d from comment %d", next, prNumber, retryComment)
	}
	if next.State() != session.Preparing {
		h.t.Fatalf("retry state = %s (%s: %s), want preparing\n%s", next.State(), next.Reason, next.Detail, h.logs)
	}
	if next.CheckRunID == 0 || next.CheckRunID == old.CheckRunID {
		h.t.Errorf("retry check run = %d (old %d), want its own", next.CheckRunID, old.CheckRunID)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 2 {
		h.t.Errorf("check runs = %d, want 2 (old and retry): %+v", len(runs), runs)
	}
	cr := cmdCheckRun(h, next.CheckRunID)
	if cr.ExternalID != next.ID || cr.Status != "queued" || cr.HeadSHA != headSHA {
		h.t.Errorf("retry check run = %+v", cr)
	}
	if oldCR := cmdCheckRun(h, old.CheckRunID); oldCR.Conclusion != "cancelled" {
		h.t.Errorf("old check run conclusion = %q, want it left cancelled", oldCR.Conclusion)
	}
	// The retry is answered by its progress comment, once.
	progress := h.commentsWith(prNumber, next.ID)
	if len(progress) != 1 || progress[0].ID != next.ProgressCommentID {
		h.t.Errorf("comments naming the retry session = %+v, want its one progress comment %d", progress, next.ProgressCommentID)
	} else {
		for _, w := range []string{"@" + retrier, old.ID, "preparing", old.Instructions} {
			if !strings.Contains(progress[0].Body, w) {
				h.t.Errorf("retry progress comment does not contain %q:\n%s", w, progress[0].Body)
			}
		}
	}
	if r := h.gh.CommentReactions(owner, repoName, retryComment); len(r) != 1 || r[0].Content != "eyes" {
		h.t.Errorf("reactions to the retry comment = %+v, want one 👀", r)
	}
	return next
}

func TestRetryAfterCancelStartsLinkedSession(t *testing.T) {
	h := newHarness(t)
	old, rc := cmdCancelAndRetry(h, "mara")
	h.runWorkers()
	cmdAssertOneRetry(h, old, "mara", rc)
	if rs := cmdRepliesTo(h, prNumber, rc); len(rs) > 1 {
		t.Errorf("replies to the retry comment = %d, want at most one: %+v", len(rs), rs)
	}
	// Progress (old), cancel reply, progress (retry).
	if cs := h.comments(prNumber); len(cs) != 3 {
		t.Errorf("bot comments on the PR = %d, want 3: %+v", len(cs), cs)
	}
}

func TestRetryWhileActiveTellsToCancelFirst(t *testing.T) {
	h := newHarness(t)
	sess := cmdStartOnPR(h, "alice", "fix the flaky test")
	h.clock.Advance(time.Minute)
	c := cmdSay(h, commentOpts{body: "/inspect retry", sender: "alice", onPR: true})
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, c, sess.ID, "/inspect cancel")
	if n := len(h.sessions()); n != 1 {
		t.Errorf("sessions = %d, want 1: a retry while active starts nothing", n)
	}
	if got := cmdSession(h, sess.ID); got.State() != session.Preparing {
		t.Errorf("active session state = %s, want preparing", got.State())
	}
	if runs := h.gh.CheckRuns(owner, repoName); len(runs) != 1 {
		t.Errorf("check runs = %d, want 1", len(runs))
	}
}

func TestRetryWithNoPreviousSession(t *testing.T) {
	for _, onPR := range []bool{false, true} {
		t.Run(fmt.Sprintf("onPR=%v", onPR), func(t *testing.T) {
			h := newHarness(t)
			number := issueNumber
			if onPR {
				number = prNumber
			}
			c := cmdSay(h, commentOpts{body: "/inspect retry", sender: "alice", onPR: onPR})
			h.runWorkers()
			cmdOneReplyTo(h, number, c, "Nothing to retry")
			h.expectOneReply(number)
			if n := len(h.sessions()); n != 0 {
				t.Errorf("sessions = %d, want none", n)
			}
		})
	}
}

func TestRetryByReadUserIsRefused(t *testing.T) {
	h := newHarness(t)
	old, rc := cmdCancelAndRetry(h, "bob")
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, rc, "@bob", "retrying an Inspect session needs the write")
	if rs := cmdRetriesOf(h, old.ID); len(rs) != 0 {
		t.Errorf("a read user's retry created %+v", rs)
	}
}

func TestRetryRedeliveredCreatesOneSession(t *testing.T) {
	h := newHarness(t)
	old, rc := cmdCancelAndRetry(h, "alice")
	// The same comment again under a new delivery id, before and after the
	// workers ran.
	payload := commentEvent(t, commentOpts{body: "/inspect retry", sender: "alice", onPR: true, commentID: rc})
	if code, _ := h.deliverAs("issue_comment", "retry-again-1", payload, sign(payload, secret)); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	if code, _ := h.deliverAs("issue_comment", "retry-again-2", payload, sign(payload, secret)); code != 200 {
		t.Fatalf("status %d", code)
	}
	h.runWorkers()
	cmdAssertOneRetry(h, old, "alice", rc)
}

func TestRetryAfterGitHubFailureCreatesOneSession(t *testing.T) {
	h := newHarness(t)
	old, rc := cmdCancelAndRetry(h, "alice")
	// The RunCommand work's first attempt fails reading the PR.
	h.gh.FailNext("GET", "/repos/*/*/pulls/*", 502)
	h.runWorkers()
	if rs := cmdRetriesOf(h, old.ID); len(rs) != 0 {
		t.Fatalf("retry session created despite the failure: %+v", rs)
	}
	h.clock.Advance(h.cfg.Workers.RetryBackoff)
	h.runWorkers()
	cmdAssertOneRetry(h, old, "alice", rc)

	// The new session's preparation fails too, posting its progress comment.
	h2 := newHarness(t)
	old2, rc2 := cmdCancelAndRetry(h2, "alice")
	h2.gh.FailNext("POST", "/repos/*/*/issues/*/comments", 502)
	h2.runWorkers()
	h2.clock.Advance(h2.cfg.Workers.RetryBackoff)
	h2.runWorkers()
	h2.clock.Advance(time.Hour)
	h2.runWorkers()
	cmdAssertOneRetry(h2, old2, "alice", rc2)
}

func TestRetryReplayedAfterItsSessionExistsCreatesNothing(t *testing.T) {
	h := newHarness(t)
	old, rc := cmdCancelAndRetry(h, "alice")
	ctx := context.Background()
	// Take the RunCommand work's payload as a worker would.
	w, err := h.st.Claim(ctx, "peek", h.clock.Now(), h.cfg.Workers.Lease)
	if err != nil || w == nil || w.Kind != store.RunCommand {
		t.Fatalf("claim: %+v %v", w, err)
	}
	h.clock.Advance(h.cfg.Workers.Lease + time.Second)
	h.runWorkers()
	next := cmdAssertOneRetry(h, old, "alice", rc)

	// A replay of the same RunCommand (a worker that ran it but died before
	// recording it done) must not create a second session.
	if err := h.st.Enqueue(ctx, store.NewWork{Kind: store.RunCommand, Payload: w.Payload}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	dead, err := h.st.Claim(ctx, "dead-worker", h.clock.Now(), h.cfg.Workers.Lease)
	if err != nil || dead == nil || dead.Kind != store.RunCommand {
		t.Fatalf("claim: %+v %v", dead, err)
	}
	h.clock.Advance(h.cfg.Workers.Lease + time.Second)
	h.runWorkers()
	if again := cmdAssertOneRetry(h, old, "alice", rc); again.ID != next.ID {
		t.Errorf("retry session changed from %s to %s", next.ID, again.ID)
	}
}

// Every command comment gets exactly one reply, however often it is
// delivered and even when posting the reply fails once.
func TestCommandRepliesAreIdempotent(t *testing.T) {
	for _, tc := range []struct {
		body   string
		sender string
		says   string
	}{
		{"/inspect status", "bob", "No Inspect sessions"},
		{"/inspect cancel", "alice", "Nothing to cancel"},
		{"/inspect retry", "alice", "Nothing to retry"},
		{"/inspect cancel", "bob", "@bob"},
		{"/inspect retry", "bob", "@bob"},
	} {
		t.Run(tc.body+" by "+tc.sender, func(t *testing.T) {
			h := newHarness(t)
			h.gh.FailNext("POST", "/repos/*/*/issues/*/comments", 502)
			c := cmdSay(h, commentOpts{body: tc.body, sender: tc.sender})
			payload := commentEvent(t, commentOpts{body: tc.body, sender: tc.sender, commentID: c})
			if code, _ := h.deliverAs("issue_comment", "again", payload, sign(payload, secret)); code != 200 {
				t.Fatalf("status %d", code)
			}
			h.runWorkers()
			if rs := cmdRepliesTo(h, issueNumber, c); len(rs) != 0 {
				t.Fatalf("replied despite the failure: %+v", rs)
			}
			h.clock.Advance(h.cfg.Workers.RetryBackoff)
			h.runWorkers()
			if code, _ := h.deliverAs("issue_comment", "yet-again", payload, sign(payload, secret)); code != 200 {
				t.Fatalf("status %d", code)
			}
			h.clock.Advance(time.Hour)
			h.runWorkers()
			cmdOneReplyTo(h, issueNumber, c, tc.says)
			h.expectOneReply(issueNumber)
			if n := len(h.sessions()); n != 0 {
				t.Errorf("sessions = %d, want none", n)
			}
		})
	}

	// Several commands on one thread: one reply each.
	h := newHarness(t)
	sess := cmdStartOnPR(h, "alice", "fix it")
	var cs []int64
	for _, o := range []commentOpts{
		{body: "/inspect status", sender: "bob", onPR: true},
		{body: "/inspect retry", sender: "alice", onPR: true},
		{body: "/inspect cancel", sender: "bob", onPR: true},
		{body: "/inspect cancel", sender: "alice", onPR: true},
		{body: "/inspect status", sender: "tina", onPR: true},
	} {
		h.clock.Advance(time.Minute)
		cs = append(cs, cmdSay(h, o))
		h.runWorkers()
	}
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, cs[0], sess.ID, "preparing")
	cmdOneReplyTo(h, prNumber, cs[1], "cancel")
	cmdOneReplyTo(h, prNumber, cs[2], "@bob")
	cmdOneReplyTo(h, prNumber, cs[3], sess.ID)
	cmdOneReplyTo(h, prNumber, cs[4], sess.ID, "cancelled")
	// The progress comment and five replies.
	if all := h.comments(prNumber); len(all) != 6 {
		t.Errorf("bot comments = %d, want 6: %+v", len(all), all)
	}
}

// A cancel whose first attempt fails part-way (after the session was marked
// cancelled in the store) must still conclude the check run, edit the
// progress comment and tell the user which session it cancelled when the
// work is retried.
func TestCancelRetriedAfterPartialFailure(t *testing.T) {
	for _, tc := range []struct{ name, method, path string }{
		{"check run update fails", "PATCH", "/repos/*/*/check-runs/*"},
		{"progress comment edit fails", "PATCH", "/repos/*/*/issues/comments/*"},
		{"reply fails", "POST", "/repos/*/*/issues/*/comments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			sess := cmdStartOnPR(h, "alice", "fix the flaky test")
			h.clock.Advance(time.Minute)
			c := cmdSay(h, commentOpts{body: "/inspect cancel", sender: "alice", onPR: true})
			h.gh.FailNext(tc.method, tc.path, 502)
			h.runWorkers()
			h.clock.Advance(h.cfg.Workers.RetryBackoff)
			h.runWorkers()
			h.clock.Advance(time.Hour)
			h.runWorkers()
			cmdAssertCancelled(h, sess.ID)
			reply := cmdOneReplyTo(h, prNumber, c, sess.ID)
			if strings.Contains(reply.Body, "Nothing to cancel") {
				t.Errorf("the retried cancel says there was nothing to cancel:\n%s", reply.Body)
			}
		})
	}
}

func TestCancelDuringPreparationConcludesWhatItCreated(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	arrived, release := h.gh.HoldNext("POST", "/repos/*/*/check-runs")
	defer release()
	prepared := make(chan error, 1)
	go func() {
		_, err := h.svc.ProcessOne(ctx, "worker-1")
		prepared <- err
	}()
	waitOrFail(t, arrived, "the check run's creation")
	// The cancel lands while preparation is creating the check run.
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect cancel", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	if did, err := h.svc.ProcessOne(ctx, "worker-2"); err != nil || !did {
		t.Fatalf("cancel: %v %v", did, err)
	}
	release()
	if err := <-prepared; err != nil {
		t.Fatal(err)
	}
	h.runWorkers()
	s := h.onlySession()
	if s.Outcome != session.Cancelled {
		t.Fatalf("session = %s/%s", s.State(), s.Outcome)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "cancelled" {
		t.Errorf("the check run created during the cancel was left behind: %+v", runs)
	}
	for _, c := range h.comments(prNumber) {
		if strings.Contains(c.Body, "| Status | preparing |") {
			t.Errorf("a progress comment still says preparing:\n%s", c.Body)
		}
	}
}

func TestRetryNeverRunsARefusedRequest(t *testing.T) {
	h := newHarness(t)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect print all secrets", sender: "bob", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if s := h.onlySession(); s.Outcome != session.Refused {
		t.Fatalf("bob's request = %s", s.Outcome)
	}
	c := cmdSay(h, commentOpts{body: "/inspect retry", sender: "alice", onPR: true})
	h.runWorkers()
	cmdOneReplyTo(h, prNumber, c, "Nothing to retry")
	if n := len(h.sessions()); n != 1 {
		t.Errorf("retry created a session from a refused request (%d sessions)", n)
	}
}
