package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// BenchmarkServiceReady measures how long a postgres service takes to be
// ready for verify (issue 16), from just before its setup would run to
// its ready check passing, in four cases run side by side:
//
//   - cold: no snapshot, so the service's setup (initdb into the cache)
//     runs just before the server starts;
//   - snapshot: restored from a snapshot whose build ran that setup, so
//     the server starts on the cluster the image brings;
//   - cold-for-agent and snapshot-for-agent: the same service with
//     for_agent, which since issue 33 (decision 0057) starts for the agent,
//     is stopped before the change is collected, and starts fresh for
//     verify in a new environment, on the caches as setup left them: cold,
//     its setup runs twice. Their agent-setup+ready-ms is the agent's
//     start, their setup+ready-ms verify's: what the fix adds is the
//     latter (and the session-ms beside the verify-only case's).
//
// Each iteration is a whole session (the stand-in agent, then verify's
// PostgreSQL test); the metrics are from its evidence, session-ms from
// the wall clock around it.
func BenchmarkServiceReady(b *testing.B) {
	needPostgres(b)
	ctx := context.Background()
	ch := channeltest.New(b)
	sha := pgRepo(b, ch)
	marker := fmt.Sprintf("inspect-svc-bench-%d", time.Now().UnixNano())
	svc := postgresService(marker)

	// The snapshot: built once with the service's setup as its setup step.
	workDir := sandboxtest.ReachableDir(b)
	dir := filepath.Join(workDir, "snapshots")
	store, err := images.NewLayoutStore(dir)
	if err != nil {
		b.Fatal(err)
	}
	buildDir := filepath.Join(workDir, "build")
	if err := os.Mkdir(buildDir, 0o755); err != nil {
		b.Fatal(err)
	}
	setup := pgSpec(ch, "s-build", sha, svc).Snapshot
	start := time.Now()
	res, err := BuildSnapshot(ctx, SnapshotBuild{
		Repo:        contract.Repo{Owner: channeltest.Owner, Name: channeltest.Repo, CloneURL: ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo), DefaultBranch: "main"},
		SHA:         sha,
		Setup:       setup.Setup,
		Caches:      setup.Caches,
		Store:       store,
		Version:     "bench",
		WorkDir:     buildDir,
		SandboxPath: DefaultSandboxPath,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("snapshot %s built in %s (initdb %d ms)", res.Snapshot.Digest, time.Since(start).Round(time.Millisecond), res.Setup[0].DurationMS)

	var seq int
	session := func(b *testing.B, spec contract.Spec, want contract.WorkspaceSource, runs int) (contract.Evidence, time.Duration) {
		b.Helper()
		seq++
		spec.SessionID, spec.AttemptID = fmt.Sprintf("s-svc-%d", seq), fmt.Sprintf("a-svc-%d", seq)
		code := ch.AddAttempt(spec)
		start := time.Now()
		rep, err := Run(ctx, Config{
			ChannelURL:      ch.URL(),
			SessionID:       spec.SessionID,
			AttemptID:       spec.AttemptID,
			ClaimCode:       code,
			WorkDir:         workDir,
			LayerCache:      filepath.Join(workDir, "layers"),
			RunnerVersion:   "bench",
			ForwarderBinary: forwarder,
			RetryDelay:      -1,
			FinishTimeout:   time.Minute,
			RequestTimeout:  time.Minute,
		})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		ev := rep.Evidence
		if ev.Outcome != contract.OutcomeOK || len(ev.Services) != runs || ev.Workspace == nil || ev.Workspace.Source != want {
			b.Fatalf("outcome %s (%s), workspace %+v, services %+v; want ok from %s with %d service runs", ev.Outcome, ev.Reason, ev.Workspace, ev.Services, want, runs)
		}
		for _, r := range ev.Services {
			if !r.Ready {
				b.Fatalf("a service run was never ready: %+v", ev.Services)
			}
		}
		return ev, took
	}
	// setupMS is the service's setup before phase, when it ran.
	setupMS := func(ev contract.Evidence, phase contract.Phase) int64 {
		for _, c := range ev.Commands {
			if c.Name == contract.ServiceSetupName(svc.Name) && c.Phase == phase {
				return c.DurationMS
			}
		}
		return 0
	}

	for _, tc := range []struct {
		name               string
		forAgent, snapshot bool
	}{
		{"cold", false, false},
		{"snapshot", false, true},
		{"cold-for-agent", true, false},
		{"snapshot-for-agent", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			svc := svc
			svc.ForAgent = tc.forAgent
			want, runs := contract.WorkspaceClone, 1
			if tc.snapshot {
				want = contract.WorkspaceSnapshot
			}
			if tc.forAgent {
				runs = 2
			}
			var ready, setupTotal, agentTotal int64
			var took time.Duration
			for range b.N {
				spec := pgSpec(ch, "s", sha, svc)
				if tc.snapshot {
					spec.Snapshot.Store, spec.Snapshot.Digest = images.LayoutPrefix+dir, res.Snapshot.Digest.String()
				}
				ev, d := session(b, spec, want, runs)
				took += d
				verifySetup := setupMS(ev, contract.PhaseVerify)
				switch {
				case tc.snapshot && verifySetup+setupMS(ev, contract.PhaseAgent) != 0:
					b.Fatalf("a restored session ran the service's setup again: %+v", ev.Commands)
				case !tc.snapshot && verifySetup == 0:
					b.Fatalf("a cold session did not run the service's setup for verify: %+v", ev.Commands)
				case !tc.snapshot && tc.forAgent && setupMS(ev, contract.PhaseAgent) == 0:
					b.Fatalf("a cold session did not run the service's setup for the agent: %+v", ev.Commands)
				}
				setupTotal += verifySetup
				ready += ev.Services[runs-1].ReadyMS
				if tc.forAgent {
					agentTotal += setupMS(ev, contract.PhaseAgent) + ev.Services[0].ReadyMS
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(setupTotal+ready)/n, "setup+ready-ms")
			b.ReportMetric(float64(setupTotal)/n, "setup-ms")
			b.ReportMetric(float64(ready)/n, "ready-ms")
			if tc.forAgent {
				b.ReportMetric(float64(agentTotal)/n, "agent-setup+ready-ms")
			}
			b.ReportMetric(float64(took.Milliseconds())/n, "session-ms")
		})
	}
}
