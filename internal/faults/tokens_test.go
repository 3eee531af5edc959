package faults_test

import (
	"context"
	"testing"
	"time"
)

// Installation tokens that expire within seconds (and are refused once
// expired) do not stop a session that runs longer: the app mints fresh
// ones for its own calls, and the supervisor's read token was used before
// it expired. The session reports its pull request.
func TestSessionOutlivesItsTokens(t *testing.T) {
	t.Parallel()
	// The stand-in agent runs longer than a token lives; no verify
	// commands, so the session is about tokens, not compile time.
	f := newFleet(t, fleetOptions{agent: []string{"sh", "-c", `sleep 4 && exec sh scripts/inspect-stand-in-agent.sh "$0"`}})
	const lifetime = 2 * time.Second
	f.gh.SetTokenLifetime(lifetime)
	f.issue(1)
	f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if d := f.gh.Deliver(ctx, "issue_comment", f.comment(1, "/inspect make TestAdd pass")); d.StatusCode != 200 {
		t.Fatalf("delivery: %d %s", d.StatusCode, d.Status)
	}
	s := f.waitDone(1, 3*time.Minute)[0]
	if s.Outcome != "changed" || f.created(repoPath("/pulls")) != 1 {
		t.Fatalf("session %s/%s with %d pull requests, want changed with one\n%s", s.Outcome, s.Reason, f.created(repoPath("/pulls")), f.logTails())
	}
	var expired []string
	for _, r := range f.gh.Requests() {
		if r.Auth == "installation" && r.Status == 401 {
			expired = append(expired, r.Method+" "+r.Path)
		}
	}
	if len(expired) != 0 {
		t.Errorf("requests presented an expired token: %v; tokens must be refreshed before use", expired)
	}
	if n := len(f.gh.MintedTokens()); n < 3 {
		t.Errorf("%d tokens minted; a session longer than a token's life needs fresh ones", n)
	}
}

// An installation suspended while its session runs: GitHub refuses to mint
// its tokens, so the change cannot be reported, and the session ends
// cleanly (error, api_refused) instead of retrying for ever; no work is
// left pending.
func TestSuspendedInstallationEndsTheSessionCleanly(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{agent: []string{"sh", "-c", `sleep 3 && exec sh scripts/inspect-stand-in-agent.sh "$0"`}})
	f.issue(1)
	r := f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if d := f.gh.Deliver(ctx, "issue_comment", f.comment(1, "/inspect have a look")); d.StatusCode != 200 {
		t.Fatalf("delivery: %d %s", d.StatusCode, d.Status)
	}
	if _, err := r.WaitLog(ctx, `"running the agent"`); err != nil {
		t.Fatalf("the agent never ran: %v\n%s", err, f.logTails())
	}
	f.gh.SuspendInstallation(installationID)
	s := f.waitDone(1, 90*time.Second)[0]
	if s.Outcome != "error" || s.Reason != "api_refused" {
		t.Errorf("session ended %s/%s, want error/api_refused\n%s", s.Outcome, s.Reason, f.logTails())
	}
}
