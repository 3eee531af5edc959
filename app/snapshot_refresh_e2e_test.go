package app_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/session"
)

// refreshingSnapshotConfig is the sample repository's config with a
// snapshot: a setup that fills one cache, keyed by deps.lock.
const refreshingSnapshotConfig = "agent: {preset: command, command: [sh, scripts/inspect-stand-in-agent.sh]}\n" +
	"verify: [{name: unit tests, run: [go, test, -json, ./...]}]\n" +
	"snapshot:\n  setup: [{name: deps, run: [sh, -c, \"echo from-the-snapshot > /cache/deps/marker\"]}]\n" +
	"  caches: [{path: /cache/deps, lockfiles: [deps.lock]}]\n"

// A snapshot that is refreshed as the default branch moves stays usable
// (issue 35): built, refreshed twice on new commits (two drift layers on
// the first build's workspace layer), and then, with the branch moved on
// again, a session on the newest commit restores it, fetches only the new
// commits and verifies; after a force-push that drops the snapshot's own
// commit, a session still restores it and catches up. The snapshot's base
// commit has history before it, as any real repository's has: the
// workspace layer's shallow boundary is what keeps the catch-up fetch
// from walking into commits no layer holds.
func TestSessionsAfterSnapshotRefreshesCatchUpWithTheBranch(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, executor string) {
		r := newRealSessions(t, executor)
		if r.bk != nil {
			r.bk.withSnapshotPipeline("")
		} else {
			r.stop()
			r.snapshotExec = r.lx
			r.start()
		}
		// History before the snapshot's commit, and enough vendored bytes
		// that a one-file refresh is a drift on the workspace layer, not
		// a new one (decision 0028).
		r.gh.CommitFiles(owner, repoName, "main", map[string]string{"history.txt": "before the snapshot\n"}, "history")
		files := vendoredFiles(40, 4<<10)
		files["deps.lock"] = "v1\n"
		files[".github/inspect.yml"] = refreshingSnapshotConfig
		r.pushToMain(repoName, 0, files)
		built := r.buildSnapshot()

		// The branch moves and the snapshot is refreshed, twice.
		var refreshes []store.SnapshotRepo
		for i := range 2 {
			r.pushToMain(repoName, 0, map[string]string{"moved.txt": fmt.Sprintf("refresh %d\n", i)})
			r.clock.Advance(time.Minute) // a push's rebuild waits out a burst
			refreshes = append(refreshes, r.buildSnapshot())
		}
		refreshed := refreshes[1]
		if ws := r.workspaceLayers(refreshed.LastDigest); len(ws) != 3 {
			t.Fatalf("after two refreshes the snapshot has %d workspace layers, want the base and two drifts", len(ws))
		}
		if refreshed.LastDigest == built.LastDigest || refreshed.LastSHA == built.LastSHA {
			t.Fatalf("the refreshes did not build a new snapshot: %+v, first %+v", refreshed, built)
		}

		// The branch moves on by two commits: the session restores the
		// refreshed snapshot and fetches just those two.
		r.gh.CommitFiles(owner, repoName, "main", map[string]string{"moved.txt": "after the refreshes\n"}, "moved")
		newest := r.gh.CommitFiles(owner, repoName, "main", map[string]string{"newest.txt": "newest\n"}, "moved again")
		assertCaughtUp(t, r, r.askAndRun(), refreshed.LastDigest, newest, 2)

		// A force-push drops the snapshot's own commit: main goes back to
		// the first refresh's commit and gets a new one. A session on it
		// restores the same snapshot and fetches only that commit.
		r.gh.CreateBranch(owner, repoName, "main", refreshes[0].LastSHA)
		forced := r.gh.CommitFiles(owner, repoName, "main", map[string]string{"forced.txt": "after a force-push\n"}, "force-pushed")
		assertCaughtUp(t, r, r.askAndRun(), refreshed.LastDigest, forced, 1)
	})
}

// vendoredFiles are n files of incompressible content, as vendored code is
// to a layer: about n*size bytes whatever the compression.
func vendoredFiles(n, size int) map[string]string {
	rng := rand.New(rand.NewPCG(3, 5))
	files := map[string]string{}
	for i := range n {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		files[fmt.Sprintf("vendor/mod%02d/file%03d.txt", i%10, i)] = string(b)
	}
	return files
}

