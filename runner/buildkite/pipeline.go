package buildkite

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	bk "github.com/buildkite/go-buildkite/v3/buildkite"
	"gopkg.in/yaml.v3"
)

// The session step, as .buildkite/inspect-session.yml ships it.
const (
	sessionStepLabel = ":mag: inspect session"
	sessionStepKey   = "session"
	sessionCommand   = "inspect runner --out-dir " + outDir
	// cancelGraceSeconds is how long the agent waits between SIGTERM and
	// SIGKILL on a cancel: the supervisor's time to upload partial
	// evidence.
	cancelGraceSeconds = 30
	// maxTimeoutMinutes is the longest step timeout Setup accepts: a day.
	maxTimeoutMinutes = 24 * 60
	// privateVisibility is the pipeline visibility that shows its builds
	// to members of the organization only; the other is "public".
	privateVisibility = "private"
)

// Defaults for SetupOptions' zero values.
const (
	// DefaultRepository is only there because Buildkite requires a
	// pipeline to have a repository: the step skips checkout.
	DefaultRepository     = "https://github.com/inspecthq/inspect.git"
	DefaultPipelineBranch = "main"
)

// pipelineFile is a pipeline's YAML, as much of it as the session pipeline
// uses. Field order is the order written.
type pipelineFile struct {
	Steps []commandStep `yaml:"steps"`
}

type commandStep struct {
	Label                    string       `yaml:"label"`
	Key                      string       `yaml:"key"`
	Command                  string       `yaml:"command"`
	Checkout                 stepCheckout `yaml:"checkout"`
	Agents                   stepAgents   `yaml:"agents"`
	TimeoutInMinutes         int          `yaml:"timeout_in_minutes"`
	CancelGracePeriodSeconds int          `yaml:"cancel_grace_period_seconds"`
	ArtifactPaths            []string     `yaml:"artifact_paths"`
}

type stepCheckout struct {
	Skip bool `yaml:"skip"`
}

type stepAgents struct {
	Queue string `yaml:"queue"`
}

// pipelineHeader heads the YAML that Setup installs, for whoever opens the
// pipeline's settings in Buildkite.
const pipelineHeader = "# Inspect's session pipeline, installed by `runner/buildkite.Setup`.\n" +
	"# It is static: a build's environment carries the session's ids, channel\n" +
	"# URL and single-use claim code; `inspect runner` fetches the rest.\n"

