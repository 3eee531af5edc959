package supervisor

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Verify's workspace on a restored session is, by precedence, the pinned
// commit, the change, what setup left, and what the snapshot holds at its
// caches under /workspace (decision 0063): the layer fills in what the
// agent's phase took from setup's copy, never what setup itself wrote,
// and not at all once a stale snapshot setup made the caches anew.
func TestVerifyGetsTheSnapshotsWorkspaceCachesBelowSetups(t *testing.T) {
	f := newSnapshotFixtureCaching(t, nil, nil, true)
	pinned := f.drift("")
	sh := func(name, script string) contract.Command {
		return contract.Command{Name: name, Argv: []string{"sh", "-c", script}, Timeout: contract.Duration(time.Minute)}
	}
	cases := []struct {
		name  string
		setup []contract.Command // the session's own setup
		// snapshotSetup, when set, replaces the snapshot's: a new argv
		// changes the caches' keys, so the caches are stale and it runs.
		snapshotSetup []contract.Command
		agent         string
		verify        string
	}{
		{name: "the agent removed the cache", agent: "rm -rf modules",
			verify: "grep -qx modules-from-snapshot modules/marker"},
		{name: "the agent rewrote a file of it", agent: "echo agent > modules/marker && echo agent > modules/added",
			verify: "grep -qx modules-from-snapshot modules/marker && test ! -e modules/added"},
		{name: "setup's file wins over the layer's", setup: []contract.Command{sh("setup", "echo from-setup > modules/marker")}, agent: "true",
			verify: "grep -qx from-setup modules/marker"},
		{name: "a stale snapshot setup's caches are not filled", agent: "rm -rf modules",
			snapshotSetup: append(slices.Clone(depsSetup), sh("clear", "rm -f /workspace/modules/marker")),
			verify:        "test ! -e modules/marker"},
	}
	// Where setup left the cache as restored, verify sees the layer through
	// an overlay mounted at it, when this process may mount one, not a copy.
	mounted := "grep -q ' /workspace/modules ' /proc/self/mountinfo"
	if os.Geteuid() != 0 {
		mounted = "! " + mounted
	}
	cases = append(cases, struct {
		name          string
		setup         []contract.Command
		snapshotSetup []contract.Command
		agent         string
		verify        string
	}{name: "setup left the cache as restored: verify sees the layer itself", agent: "echo agent > modules/added",
		verify: mounted + " && grep -qx modules-from-snapshot modules/marker && test ! -e modules/added"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := f.spec(pinned)
			spec.Snapshot.Caches = append(slices.Clone(depsCache), modulesCache)
			if tc.snapshotSetup != nil {
				spec.Snapshot.Setup = tc.snapshotSetup
			}
			spec.Setup = tc.setup
			spec.Agent.Command = []string{"sh", "-c", tc.agent + " && echo done > seen.txt"}
			spec.Verify = []contract.Command{sh("modules", tc.verify)}
			h := newHarness(t, f.ch, spec)
			u := h.result(t, h.run(t, context.Background()))
			if u.Evidence.Outcome != contract.OutcomeOK {
				t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
			}
			if got := setupRan(u.Evidence); got != (tc.snapshotSetup != nil) {
				t.Errorf("the snapshot setup ran: %v, want %v", got, tc.snapshotSetup != nil)
			}
			if u.Manifest == nil || len(u.Manifest.Files) != 1 || u.Manifest.Files[0].Path != "seen.txt" {
				t.Errorf("the change is not the agent's seen.txt alone: %+v", u.Manifest)
			}
		})
	}
}
