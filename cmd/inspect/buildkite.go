package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/runner/buildkite"
)

// buildkiteStepSlack is what the session step's timeout_in_minutes adds to
// sessions.timeout: fetching before the session's clock starts, and
// uploading after it stops. The supervisor enforces each session's own
// deadline; Buildkite's timeout is only the backstop.
const buildkiteStepSlack = 5 * time.Minute

// buildkiteExecutor builds the Buildkite executor from server config.
func buildkiteExecutor(cfg config.Server, m *metrics.Metrics) (*buildkite.Executor, error) {
	token, err := cfg.BuildkiteAPIToken()
	if err != nil {
		return nil, err
	}
	bc := buildkiteConfig(cfg, token)
	bc.HTTPClient = countedBuildkiteClient(m)
	return buildkite.New(bc)
}

// countedBuildkiteClient is the Buildkite client's default, with its
// requests counted in the metrics.
func countedBuildkiteClient(m *metrics.Metrics) *http.Client {
	return &http.Client{Timeout: buildkite.DefaultTimeout, Transport: m.Transport(metrics.Buildkite, nil)}
}

// buildkiteSnapshotExecutor starts snapshot builds on the snapshot pipeline.
func buildkiteSnapshotExecutor(cfg config.Server, m *metrics.Metrics) (*buildkite.Executor, error) {
	token, err := cfg.BuildkiteAPIToken()
	if err != nil {
		return nil, err
	}
	bc := buildkiteConfig(cfg, token)
	bc.HTTPClient = countedBuildkiteClient(m)
	bc.Pipeline = cfg.Buildkite.SnapshotPipeline
	return buildkite.New(bc)
}

func buildkiteConfig(cfg config.Server, token string) buildkite.Config {
	return buildkite.Config{
		BaseURL: cfg.Buildkite.APIURL, Token: token,
		Org: cfg.Buildkite.Organization, Pipeline: cfg.Buildkite.Pipeline, Branch: cfg.Buildkite.Branch,
		UserAgent: "inspect/" + version,
	}
}

// stepTimeoutMinutes is the session step's timeout_in_minutes: the
// server's longest session plus buildkiteStepSlack, rounded up.
func stepTimeoutMinutes(cfg config.Server) int {
	d := cfg.Sessions.Timeout + buildkiteStepSlack
	return int((d + time.Minute - 1) / time.Minute)
}

// buildkiteCmd is `inspect buildkite setup`: create or update the session
// and snapshot pipelines through the API, with the names and the cluster
// the config gives, from the same config `inspect serve` reads (of which
// only the Buildkite keys need to be set).
func buildkiteCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "usage: inspect buildkite setup [--config FILE] [--repository URL] [--default-branch NAME]"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stderr, usage)
		return 0
	}
	if len(args) == 0 || args[0] != "setup" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("buildkite setup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config file (optional; INSPECT_* variables override it)")
	repository := fs.String("repository", "", "repository URL Buildkite records for the pipeline (its checkout is skipped; default: Inspect's own)")
	branch := fs.String("default-branch", "", "the pipeline's default branch (default: main)")
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	// Only Buildkite's settings: setup may run before the GitHub App
	// exists, and needs none of its credentials.
	cfg, err := config.LoadBuildkiteSetup(*configPath, os.LookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		return 2
	}
	token, err := cfg.BuildkiteAPIToken()
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The session pipeline, then the snapshot pipeline: the same static
	// step (the claim tells the supervisor which it is), each on its own
	// pipeline so that only the snapshot pipeline's agents get push rights.
	for _, p := range []struct{ slug, name, queue string }{
		{cfg.Buildkite.Pipeline, cfg.Buildkite.PipelineName, cfg.Buildkite.Queue},
		{cfg.Buildkite.SnapshotPipeline, cfg.Buildkite.SnapshotPipelineName, cfg.Buildkite.SnapshotQueue},
	} {
		bc := buildkiteConfig(cfg, token)
		bc.Pipeline = p.slug
		opts := buildkite.SetupOptions{Name: p.name, ClusterID: cfg.Buildkite.ClusterID, Repository: *repository, DefaultBranch: *branch,
			Queue: p.queue, TimeoutMinutes: stepTimeoutMinutes(cfg)}
		created, err := buildkite.Setup(ctx, bc, opts)
		if err != nil {
			fmt.Fprintf(stderr, "inspect: setting up pipeline %s: %v\n", p.slug, err)
			return 1
		}
		what := "updated"
		if created {
			what = "created"
		}
		fmt.Fprintf(stdout, "%s pipeline %s/%s (queue %s, timeout %d minutes)\n", what, cfg.Buildkite.Organization, p.slug, opts.Queue, opts.TimeoutMinutes)
	}
	return 0
}
