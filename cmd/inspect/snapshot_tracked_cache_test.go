package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// trackedCacheConfig declares a snapshot cache at /workspace/vendor whose
// setup rewrites a file there and adds another.
const trackedCacheConfig = `snapshot:
  setup:
    - name: vendor
      run: ["sh", "-c", "echo setup-rewrote > vendor/lib.txt && echo setup-added > vendor/extra.txt"]
  caches:
    - path: /workspace/vendor
      lockfiles: [deps.lock]
`

// trackedCacheRun is one `inspect run` on repo, restored from store (""
// for a cold clone), with an agent that rewrites vendor/lib.txt and adds
// top.txt: its evidence and its patch ("" for none).
func trackedCacheRun(t *testing.T, repo, store string) (contract.Evidence, string) {
	t.Helper()
	patch := filepath.Join(t.TempDir(), "change.patch")
	evidence := filepath.Join(t.TempDir(), "evidence.json")
	args := []string{"run", "--repo", repo, "--repo-name", "acme/widget", "--patch", patch, "--evidence", evidence,
		"--agent", `["sh", "-c", "echo agent-fixed > vendor/lib.txt && echo agent > top.txt"]`, "--work-dir", sandboxWorkDir(t)}
	if store != "" {
		args = append(args, "--snapshot-store", store)
	}
	var stdout, stderr strings.Builder
	code := run(append(args, "--", "fix", "vendor/lib.txt"), &stdout, &stderr)
	var ev contract.Evidence
	b, err := os.ReadFile(evidence)
	if err == nil {
		err = json.Unmarshal(b, &ev)
	}
	if err != nil {
		t.Fatalf("inspect run (store %q): exit %d, evidence %v\nstdout:\n%s\nstderr:\n%s", store, code, err, stdout.String(), stderr.String())
	}
	p, err := os.ReadFile(patch)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return ev, string(p)
}

// The suspicion of issue 33 was that a snapshot cache over a tracked
// directory lets setup's writes appear as the agent's change at the
// snapshot's own commit. Refuted: the workspace caches are left out of the
// change whole (workspaceCaches), tracked files too; but that is how the
// agent's own edits to the tracked files there were lost, the session
// ending ok with a change that silently lacked them (found by this test's
// first version on the old code: decision 0061). Now, through the real
// build (`inspect snapshot build`) and restore (`inspect run
// --snapshot-store`): an untracked cache works as before, and its setup
// writes never reach the change; a cache holding tracked files is refused
// by the build and by a session, restored (a commit that started tracking
// files there after the snapshot) or cold, naming the cache and a file,
// before the agent runs.
func TestSnapshotCacheOverTrackedFilesIsRefused(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		".github/inspect.yml": trackedCacheConfig,
		".gitignore":          "vendor/\n",
		"deps.lock":           "v1\n",
	})
	store := "oci:" + t.TempDir() + "/store"
	build := func() (int, string, string) {
		return snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widget", "--store", store, "--work-dir", sandboxWorkDir(t))
	}
	if code, out, errOut := build(); code != 0 || !strings.Contains(out, "rebuilt  /workspace/vendor") {
		t.Fatalf("build of an untracked cache: exit %d\n%s\n%s", code, out, errOut)
	}
	// At the snapshot's own commit, setup's writes there are not the agent's.
	ev, patch := trackedCacheRun(t, repo, store)
	if ev.Outcome != contract.OutcomeOK || ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot {
		t.Fatalf("a session on the untracked cache: %s %s, workspace %+v", ev.Outcome, ev.Reason, ev.Workspace)
	}
	if strings.Contains(patch, "vendor/") || !strings.Contains(patch, "+++ b/top.txt") {
		t.Errorf("the change on an untracked cache:\n%s", patch)
	}

	// A commit that tracks a file in the cache, its lockfile unchanged: the
	// snapshot stays the one to restore.
	add := exec.Command("sh", "-c", "mkdir -p vendor && echo committed > vendor/lib.txt && git add -f vendor/lib.txt && "+
		"git -c user.name=Test -c user.email=t@example.com commit --quiet -m 'track vendor'")
	add.Dir = repo
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("committing vendor/lib.txt: %v\n%s", err, out)
	}
	const why = "snapshot.caches[0].path /workspace/vendor holds files the repository tracks"
	for _, restored := range []bool{true, false} {
		s := ""
		if restored {
			s = store
		}
		ev, patch := trackedCacheRun(t, repo, s)
		if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, why) || !strings.Contains(ev.Reason, `"vendor/lib.txt"`) {
			t.Errorf("restored %v: outcome %s %q; want error naming the cache and vendor/lib.txt\npatch:\n%s", restored, ev.Outcome, ev.Reason, patch)
		}
		if restored && (ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot) {
			t.Errorf("the session did not restore the snapshot: %+v", ev.Workspace)
		}
		for _, c := range ev.Commands {
			t.Errorf("restored %v: %s ran (%s) on a refused cache", restored, c.Name, c.Phase)
		}
	}
	code, out, errOut := build()
	if code != 1 || out != "" || !strings.Contains(errOut, why) || !strings.Contains(errOut, `"vendor/lib.txt"`) {
		t.Errorf("build of a cache holding tracked files: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
