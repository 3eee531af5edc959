package fakebuildkite

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The pipeline Inspect ships must pass the checks a real session build
// needs: one command step, checkout skipped, the queue, a timeout within
// the organization's maximum, and the evidence as artifacts.
func TestShippedSessionPipelinePassesTheChecks(t *testing.T) {
	yaml, err := os.ReadFile("../../.buildkite/inspect-session.yml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(yaml), "${") || strings.Contains(string(yaml), "{{") {
		t.Error("the session pipeline interpolates something; it must be static")
	}
	s := New(t)
	s.SetExpectations(Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	var got Step
	ran := make(chan struct{})
	s.SetRunner(func(ctx context.Context, b BuildInfo, step Step, env []string, dir string) int {
		got = step
		close(ran)
		return 0
	})
	s.AddPipeline("acme", "inspect-session", string(yaml))
	create(t, client(t, s, s.Token()), map[string]string{"inspect:session": "s1"}, map[string]string{"INSPECT_SESSION_ID": "s1"})
	<-ran
	wait(t, s)
	if v := s.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
	if !strings.HasPrefix(got.Command, "inspect runner") || len(got.ArtifactPaths) != 2 {
		t.Errorf("step = %+v", got)
	}
}
