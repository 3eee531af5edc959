package buildkite

import (
	"context"
	"errors"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	bk "github.com/buildkite/go-buildkite/v3/buildkite"
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
	// Both shipped pipelines: the session's, and the snapshot's, which is
	// the same step on its own queue.
	for file, queue := range map[string]string{"inspect-session.yml": "inspect", "inspect-snapshot.yml": "inspect-snapshot"} {
		shipped, err := os.ReadFile("../../.buildkite/" + file)
		if err != nil {
			t.Fatal(err)
		}
		ours := SessionPipelineYAML(queue, 60)
		if got, want := parseYAML(t, ours), parseYAML(t, shipped); !reflect.DeepEqual(got, want) {
			t.Fatalf("SessionPipelineYAML(%s, 60) =\n%s\nwant the structure of .buildkite/%s:\n%s", queue, ours, file, shipped)
		}
	}
	ours := SessionPipelineYAML("inspect", 60)
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

// testCluster is the cluster the stand-in's organization has.
const testCluster = "0188f2e4-9a5c-7b4e-8c3d-2a1b0c9d8e7f"

func TestSetupCreatesThenUpdates(t *testing.T) {
	s := fakebuildkite.New(t)
	s.AddCluster(org, testCluster)
	s.SetExpectations(fakebuildkite.Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	p := &probe{}
	cfg := config(s, p)
	ctx := ctxFor(t)

	created, err := Setup(ctx, cfg, SetupOptions{Queue: "inspect", TimeoutMinutes: 60, ClusterID: testCluster})
	if err != nil || !created {
		t.Fatalf("Setup = %v, %v; want created", created, err)
	}
	got, ok := s.PipelineConfig(org, pipelineSlug)
	if !ok || got != string(SessionPipelineYAML("inspect", 60)) {
		t.Fatalf("pipeline config = %q (exists %v)", got, ok)
	}
	creates := p.requests("POST", "/v2/organizations/acme/pipelines")
	if len(creates) != 1 {
		t.Fatalf("%d create requests, want 1", len(creates))
	}
	for _, field := range []string{
		`"repository":"https://github.com/inspecthq/inspect.git"`,
		`"default_branch":"main"`,
		`"name":"inspect-session"`, // the slug is the default name
		`"cluster_id":"` + testCluster + `"`,
		// The stand-in drops it, so only the request can show it.
		`"visibility":"private"`,
	} {
		if !strings.Contains(string(creates[0].Body), field) {
			t.Errorf("the create request has no %s: %s", field, creates[0].Body)
		}
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
	// The update came after a read, which checked the pipeline private
	// before anything was written.
	want := []string{"GET 404", "GET 200", "GET 200", "PATCH 200"}
	if got := summary(p.requests("", "/v2/organizations/acme/pipelines/inspect-session")); !slices.Equal(got, want) {
		t.Fatalf("pipeline requests = %v, want %v", got, want)
	}
}

// The stand-in always answers that a pipeline is private, so a refusal
// through Setup cannot be shown with it; this is the check Setup makes of
// the pipeline it read (before any write) or created.
func TestNotPrivate(t *testing.T) {
	for _, c := range []struct {
		visibility *string
		want       string
	}{
		{bk.String("private"), ""},
		{bk.String("public"), `has visibility "public"`},
		{bk.String("Private"), `has visibility "Private"`},
		{bk.String(""), "has no stated visibility"},
		{nil, "has no stated visibility"},
	} {
		if got := notPrivate(&bk.Pipeline{Visibility: c.visibility}); got != c.want {
			t.Errorf("notPrivate(%v) = %q, want %q", deref(c.visibility), got, c.want)
		}
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
	s.AddCluster(org, testCluster)
	p := &probe{}
	cfg := config(s, p)
	// A name whose slug is not the configured pipeline's, or no cluster
	// for a pipeline that must be created: refused, nothing created.
	created, err := Setup(ctxFor(t), cfg, SetupOptions{Name: "Inspect", Queue: "inspect", TimeoutMinutes: 60, ClusterID: testCluster})
	if created || err == nil || !strings.Contains(err.Error(), `slug "inspect"`) {
		t.Fatalf("Setup with a mismatched name = %v, %v", created, err)
	}
	if n := len(p.requests("", "")); n != 0 {
		t.Fatalf("a mismatched name made %d requests, want none", n)
	}
	created, err = Setup(ctxFor(t), cfg, SetupOptions{Name: "Inspect Session", Queue: "inspect", TimeoutMinutes: 60})
	if created || err == nil || !strings.Contains(err.Error(), "buildkite.cluster_id") {
		t.Fatalf("Setup without a cluster = %v, %v", created, err)
	}
	if got := s.Pipelines(org); len(got) != 0 {
		t.Fatalf("pipelines = %+v, want none", got)
	}
	if PipelineSlug("  Inspect -- Session! ") != "inspect-session" || PipelineSlug("inspect_x") != "inspect_x" {
		t.Errorf("PipelineSlug: %q, %q", PipelineSlug("  Inspect -- Session! "), PipelineSlug("inspect_x"))
	}

	s.FailNext("GET", "/v2/organizations/acme/pipelines/inspect-session", http.StatusForbidden, "")
	_, err = Setup(ctxFor(t), cfg, SetupOptions{Queue: "inspect", TimeoutMinutes: 60})
	var final *FinalError
	if !errors.As(err, &final) || final.Status != http.StatusForbidden {
		t.Fatalf("Setup without read_pipelines = %v, want a *FinalError 403", err)
	}
}
