package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// goSnapshotConfig is goDepsRepo's config with its dependencies in a
// snapshot: setup downloads and builds them into the /cache/go cache,
// keyed by go.sum; extraEnv joins the env (it changes the cache's key and
// nothing else).
func goSnapshotConfig(extraEnv string) string {
	return "agent:\n" +
		"  preset: command\n" +
		"  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\n" +
		"env:\n  GOTOOLCHAIN: local\n  GOFLAGS: -mod=readonly\n  GOMODCACHE: /cache/go/mod\n  GOCACHE: /cache/go/build\n" + extraEnv +
		"snapshot:\n" +
		"  setup:\n    - {name: modules, run: [go, mod, download]}\n    - {name: build, run: [go, build, ./...]}\n" +
		"  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n" +
		"verify:\n  - name: unit tests\n    run: [go, test, -json, ./...]\n    timeout: 5m\n"
}

// pushToMain commits files to repo's main branch and delivers the push
// webhook, as GitHub would, for a repository of the installation.
func (h *harness) pushToMain(repo string, id int64, files map[string]string) {
	h.t.Helper()
	h.gh.CommitFiles(owner, repo, "main", files, "change "+repo)
	m := map[string]any{}
	if err := json.Unmarshal(pushEvent(h.t, repo, ".github/inspect.yml"), &m); err != nil {
		h.t.Fatal(err)
	}
	if id != 0 {
		m["repository"].(map[string]any)["id"] = float64(id)
	}
	body, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	if code, _ := h.deliver("push", body); code != 200 {
		h.t.Fatal(code)
	}
}

// buildSnapshot runs the workers until the repo's snapshot build is
// dispatched on lx, waits for its supervisor and returns the schedule's
// record once the build reported.
func (h *harness) buildSnapshot(lx *local.Executor, repoID int64) store.SnapshotRepo {
	h.t.Helper()
	ctx := context.Background()
	before, err := h.st.GetSnapshotRepo(ctx, repoID) // not found before its first build is wanted
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		h.t.Fatal(err)
	}
	// A pass reads a pushed config (which schedules the repo), the next
	// queues and dispatches the build that is due.
	var sr store.SnapshotRepo
	for range 3 {
		h.runWorkers()
		if sr, err = h.st.GetSnapshotRepo(ctx, repoID); err == nil && sr.BuildingAttempt != "" {
			break
		}
	}
	if sr.BuildingAttempt == "" {
		h.t.Fatalf("no snapshot build dispatched: %+v %v\n%s", sr, err, h.logs)
	}
	a, err := h.st.GetAttempt(ctx, sr.BuildingAttempt)
	if err != nil {
		h.t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if st, err := lx.Wait(wctx, a.ExternalID); err != nil || st.ExitCode != 0 {
		h.t.Fatalf("snapshot supervisor: %+v %v\n%s", st, err, h.logs)
	}
	h.runWorkers()
	sr, err = h.st.GetSnapshotRepo(ctx, repoID)
	if err != nil || sr.LastError != "" || sr.LastDigest == "" || sr.LastDigest == before.LastDigest {
		h.t.Fatalf("snapshot build: %+v %v\n%s", sr, err, h.logs)
	}
	return sr
}

