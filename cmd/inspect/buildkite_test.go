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
func TestBuildkiteSetupCreatesThenUpdatesThePipeline(t *testing.T) {
	bk := fakebuildkite.New(t)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "bk-token")
	if err := os.WriteFile(tokenFile, []byte(bk.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"INSPECT_GITHUB_APP_ID": "5", "INSPECT_GITHUB_PRIVATE_KEY": "k", "INSPECT_GITHUB_WEBHOOK_SECRET": "s3cret",
		"INSPECT_EXECUTOR_KIND": "buildkite", "INSPECT_CHANNEL_URL": "https://inspect.example.com",
		"INSPECT_BUILDKITE_API_URL": bk.URL(), "INSPECT_BUILDKITE_ORGANIZATION": "acme",
		"INSPECT_BUILDKITE_API_TOKEN_PATH": tokenFile, "INSPECT_BUILDKITE_WEBHOOK_TOKEN": "0123456789abcdef0123",
		"INSPECT_BUILDKITE_QUEUE": "agents-xl", "INSPECT_SESSIONS_TIMEOUT": "42m",
	} {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "created pipeline acme/inspect-session") {
		t.Fatalf("first setup: %d %q %q", code, out.String(), errOut.String())
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
	t.Setenv("INSPECT_GITHUB_APP_ID", "5")
	t.Setenv("INSPECT_GITHUB_PRIVATE_KEY", "k")
	t.Setenv("INSPECT_GITHUB_WEBHOOK_SECRET", "s3cret")
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "executor.kind is not buildkite") {
		t.Errorf("local executor: %d %q", code, errOut.String())
	}
	t.Setenv("INSPECT_EXECUTOR_KIND", "buildkite")
	errOut.Reset()
	if code := run([]string{"buildkite", "setup"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "buildkite.organization") || !strings.Contains(errOut.String(), "channel_url") {
		t.Errorf("missing keys: %d %q", code, errOut.String())
	}
}
