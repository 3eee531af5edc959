package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// Issue 19's acceptance, end to end on the local executor, against small
// limits the test sets: an agent that spawns up to 10,000 processes, one
// that holds 1 GiB in memory, one that writes 1 GiB into the workspace.
// Each session ends error with reason limit_exceeded and a reply naming
// the limit and its value; the app stays healthy, and the next session on
// the same issue runs to a change.
func TestRealSessionOverASandboxLimitEndsNamingItAndTheNextRuns(t *testing.T) {
	lx := newLocalExecutor(t,
		"--limit-pids", "64", "--limit-memory-bytes", "268435456", "--limit-tmp-bytes", "67108864", "--limit-workspace-bytes", "134217728")
	h := newHarness(t)
	h.runOn(lx)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"spawn.sh": "i=0; while [ $i -lt 10000 ]; do sleep 60 & i=$((i+1)); done; wait\n",
		// The shell holds the whole command substitution in memory.
		"alloc.sh": "x=$(head -c 1073741824 /dev/zero | tr '\\0' a); echo ${#x}\n",
		"write.sh": "dd if=/dev/zero of=big bs=1M count=1024\n",
	}, "agents that go over a limit")
	seen := map[string]bool{}
	for _, tc := range []struct{ script, words string }{
		{"spawn.sh", "limit of 64 processes and threads"},
		{"alloc.sh", "memory limit of 256 MiB"},
		{"write.sh", "workspace disk limit of 128 MiB"},
	} {
		h.gh.CommitFiles(owner, repoName, "main", map[string]string{
			".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"" + tc.script + "\"]\n",
		}, "the agent runs "+tc.script)
		sess := h.runAnotherSession(lx, commentOpts{body: "/inspect run " + tc.script}, seen)
		if sess.Outcome != session.Errored || sess.Reason != "limit_exceeded" {
			t.Fatalf("%s: session = %s/%s (%s): %s\n%s", tc.script, sess.State(), sess.Outcome, sess.Reason, sess.Detail, h.logs)
		}
		if !strings.Contains(sess.Detail, tc.words) {
			t.Errorf("%s: the reply does not name the limit and its value (%q): %q", tc.script, tc.words, sess.Detail)
		}
	}

	// The next session, the sample repository's stand-in agent with a
	// verify that compiles nothing, runs to a change under the same limits.
	files := examples.SampleRepo()
	files[".github/inspect.yml"] = "agent:\n  preset: command\n  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\nverify: []\n"
	h.gh.CommitFiles(owner, repoName, "main", files, "the sample repository")
	if next := h.runAnotherSession(lx, commentOpts{body: "/inspect make TestAdd pass"}, seen); next.Outcome != session.Changed {
		t.Fatalf("the next session = %s/%s: %s\n%s", next.State(), next.Outcome, next.Detail, h.logs)
	}
}

// runAnotherSession comments (as o says) on the issue, runs the new session's
// attempt to its end and returns the session; seen holds the ids of the
// sessions before it, and gets its own.
func (h *harness) runAnotherSession(lx *local.Executor, o commentOpts, seen map[string]bool) store.Session {
	h.t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(o)); code != 200 {
		h.t.Fatal(code)
	}
	h.runWorkers()
	var sess store.Session
	for _, s := range h.sessions() {
		if !seen[s.ID] {
			sess = s
		}
	}
	if sess.AttemptID == "" {
		h.t.Fatalf("no new session started for %q: %+v\n%s", o.body, h.sessions(), h.logs)
	}
	seen[sess.ID] = true
	a, err := h.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := lx.Wait(ctx, a.ExternalID); err != nil {
		h.t.Fatalf("inspect runner: %v\n%s", err, h.logs)
	}
	h.runWorkers()
	sess, err = h.st.GetSession(context.Background(), sess.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return sess
}
