package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/internal/fakebuildkite"
)

// `inspect buildkite setup` creates the session pipeline from the server's
// config, then updates it; the stand-in checks the YAML it was given.
// testCluster is the Buildkite cluster the stand-in's organization has.
const testCluster = "0188f2e4-9a5c-7b4e-8c3d-2a1b0c9d8e7f"

// setupEnv sets what `inspect buildkite setup` reads: Buildkite's keys
// and the sessions' timeout, nothing of GitHub's.
func setupEnv(t *testing.T, bk *fakebuildkite.Server) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "bk-token")
	if err := os.WriteFile(tokenFile, []byte(bk.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"INSPECT_BUILDKITE_API_URL": bk.URL(), "INSPECT_BUILDKITE_ORGANIZATION": "acme",
		"INSPECT_BUILDKITE_API_TOKEN_PATH": tokenFile, "INSPECT_BUILDKITE_CLUSTER_ID": testCluster,
		"INSPECT_BUILDKITE_QUEUE": "agents-xl", "INSPECT_SESSIONS_TIMEOUT": "42m",
	} {
		t.Setenv(k, v)
	}
}

func TestBuildkiteSetupCreatesThenUpdatesThePipeline(t *testing.T) {
	bk := fakebuildkite.New(t)
	bk.AddCluster("acme", testCluster)
	setupEnv(t, bk)
	var out, errOut bytes.Buffer
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "created pipeline acme/inspect-session") {
		t.Fatalf("first setup: %d %q %q", code, out.String(), errOut.String())
	}
	if got := bk.Pipelines("acme"); len(got) != 2 || got[0].ClusterID != testCluster || got[1].ClusterID != testCluster {
		t.Fatalf("pipelines = %+v, want both in the configured cluster", got)
	}
	cfg, ok := bk.PipelineConfig("acme", "inspect-session")
	if !ok {
		t.Fatal("no pipeline")
	}
	var doc struct {
		Steps []struct {
			Command  string            `yaml:"command"`
			Agents   map[string]string `yaml:"agents"`
			Timeout  int               `yaml:"timeout_in_minutes"`
			Checkout map[string]bool   `yaml:"checkout"`
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &doc); err != nil || len(doc.Steps) != 1 {
		t.Fatalf("pipeline YAML: %v\n%s", err, cfg)
	}
	st := doc.Steps[0]
	// 42m sessions + 5m slack = 47.
	if st.Agents["queue"] != "agents-xl" || st.Timeout != 47 || !st.Checkout["skip"] || !strings.HasPrefix(st.Command, "inspect runner") {
		t.Errorf("step = %+v", st)
	}
	out.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "updated pipeline") {
		t.Fatalf("second setup: %d %q %q", code, out.String(), errOut.String())
	}
	if v := bk.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
	if v := bk.PipelineVisibility("acme", "inspect-session"); v != "private" {
		t.Errorf("visibility = %q", v)
	}
	// The snapshot pipeline too, on its own queue (its agents may push).
	if snap, ok := bk.PipelineConfig("acme", "inspect-snapshot"); !ok || !strings.Contains(snap, "queue: inspect-snapshot") {
		t.Errorf("snapshot pipeline: %v\n%s", ok, snap)
	}
	// Made public by hand: setup refuses to touch it, and says why.
	bk.SetPipelineVisibility("acme", "inspect-session", "public")
	before, _ := bk.PipelineConfig("acme", "inspect-session")
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "private") {
		t.Errorf("public pipeline: %d %q", code, errOut.String())
	}
	if after, _ := bk.PipelineConfig("acme", "inspect-session"); after != before {
		t.Error("setup changed a public pipeline")
	}
	for _, r := range bk.Requests() {
		if strings.Contains(string(r.Body), bk.Token()) {
			t.Error("the token was sent in a body")
		}
	}
}

func TestBuildkiteSetupUsageAndConfigErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"buildkite"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: inspect buildkite setup") {
		t.Errorf("no subcommand: %d %q", code, errOut.String())
	}
	// Only Buildkite's keys are asked for: none of GitHub's, no channel
	// URL, no webhook token, whatever executor.kind says.
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "buildkite.organization") || !strings.Contains(errOut.String(), "buildkite.api_token") {
		t.Errorf("missing keys: %d %q", code, errOut.String())
	}
	for _, other := range []string{"github.", "channel_url", "webhook_token", "executor.kind"} {
		if strings.Contains(errOut.String(), other) {
			t.Errorf("setup asked for %s: %q", other, errOut.String())
		}
	}
}

// TestBuildkiteSetupUsesTheConfiguredNames: pipelines named in config get
// those names; a name whose slug is not the configured pipeline's is
// refused before anything is created, and no cluster, likewise.
func TestBuildkiteSetupUsesTheConfiguredNames(t *testing.T) {
	bk := fakebuildkite.New(t)
	bk.AddCluster("acme", testCluster)
	setupEnv(t, bk)
	t.Setenv("INSPECT_BUILDKITE_PIPELINE", "inspect")
	t.Setenv("INSPECT_BUILDKITE_PIPELINE_NAME", "Inspect!")
	t.Setenv("INSPECT_BUILDKITE_SNAPSHOT_PIPELINE_NAME", "Inspect Snapshot")
	var out, errOut bytes.Buffer
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 0 {
		t.Fatalf("setup: %d %q %q", code, out.String(), errOut.String())
	}
	got := bk.Pipelines("acme")
	if len(got) != 2 || got[0].Slug != "inspect" || got[0].Name != "Inspect!" || got[1].Slug != "inspect-snapshot" || got[1].Name != "Inspect Snapshot" {
		t.Fatalf("pipelines = %+v", got)
	}

	other := fakebuildkite.New(t)
	other.AddCluster("acme", testCluster)
	setupEnv(t, other)
	t.Setenv("INSPECT_BUILDKITE_PIPELINE_NAME", "Inspect session")
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), `slug "inspect-session", not the configured "inspect"`) {
		t.Errorf("mismatched name: %d %q", code, errOut.String())
	}
	t.Setenv("INSPECT_BUILDKITE_PIPELINE_NAME", "")
	t.Setenv("INSPECT_BUILDKITE_CLUSTER_ID", "")
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "buildkite.cluster_id") {
		t.Errorf("no cluster: %d %q", code, errOut.String())
	}
	if got := other.Pipelines("acme"); len(got) != 0 {
		t.Errorf("refused setups created %+v", got)
	}
}