// buildSnapshot waits for the repo's due snapshot build on the executor
// and returns the schedule's record of what it pushed.
func (r *realSessions) buildSnapshot() store.SnapshotRepo {
	r.t.Helper()
	if r.bk == nil {
		return r.harness.buildSnapshot(r.lx, repoID)
	}
	ctx := context.Background()
	before, err := r.st.GetSnapshotRepo(ctx, repoID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.t.Fatal(err)
	}
	// A pass reads a pushed config (which schedules the repo), the next
	// queues and dispatches the build that is due.
	for range 3 {
		r.runWorkers()
		if sr, err := r.st.GetSnapshotRepo(ctx, repoID); err == nil && sr.BuildingAttempt != "" {
			break
		}
	}
	r.bk.settle()
	sr, err := r.st.GetSnapshotRepo(ctx, repoID)
	if err != nil || sr.LastError != "" || sr.LastDigest == "" || sr.LastDigest == before.LastDigest {
		r.t.Fatalf("snapshot build: %+v %v\n%s\n%s", sr, err, r.bk.buildLogs(), r.logs)
	}
	return sr
}

// workspaceLayers are the workspace layers of the repo's snapshot digest.
func (r *realSessions) workspaceLayers(digest string) []images.WorkspaceLayer {
	r.t.Helper()
	st, err := images.OpenStore(r.cfg.Snapshots.Store)
	if err != nil {
		r.t.Fatal(err)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		r.t.Fatal(err)
	}
	img, err := st.Image(context.Background(), owner+"/"+repoName, h)
	if err != nil {
		r.t.Fatal(err)
	}
	ws, err := images.WorkspaceLayers(img)
	if err != nil {
		r.t.Fatal(err)
	}
	return ws
}

// askAndRun asks for a new session on the issue, runs it to its end and
// returns it.
func (r *realSessions) askAndRun() store.Session {
	r.t.Helper()
	var seen []string
	for _, s := range r.sessions() {
		seen = append(seen, s.ID)
	}
	if code, _ := r.deliver("issue_comment", r.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		r.t.Fatal(code)
	}
	r.runWorkers()
	var sess store.Session
	for _, s := range r.sessions() {
		if !slices.Contains(seen, s.ID) {
			sess = s
		}
	}
	if sess.AttemptID == "" {
		r.t.Fatalf("no new session dispatched\n%s", r.logs)
	}
	if r.bk != nil {
		r.bk.settle()
	} else {
		a, err := r.st.GetAttempt(context.Background(), sess.AttemptID)
		if err != nil {
			r.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if st, err := r.lx.Wait(ctx, a.ExternalID); err != nil || st.ExitCode != 0 {
			r.t.Fatalf("inspect runner: %+v %v\n%s", st, err, r.logs)
		}
		r.runWorkers()
	}
	sess, err := r.st.GetSession(context.Background(), sess.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	return sess
}

// assertCaughtUp checks that sess ran on commit pinned from the snapshot
// digest, fetching drift commits, and that its verify passed.
func assertCaughtUp(t *testing.T, r *realSessions, sess store.Session, digest, pinned string, drift int) {
	t.Helper()
	ev := sessionEvidence(t, r.harness, sess)
	if sess.Outcome != session.Changed {
		t.Fatalf("session on %s = %s/%s: %s\nevidence: %s %s\n%s", pinned, sess.State(), sess.Outcome, sess.Detail, ev.Outcome, ev.Reason, r.allLogs())
	}
	if ev.PinnedSHA != pinned {
		t.Errorf("session pinned %s, want %s", ev.PinnedSHA, pinned)
	}
	if ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot || ev.Workspace.SnapshotDigest != digest || ev.Workspace.DriftCommits != drift {
		t.Errorf("session on %s: workspace %+v, want snapshot %s with %d commits of drift", pinned, ev.Workspace, digest, drift)
	}
	verified := 0
	for _, c := range ev.Commands {
		if c.Phase != contract.PhaseVerify {
			continue
		}
		verified++
		if !c.Succeeded() {
			t.Errorf("session on %s: verify %s failed:\n%s", pinned, c.Name, c.OutputTail)
		}
	}
	if verified == 0 {
		t.Errorf("session on %s ran no verify command", pinned)
	}
}
