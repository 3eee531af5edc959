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
// its ready check passing, in two cases run side by side:
//
//   - cold: no snapshot, so the service's setup (initdb into the cache)
//     runs just before the server starts;
//   - snapshot: restored from a snapshot whose build ran that setup, so
//     the server starts on the cluster the image brings.
//
// Each iteration is a whole session (the stand-in agent, then verify's
// PostgreSQL test); the metrics are from its evidence.
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
	session := func(b *testing.B, spec contract.Spec, want contract.WorkspaceSource) contract.Evidence {
		b.Helper()
		seq++
		spec.SessionID, spec.AttemptID = fmt.Sprintf("s-svc-%d", seq), fmt.Sprintf("a-svc-%d", seq)
		code := ch.AddAttempt(spec)
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
		if err != nil {
			b.Fatal(err)
		}
		ev := rep.Evidence
		if ev.Outcome != contract.OutcomeOK || len(ev.Services) != 1 || !ev.Services[0].Ready || ev.Workspace == nil || ev.Workspace.Source != want {
			b.Fatalf("outcome %s (%s), workspace %+v, services %+v; want ok from %s", ev.Outcome, ev.Reason, ev.Workspace, ev.Services, want)
		}
		return ev
	}
	// setupMS is the service's setup, when it ran.
	setupMS := func(ev contract.Evidence) int64 {
		for _, c := range ev.Commands {
			if c.Name == contract.ServiceSetupName(svc.Name) {
				return c.DurationMS
			}
		}
		return 0
	}

	b.Run("cold", func(b *testing.B) {
		var ready, setupTotal int64
		for range b.N {
			ev := session(b, pgSpec(ch, "s", sha, svc), contract.WorkspaceClone)
			if setupMS(ev) == 0 {
				b.Fatalf("a cold session did not run the service's setup: %+v", ev.Commands)
			}
			setupTotal += setupMS(ev)
			ready += ev.Services[0].ReadyMS
		}
		b.ReportMetric(float64(setupTotal+ready)/float64(b.N), "setup+ready-ms")
		b.ReportMetric(float64(setupTotal)/float64(b.N), "setup-ms")
		b.ReportMetric(float64(ready)/float64(b.N), "ready-ms")
	})
	b.Run("snapshot", func(b *testing.B) {
		var ready int64
		for range b.N {
			spec := pgSpec(ch, "s", sha, svc)
			spec.Snapshot.Store, spec.Snapshot.Digest = images.LayoutPrefix+dir, res.Snapshot.Digest.String()
			ev := session(b, spec, contract.WorkspaceSnapshot)
			if n := setupMS(ev); n != 0 {
				b.Fatalf("a restored session ran the service's setup again (%d ms)", n)
			}
			ready += ev.Services[0].ReadyMS
		}
		b.ReportMetric(float64(ready)/float64(b.N), "setup+ready-ms")
		b.ReportMetric(float64(ready)/float64(b.N), "ready-ms")
	})
}
