package supervisor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/sandboxtest"
)

// BenchmarkAgentStartOnABaseImage (issue 16) restores the same small
// snapshot on the host's toolchain and on the three-layer base image of
// TestSessionOnAThreeLayerBaseImage, side by side, and reports, per
// session on a warm layer cache, the time from the supervisor's start to
// the agent's (prepare_ms) and the agent's own command, `sh -c true` under
// the forwarder (agent_ms); cold_prepare_ms is the first session's, which
// flattens the base into an empty layer cache. debian-root is the root of
// .ci/ensure-distroot, for a real distribution's size. Results are in
// BENCHMARKS.md, "Base images (issue 16)".
func BenchmarkAgentStartOnABaseImage(b *testing.B) {
	for _, c := range []struct {
		name string
		base func(testing.TB) v1.Image
	}{
		{"host-toolchain", func(testing.TB) v1.Image { return nil }},
		{"three-layer-base", func(tb testing.TB) v1.Image { return threeLayerBase(tb) }},
		{"debian-root", func(tb testing.TB) v1.Image { return distributionRoot(tb) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newSnapshotFixtureOn(b, c.base(b), nil)
			workDir := sandboxtest.ReachableDir(b)
			layerCache := filepath.Join(workDir, "layers")
			n := 0
			session := func() contract.Evidence {
				n++
				spec := f.spec(f.first)
				spec.SessionID, spec.AttemptID = fmt.Sprintf("s-base-%d", n), fmt.Sprintf("a-base-%d", n)
				spec.Agent.Command = []string{"sh", "-c", "true", "agent"}
				code := f.ch.AddAttempt(spec)
				rep, err := Run(context.Background(), Config{
					ChannelURL: f.ch.URL(), SessionID: spec.SessionID, AttemptID: spec.AttemptID, ClaimCode: code,
					WorkDir: workDir, SandboxPath: DefaultSandboxPath, LayerCache: layerCache,
					RunnerVersion: "bench", ForwarderBinary: forwarder, RetryDelay: -1,
					FinishTimeout: time.Minute, RequestTimeout: time.Minute,
				})
				if err != nil {
					b.Fatalf("Run: %v", err)
				}
				ev := rep.Evidence
				if ev.Outcome != contract.OutcomeOK || ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot {
					b.Fatalf("outcome %s (%s), workspace %+v", ev.Outcome, ev.Reason, ev.Workspace)
				}
				return ev
			}
			cold := session()
			var prepare, agent int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ev := session()
				prepare += ev.Workspace.PrepareMS
				for _, c := range ev.Commands {
					if c.Phase == contract.PhaseAgent {
						agent += c.DurationMS
					}
				}
			}
			b.ReportMetric(float64(cold.Workspace.PrepareMS), "cold_prepare_ms")
			b.ReportMetric(float64(prepare)/float64(b.N), "prepare_ms")
			b.ReportMetric(float64(agent)/float64(b.N), "agent_ms")
		})
	}
}
