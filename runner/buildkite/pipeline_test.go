package buildkite

import (
	"context"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/internal/fakebuildkite"
)

func parseYAML(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("parsing:\n%s\n%v", doc, err)
	}
	return v
}

func TestSessionPipelineYAMLIsTheShippedOne(t *testing.T) {
	shipped, err := os.ReadFile("../../.buildkite/inspect-session.yml")
	if err != nil {
		t.Fatal(err)
	}
	ours := SessionPipelineYAML("inspect", 60)
	if got, want := parseYAML(t, ours), parseYAML(t, shipped); !reflect.DeepEqual(got, want) {
		t.Fatalf("SessionPipelineYAML(inspect, 60) =\n%s\nwant the structure of .buildkite/inspect-session.yml:\n%s", ours, shipped)
	}
	if strings.Contains(string(ours), "${") || strings.Contains(string(ours), "{{") {
		t.Fatalf("the session pipeline interpolates something:\n%s", ours)
	}
}

func TestSessionPipelineYAMLQuotesWhatItIsGiven(t *testing.T) {
	// Setup refuses such a queue; the renderer still cannot be made to
	// write another structure.
	doc := parseYAML(t, SessionPipelineYAML("x\nsteps: []\n- evil: {", 5))
	steps := doc.(map[string]any)["steps"].([]any)
	agents := steps[0].(map[string]any)["agents"].(map[string]any)
	if len(steps) != 1 || agents["queue"] != "x\nsteps: []\n- evil: {" {
		t.Fatalf("parsed = %#v", doc)
	}
}

func TestSetupCreatesThenUpdates(t *testing.T) {
	s := fakebuildkite.New(t)
	s.SetExpectations(fakebuildkite.Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	p := &probe{}
	cfg := config(s, p)
	ctx := ctxFor(t)

	created, err := Setup(ctx, cfg, SetupOptions{Queue: "inspect", TimeoutMinutes: 60})
	if err != nil || !created {
		t.Fatalf("Setup = %v, %v; want created", created, err)
	}
	got, ok := s.PipelineConfig(org, pipelineSlug)
	if !ok || got != string(SessionPipelineYAML("inspect", 60)) {
		t.Fatalf("pipeline config = %q (exists %v)", got, ok)
	}
	creates := p.requests("POST", "/v2/organizations/acme/pipelines")
	if len(creates) != 1 || !strings.Contains(string(creates[0].Body), `"repository":"https://github.com/inspecthq/inspect.git"`) ||
		!strings.Contains(string(creates[0].Body), `"default_branch":"main"`) || !strings.Contains(string(creates[0].Body), `"name":"Inspect session"`) {
		t.Fatalf("create requests = %+v", creates)
	}

	// The pipeline Setup made runs a session build as Start makes it.
	s.SetRunner(func(context.Context, fakebuildkite.BuildInfo, fakebuildkite.Step, []string, string) int { return 0 })
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start(t, e, attempt(1))
	idle(t, s)
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}

	created, err = Setup(ctx, cfg, SetupOptions{Queue: "big.queue_2", TimeoutMinutes: 30})
	if err != nil || created {
		t.Fatalf("second Setup = %v, %v; want updated", created, err)
	}
	if got, _ := s.PipelineConfig(org, pipelineSlug); got != string(SessionPipelineYAML("big.queue_2", 30)) {
		t.Fatalf("updated config = %q", got)
	}
	if n := len(p.requests("PATCH", "/v2/organizations/acme/pipelines/inspect-session")); n != 1 {
		t.Fatalf("%d updates, want 1", n)
	}
}

func TestSetupRefusesBadOptionsBeforeAnyRequest(t *testing.T) {
	s := fakebuildkite.New(t)
	p := &probe{}
	cfg := config(s, p)
	for _, opts := range []SetupOptions{
		{Queue: "", TimeoutMinutes: 60},
		{Queue: "in spect", TimeoutMinutes: 60},
		{Queue: "inspect\nsteps: []", TimeoutMinutes: 60},
		{Queue: "queue=inspect", TimeoutMinutes: 60},
		{Queue: "inspect", TimeoutMinutes: 0},
		{Queue: "inspect", TimeoutMinutes: 1441},
	} {
		if _, err := Setup(ctxFor(t), cfg, opts); err == nil {
			t.Errorf("Setup(%+v) succeeded", opts)
		}
	}
	bad := cfg
	bad.Org = ""
	if _, err := Setup(ctxFor(t), bad, SetupOptions{Queue: "inspect", TimeoutMinutes: 60}); err == nil {
		t.Error("Setup without an organization succeeded")
	}
	if n := len(p.requests("", "")); n != 0 {
		t.Fatalf("%d requests, want none", n)
	}
}

func TestSetupReportsASlugMismatchAndFinalErrors(t *testing.T) {
	s := fakebuildkite.New(t)
	cfg := config(s, &probe{})
	created, err := Setup(ctxFor(t), cfg, SetupOptions{Name: "Inspect", Queue: "inspect", TimeoutMinutes: 60})
	if !created || err == nil || !strings.Contains(err.Error(), `slug "inspect"`) {
		t.Fatalf("Setup with a mismatched name = %v, %v", created, err)
	}

	s.FailNext("GET", "/v2/organizations/acme/pipelines/inspect-session", http.StatusForbidden, "")
	_, err = Setup(ctxFor(t), cfg, SetupOptions{Queue: "inspect", TimeoutMinutes: 60})
	var final *FinalError
	if !errors.As(err, &final) || final.Status != http.StatusForbidden {
		t.Fatalf("Setup without read_pipelines = %v, want a *FinalError 403", err)
	}
}
