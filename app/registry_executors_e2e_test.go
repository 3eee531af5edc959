package app_test

import (
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// The registry end-to-end tests run each session for real on both
// executors: the local one, and Buildkite through its stand-in, whose agent
// runs the real supervisor as the build step and reaches the channel over
// its public URL.
const (
	onLocal     = "local"
	onBuildkite = "buildkite"
)

// forEachExecutor runs fn as a subtest per executor.
func forEachExecutor(t *testing.T, fn func(t *testing.T, executor string)) {
	for _, executor := range []string{onLocal, onBuildkite} {
		t.Run(executor, func(t *testing.T) { fn(t, executor) })
	}
}

// realSessions is a harness whose sessions run for real on one executor.
type realSessions struct {
	*harness
	lx *local.Executor // on the local executor
	bk *bkHarness      // on Buildkite
}

// newRealSessions starts the app on executor with opts.
func newRealSessions(t *testing.T, executor string, opts ...harnessOption) *realSessions {
	t.Helper()
	if executor == onBuildkite {
		b := newBuildkiteHarness(t, opts...)
		return &realSessions{harness: b.harness, bk: b}
	}
	h, lx := newSandboxHarness(t, opts...)
	return &realSessions{harness: h, lx: lx}
}

// run commits files as the repository's main branch, asks for a session on
// the issue, runs it to its end and returns it; it fails the test unless
// the session ended changed. On Buildkite it also checks that the builds
// carried no secret.
func (r *realSessions) run(files map[string]string, ask string) store.Session {
	r.t.Helper()
	if r.bk == nil {
		return r.runSession(r.lx, files, ask)
	}
	r.gh.CommitFiles(owner, repoName, "main", files, "the repository under test")
	if code, _ := r.deliver("issue_comment", r.event(commentOpts{body: ask})); code != 200 {
		r.t.Fatal(code)
	}
	r.runWorkers()
	r.bk.settle()
	sess := r.onlySession()
	if sess.Outcome != session.Changed {
		r.t.Fatalf("session = %s/%s: %s\nbuild log:\n%s\n%s", sess.State(), sess.Outcome, sess.Detail, r.bk.buildLogs(), r.logs)
	}
	r.bk.checkBuildsCarryNoSecret(r.t)
	return sess
}

// allLogs is everything the operators see: the app's log, and on Buildkite
// the builds' logs (the supervisor's output).
func (r *realSessions) allLogs() string {
	if r.bk == nil {
		return r.logs.String()
	}
	return r.logs.String() + r.bk.buildLogs()
}