// SessionPipelineYAML renders the session pipeline: one command step that
// runs `inspect runner` on an agent of queue, with checkout skipped (the
// supervisor fetches the pinned commit itself), a timeout, a grace period
// for the supervisor to upload partial evidence when cancelled, and the
// evidence and manifest as artifacts. It is static: nothing of a session
// is in it. It is marshalled from structs, so no value can change its
// structure; Setup checks queue and timeoutMinutes.
func SessionPipelineYAML(queue string, timeoutMinutes int) []byte {
	file := pipelineFile{Steps: []commandStep{{
		Label:                    sessionStepLabel,
		Key:                      sessionStepKey,
		Command:                  sessionCommand,
		Checkout:                 stepCheckout{Skip: true},
		Agents:                   stepAgents{Queue: queue},
		TimeoutInMinutes:         timeoutMinutes,
		CancelGracePeriodSeconds: cancelGraceSeconds,
		ArtifactPaths:            []string{EvidenceArtifact, ManifestArtifact},
	}}}
	var buf bytes.Buffer
	buf.WriteString(pipelineHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(file); err != nil {
		// Strings and ints in fixed structs always encode; failing here
		// is a bug in this file, not a condition to handle.
		panic("buildkite: encoding the session pipeline: " + err.Error())
	}
	if err := enc.Close(); err != nil {
		panic("buildkite: encoding the session pipeline: " + err.Error())
	}
	return buf.Bytes()
}

// SetupOptions describes the session pipeline Setup installs.
type SetupOptions struct {
	// Name is the pipeline's name (Config.Pipeline, the slug, when
	// empty). Buildkite derives the slug from it, so it must give
	// Config.Pipeline (PipelineSlug): Setup refuses another before any
	// request, rather than create a pipeline that is not the configured
	// one.
	Name string
	// ClusterID is the Buildkite cluster the pipeline is created in:
	// "Create a YAML pipeline" lists cluster_id among its required
	// properties. Needed only when the pipeline does not exist yet.
	ClusterID string
	// Repository is required by Buildkite although the step skips
	// checkout (DefaultRepository when empty).
	Repository string
	// DefaultBranch is the pipeline's default branch, on which builds are
	// created when Config.Branch is empty (DefaultPipelineBranch when
	// empty).
	DefaultBranch string
	// Queue is the agent queue the step targets: letters, digits, '_', '.'
	// and '-'.
	Queue string
	// TimeoutMinutes is the step's timeout_in_minutes, 1 to 1440: a
	// backstop behind the supervisor's own deadline.
	TimeoutMinutes int
}

// Setup installs the session pipeline: it creates Config.Pipeline with
// SessionPipelineYAML, private, when Buildkite says it does not exist, and
// otherwise replaces its configuration (and nothing else). created says
// which it did. An existing pipeline that is not private is refused before
// any change: a build's environment holds the attempt's claim code, which
// anyone who can view the pipeline could read. The options are checked
// before any request. Running Setup again is safe.
func Setup(ctx context.Context, cfg Config, opts SetupOptions) (created bool, err error) {
	switch {
	case !isName(opts.Queue):
		return false, fmt.Errorf("buildkite: queue %q; want letters, digits, '_', '.' and '-' only", opts.Queue)
	case opts.TimeoutMinutes < 1 || opts.TimeoutMinutes > maxTimeoutMinutes:
		return false, fmt.Errorf("buildkite: timeout of %d minutes; want 1 to %d", opts.TimeoutMinutes, maxTimeoutMinutes)
	}
	if opts.Name == "" {
		opts.Name = cfg.Pipeline
	}
	if slug := PipelineSlug(opts.Name); slug != cfg.Pipeline {
		return false, fmt.Errorf("buildkite: a pipeline named %q would get the slug %q, not the configured %q: name it so that its slug matches (nothing was changed)", opts.Name, slug, cfg.Pipeline)
	}
	if opts.Repository == "" {
		opts.Repository = DefaultRepository
	}
	if opts.DefaultBranch == "" {
		opts.DefaultBranch = DefaultPipelineBranch
	}
	e, err := New(cfg)
	if err != nil {
		return false, err
	}
	return e.setup(ctx, opts)
}

func (e *Executor) setup(ctx context.Context, opts SetupOptions) (bool, error) {
	config := string(SessionPipelineYAML(opts.Queue, opts.TimeoutMinutes))
	path := pipelinePath(e.cfg.Org, e.cfg.Pipeline)
	var existing bk.Pipeline
	_, err := e.do(ctx, http.MethodGet, path, nil, &existing)
	switch {
	case status(err) == http.StatusNotFound:
		if opts.ClusterID == "" {
			return false, fmt.Errorf("buildkite: pipeline %s/%s does not exist, and creating it needs a cluster: set buildkite.cluster_id (nothing was changed)", e.cfg.Org, e.cfg.Pipeline)
		}
		create := &bk.CreatePipeline{
			ClusterID:     opts.ClusterID,
			Name:          opts.Name,
			Repository:    opts.Repository,
			Configuration: config,
			DefaultBranch: opts.DefaultBranch,
			// Private, whatever the organization's default: a build's
			// environment holds the attempt's single-use claim code, and
			// anyone who can view the pipeline can read it there and
			// claim the attempt before its agent does.
			Visibility: bk.String(privateVisibility),
		}
		var p bk.Pipeline
		if _, err := e.do(ctx, http.MethodPost, pipelinesPath(e.cfg.Org), create, &p); err != nil {
			return false, e.fail("creating the session pipeline", err)
		}
		if p.Slug == nil || *p.Slug != e.cfg.Pipeline {
			return true, fmt.Errorf("buildkite: created pipeline %q (slug %q), but the configured pipeline is %q: name it so that its slug matches", opts.Name, deref(p.Slug), e.cfg.Pipeline)
		}
		// Should Buildkite have ignored the visibility asked for, say so
		// now rather than let sessions run in the open.
		if what := notPrivate(&p); what != "" {
			return true, fmt.Errorf("buildkite: created pipeline %s/%s, but it %s, not private; anyone who can view it could read each build's environment, which holds the attempt's single-use claim code: make it private in its settings in Buildkite before running sessions",
				e.cfg.Org, e.cfg.Pipeline, what)
		}
		return true, nil
	case err != nil:
		return false, e.fail("reading the session pipeline", err)
	}
	if what := notPrivate(&existing); what != "" {
		// Refused before any write: installing the configuration would
		// leave a pipeline ready to run sessions in the open.
		return false, fmt.Errorf("buildkite: pipeline %s/%s %s, not private; anyone who can view it could read each build's environment, which holds the attempt's single-use claim code, so sessions must not run on it: make it private in its settings in Buildkite and run setup again (nothing was changed)",
			e.cfg.Org, e.cfg.Pipeline, what)
	}
	update := &bk.UpdatePipeline{Configuration: config}
	if _, err := e.do(ctx, http.MethodPatch, path, update, nil); err != nil {
		return false, e.fail("updating the session pipeline", err)
	}
	return false, nil
}

// nonSlug is what Buildkite turns into "-" when it derives a slug, and
// dashes the runs of "-" it squeezes into one.
var (
	nonSlug = regexp.MustCompile(`[^a-z0-9_-]+`)
	dashes  = regexp.MustCompile(`-{2,}`)
)

// PipelineSlug is the slug Buildkite derives from a pipeline's name, as
// Rails' parameterize does: lower case, each run of characters other than
// letters, digits, "_" and "-" one "-", no "-" twice in a row or at either
// end.
func PipelineSlug(name string) string {
	s := nonSlug.ReplaceAllString(strings.ToLower(name), "-")
	return strings.Trim(dashes.ReplaceAllString(s, "-"), "-")
}

// notPrivate says how a pipeline falls short of private, or "" when it is
// private. One whose visibility Buildkite did not state falls short too:
// nothing shows that strangers cannot view it.
func notPrivate(p *bk.Pipeline) string {
	switch v := deref(p.Visibility); v {
	case privateVisibility:
		return ""
	case "":
		return "has no stated visibility"
	default:
		return fmt.Sprintf("has visibility %q", v)
	}
}

// deref is *s, or "" when s is nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
