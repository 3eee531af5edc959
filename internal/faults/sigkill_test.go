package faults_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakegithub"
)

// crashPoint is a moment to SIGKILL a replica at: the stand-in holds the
// first request matching it, and the replica making it dies while it is
// held.
type crashPoint struct {
	name           string
	method, path   string
	body           []byte // the held request's body must contain this, when set
	wantRedispatch bool   // the attempt died with the replica
}

// One replica takes an /inspect command on an issue and is killed at each
// point in turn; a second replica, started after the crash, finishes the
// session. It ends done, with exactly one pull request (the sample repo's
// stand-in agent makes the failing test pass), a concluded check run, and
// one progress comment.
func TestSIGKILLAtEachPointStillEndsEverySession(t *testing.T) {
	t.Parallel()
	points := []crashPoint{
		{name: "after accept", method: "POST", path: "/repos/*/*/issues/comments/*/reactions"},
		{name: "during prepare", method: "GET", path: "/repos/*/*/collaborators/*/permission"},
		// The supervisor's read token, minted when it asks for it: the
		// attempt is running on the replica that dies.
		{name: "after dispatch", method: "POST", path: "/app/installations/*/access_tokens", body: []byte("repository_ids"), wantRedispatch: true},
		// GitHub receives the pull request and makes it; the replica dies
		// before it hears back.
		{name: "during report", method: "POST", path: "/repos/*/*/pulls"},
	}
	for _, p := range points {
		t.Run(strings.ReplaceAll(p.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, fleetOptions{sample: true})
			f.issue(1)
			arrived, release := f.gh.HoldNextWith(p.method, p.path, func(body []byte) bool {
				return p.body == nil || bytes.Contains(body, p.body)
			})
			defer release()
			doomed := f.start()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if d := f.gh.Deliver(ctx, "issue_comment", f.comment(1, "/inspect make TestAdd pass")); d.StatusCode != 200 {
				t.Fatalf("delivery: %d %s", d.StatusCode, d.Status)
			}
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatalf("the replica never reached %s\n%s", p.name, f.logTails())
			}
			doomed.Kill()
			// GitHub goes on with what it received.
			release()
			f.start()

			all := f.waitDone(1, 4*time.Minute)
			s := all[0]
			if s.Outcome != "changed" {
				t.Fatalf("session ended %s/%s, want changed\n%s", s.Outcome, s.Reason, f.logTails())
			}
			if p.wantRedispatch && s.Redispatches != 1 {
				t.Errorf("redispatches = %d, want 1: the attempt died with its replica", s.Redispatches)
			}
			if n := f.created(repoPath("/pulls")); n != 1 {
				t.Errorf("pull requests created = %d, want 1", n)
			}
			runs := f.gh.CheckRuns(owner, repoName)
			if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
				t.Errorf("check runs = %+v, want one concluded success", runs)
			}
			if n := len(botComments(f.gh, 1)); n != 1 {
				t.Errorf("bot comments on #1 = %d, want 1 (the progress comment)", n)
			}
		})
	}
}

func botComments(gh *fakegithub.Server, number int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range gh.Comments(owner, repoName, number) {
		if c.User == gh.AppSlug()+"[bot]" {
			out = append(out, c)
		}
	}
	return out
}

// A session's attempt dies with its replica twice: the first time it is
// re-dispatched on a live replica, the second time it ends error
// (runner_lost) at once, with one reply and no pull request, instead of
// waiting out its deadline.
func TestAnAttemptLostTwiceEndsInError(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{agent: []string{"sh", "-c", "sleep 60"}})
	f.issue(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mint := func(body []byte) bool { return bytes.Contains(body, []byte("repository_ids")) }
	// Each replica dies while its supervisor asks for the read token.
	arrived, release := f.gh.HoldNextWith("POST", "/app/installations/*/access_tokens", mint)
	doomed := f.start()
	if d := f.gh.Deliver(ctx, "issue_comment", f.comment(1, "/inspect take a while")); d.StatusCode != 200 {
		t.Fatalf("delivery: %d %s", d.StatusCode, d.Status)
	}
	for death := 1; death <= 2; death++ {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatalf("death %d: the supervisor never asked for its token\n%s", death, f.logTails())
		}
		next, nextRelease := f.gh.HoldNextWith("POST", "/app/installations/*/access_tokens", mint)
		doomed.Kill()
		release()
		arrived, release = next, nextRelease
		doomed = f.start()
	}
	defer release()
	s := f.waitDone(1, 3*time.Minute)[0]
	if s.Outcome != "error" || s.Reason != "runner_lost" || s.Redispatches != 1 {
		t.Errorf("session ended %s/%s after %d re-dispatches, want error/runner_lost after 1\n%s", s.Outcome, s.Reason, s.Redispatches, f.logTails())
	}
	if n := f.created(repoPath("/pulls")); n != 0 {
		t.Errorf("pull requests created = %d, want 0", n)
	}
	if c := botComments(f.gh, 1); len(c) != 1 || !strings.Contains(c[0].Body, "retry") {
		t.Errorf("bot comments = %+v, want one saying how to retry", c)
	}
}