// A Go repository whose modules are not vendored builds its snapshot with
// `go mod download` and `go build ./...` in setup, through the registry
// egress, and its sessions' `go test ./...` passes, cold and restored. The
// module's zip and .mod come from the upstream once, whatever asks for them
// after: a rebuild whose cache key changed while go.sum did not, a second
// repository with the same go.sum, and a cold session after a snapshot —
// each runs its setup for real (there is no layer to skip to), and the
// app's artifact cache answers.
func TestRealSnapshotBuildsFetchModulesThroughTheEgressAndTheCacheKeepsThem(t *testing.T) {
	up, alpha, token, egress := goRegistry(t)
	h, lx := newSandboxHarness(t, egress)
	h.stop()
	h.snapshotExec = lx
	h.start()
	once := func(when string) {
		t.Helper()
		zips, mods := up.Fetches(fakegoproxy.KindZip), up.Fetches(fakegoproxy.KindMod)
		if zips["fake.test/alpha@v1.0.0"] != 1 || mods["fake.test/alpha@v1.0.0"] != 1 {
			t.Fatalf("%s: the upstream served the zip %d times and the .mod %d times, want once each; requests:\n%+v",
				when, zips["fake.test/alpha@v1.0.0"], mods["fake.test/alpha@v1.0.0"], up.Requests())
		}
	}

	// Another repository of the installation, with snapshots: a push puts
	// it on the schedule, and its first build fetches the module.
	const otherID = 999
	h.gh.AddRepo(fakegithub.Repo{ID: otherID, Owner: owner, Name: "other", DefaultBranch: "main", InstallationID: installationID})
	files := goDepsRepo(up, alpha)
	files[".github/inspect.yml"] = goSnapshotConfig("")
	h.pushToMain("other", otherID, files)
	first := h.buildSnapshot(lx, otherID)
	once("the first build")

	// The cache's key changes (the env), go.sum does not: setup runs again
	// with an empty cache, and the module comes from the app's cache.
	h.pushToMain("other", otherID, map[string]string{".github/inspect.yml": goSnapshotConfig("  CGO_ENABLED: \"0\"\n")})
	h.clock.Advance(time.Minute) // a push's rebuild waits out a burst
	second := h.buildSnapshot(lx, otherID)
	if second.LastDigest == first.LastDigest {
		t.Fatal("the rebuild pushed the same snapshot")
	}
	once("a rebuild with a new cache key")

	// This repository has the same go.sum. Its first session runs cold
	// (it has no snapshot yet): the snapshot's setup runs in the session.
	files[".github/inspect.yml"] = goSnapshotConfig("")
	cold := h.runSession(lx, files, "/inspect make TestAdd pass")
	if ev := sessionEvidence(t, h, cold); ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceClone {
		t.Fatalf("the first session's workspace = %+v, want a cold clone", ev.Workspace)
	}
	once("a cold session after a snapshot")
	assertModuleCameThroughTheEgress(t, &realSessions{harness: h, lx: lx}, up, token)

	// Its own build (the session put it on the schedule), then a session
	// that restores it: go test passes on the snapshot's modules.
	built := h.buildSnapshot(lx, repoID)
	once("a second repository's build with the same go.sum")
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	var restored store.Session
	for _, s := range h.sessions() {
		if s.ID != cold.ID {
			restored = s
		}
	}
	a, err := h.st.GetAttempt(context.Background(), restored.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := lx.Wait(wctx, a.ExternalID); err != nil {
		t.Fatal(err)
	}
	h.runWorkers()
	if restored, err = h.st.GetSession(context.Background(), restored.ID); err != nil {
		t.Fatal(err)
	}
	if restored.Outcome != session.Changed {
		t.Fatalf("restored session = %s/%s: %s\n%s", restored.State(), restored.Outcome, restored.Detail, h.logs)
	}
	ev := sessionEvidence(t, h, restored)
	if ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot || ev.Workspace.SnapshotDigest != built.LastDigest {
		t.Fatalf("the second session's workspace = %+v, want snapshot %s", ev.Workspace, built.LastDigest)
	}
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseVerify && !c.Succeeded() {
			t.Fatalf("verify %s failed on the restored snapshot:\n%s", c.Name, c.OutputTail)
		}
	}
	once("a session on the snapshot")
	if strings.Contains(h.logs.String(), token) {
		t.Fatal("the upstream's token is in the app's log")
	}
}

// On Buildkite the snapshot pipeline's build fetches the modules through
// the registry egress too (its supervisor's token reaches the channel's
// registry route and nothing else of a session's), and a session restores
// what it built with nothing fetched again.
func TestBuildkiteSnapshotBuildFetchesModulesThroughTheEgress(t *testing.T) {
	up, alpha, token, egress := goRegistry(t)
	b := newBuildkiteHarness(t, egress)
	b.withSnapshotPipeline("")
	files := goDepsRepo(up, alpha)
	files[".github/inspect.yml"] = goSnapshotConfig("")
	b.pushToMain(repoName, 0, files)
	b.runWorkers() // the pushed config puts the repo on the schedule
	b.runWorkers() // and its build is dispatched
	b.settle()
	snapBuild, sr := b.onlySnapshotBuild()
	if n := up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"]; n != 1 {
		t.Fatalf("the build fetched the zip %d times, want 1\n%s", n, snapBuild.Log)
	}
	// The build's egress audit came back with its result and is kept with
	// the build (decision 0065).
	if a := sr.LastEgress; a == nil || a.RefusedCount != 0 || !slices.ContainsFunc(a.Records, func(r contract.EgressRecord) bool {
		return r.Upstream == "goproxy" && r.Path == "fake.test/alpha/@v/v1.0.0.zip" && r.Status == 200
	}) {
		t.Errorf("the build's record has egress %+v, want the module's zip and nothing refused", a)
	}

	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	b.runWorkers()
	b.settle()
	sess := b.onlySession()
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, b.buildLogs())
	}
	if ev := sessionEvidence(t, b.harness, sess); ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot || ev.Workspace.SnapshotDigest != sr.LastDigest {
		t.Fatalf("the session's workspace = %+v, want snapshot %s", ev.Workspace, sr.LastDigest)
	}
	zips, mods := up.Fetches(fakegoproxy.KindZip), up.Fetches(fakegoproxy.KindMod)
	if zips["fake.test/alpha@v1.0.0"] != 1 || mods["fake.test/alpha@v1.0.0"] != 1 {
		t.Fatalf("after the session the upstream served the zip %d and the .mod %d times, want once each", zips["fake.test/alpha@v1.0.0"], mods["fake.test/alpha@v1.0.0"])
	}
	for _, q := range up.Requests() {
		if !q.Authenticated {
			t.Fatalf("%s %s reached the upstream without the token", q.Method, q.Path)
		}
	}
	if strings.Contains(b.logs.String()+b.buildLogs()+snapBuild.Log, token) {
		t.Fatal("the upstream's token is in a log")
	}
	b.checkBuildsCarryNoSecret(t)
}
