package fakebuildkite

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/internal/standin"
)

// Step is the one command step of a pipeline, as the stand-in's agent runs
// it.
type Step struct {
	Key              string
	Label            string
	Command          string   // "commands" lists are joined with newlines, as the agent does
	ArtifactPaths    []string // globs relative to the work directory
	Queue            string   // from agents: {queue: x} or agents: ["queue=x"]; "default" when none
	TimeoutInMinutes int      // 0 when not set
	SkipCheckout     bool     // checkout: {skip: true}
	Env              map[string]string
}

// Expectations are what the stand-in checks a pipeline's step against, on
// top of the checks it always makes (one command step, no plugins,
// checkout skipped, a queue and a timeout set).
type Expectations struct {
	Queue             string // the queue the step must target; "" accepts any explicit queue
	MaxTimeoutMinutes int    // the organization's maximum; 0 for none
}

// SetExpectations sets what later builds' pipelines are checked against.
func (s *Server) SetExpectations(e Expectations) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expect = e
}

type pipeline struct {
	id, org, slug, name, description, repository, defaultBranch string
	config                                                      string
	visibility                                                  string // "private" (Buildkite's default) or "public"
	clusterID                                                   string
	env                                                         map[string]string
	createdAt                                                   time.Time
	nextNumber                                                  int
}

// AddPipeline creates (or replaces the configuration of) a pipeline whose
// steps are the given YAML, as if set up in Buildkite's UI.
func (s *Server) AddPipeline(org, slug, yamlConfig string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pipelines[key(org, slug)]; p != nil {
		p.config = yamlConfig
		return
	}
	s.pipelines[key(org, slug)] = &pipeline{
		id: standin.UUID(), org: org, slug: slug, name: slug, config: yamlConfig,
		defaultBranch: "main", createdAt: s.now(), nextNumber: 1, visibility: "private",
	}
}

// AddCluster makes a cluster of the organization, whose id a created
// pipeline may name.
func (s *Server) AddCluster(org, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters[key(org, id)] = true
}

// PipelineInfo is a pipeline as created, for inspection.
type PipelineInfo struct {
	Slug, Name, ClusterID, Visibility string
}

// Pipelines returns the organization's pipelines, by slug.
func (s *Server) Pipelines(org string) []PipelineInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PipelineInfo
	for _, p := range s.pipelines {
		if strings.EqualFold(p.org, org) {
			out = append(out, PipelineInfo{Slug: p.slug, Name: p.name, ClusterID: p.clusterID, Visibility: p.visibility})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

// SetPipelineVisibility makes a pipeline "public" or "private", as in
// Buildkite's UI.
func (s *Server) SetPipelineVisibility(org, slug, visibility string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pipelines[key(org, slug)]; p != nil {
		p.visibility = visibility
	}
}

// PipelineVisibility returns a pipeline's visibility ("" when it does not
// exist).
func (s *Server) PipelineVisibility(org, slug string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pipelines[key(org, slug)]; p != nil {
		return p.visibility
	}
	return ""
}

// PipelineConfig returns a pipeline's YAML, and whether it exists.
func (s *Server) PipelineConfig(org, slug string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pipelines[key(org, slug)]
	if p == nil {
		return "", false
	}
	return p.config, true
}

func (s *Server) pipelineJSON(p *pipeline) map[string]any {
	api := fmt.Sprintf("%sorganizations/%s/pipelines/%s", s.APIURL(), p.org, p.slug)
	running, scheduled := 0, 0
	for _, b := range s.builds[key(p.org, p.slug)] {
		switch b.state {
		case "running", "canceling":
			running++
		case "scheduled":
			scheduled++
		}
	}
	env := p.env
	if env == nil {
		env = map[string]string{}
	}
	var steps []any
	if st, _, ok := parsePipeline(p.config, Expectations{}); ok {
		steps = []any{map[string]any{
			"type": "script", "name": st.Label, "label": st.Label, "key": st.Key,
			"command": st.Command, "artifact_paths": strings.Join(st.ArtifactPaths, ";"),
			"timeout_in_minutes": st.TimeoutInMinutes, "agent_query_rules": []string{"queue=" + st.Queue},
			"env": st.Env,
		}}
	}
	return map[string]any{
		"id": p.id, "graphql_id": "UGlwZWxpbmUtLS0" + p.id, "url": api,
		"web_url": fmt.Sprintf("%s/%s/%s", webHost, p.org, p.slug),
		"name":    p.name, "description": p.description, "slug": p.slug, "cluster_id": orNil(p.clusterID),
		"repository": p.repository, "default_branch": p.defaultBranch,
		"branch_configuration": nil, "skip_queued_branch_builds": false,
		"cancel_running_branch_builds": false, "visibility": p.visibility, "tags": nil,
		"provider":      map[string]any{"id": "github", "settings": map[string]any{}},
		"builds_url":    api + "/builds",
		"badge_url":     fmt.Sprintf("%s/badges/%s.svg", webHost, p.id),
		"created_at":    ts(p.createdAt),
		"archived_at":   nil,
		"env":           env,
		"configuration": p.config, "steps": steps,
		"scheduled_builds_count": scheduled, "running_builds_count": running,
		"scheduled_jobs_count": scheduled, "running_jobs_count": running, "waiting_jobs_count": 0,
	}
}

func (s *Server) listPipelines(c *call) response {
	org := c.r.PathValue("org")
	var ps []*pipeline
	for _, p := range s.pipelines {
		if strings.EqualFold(p.org, org) {
			ps = append(ps, p)
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].slug < ps[j].slug })
	out := make([]map[string]any, len(ps))
	for i, p := range ps {
		out[i] = s.pipelineJSON(p)
	}
	return page(c, out)
}

func (s *Server) getPipeline(c *call) response {
	p := s.pipelines[key(c.r.PathValue("org"), c.r.PathValue("pipeline"))]
	if p == nil {
		return errResp(http.StatusNotFound, "No pipeline found")
	}
	return jsonResp(http.StatusOK, s.pipelineJSON(p))
}

// pipelineBody is the create/update body. Steps given as JSON are turned
// into the equivalent YAML configuration.
type pipelineBody struct {
	Name          *string           `json:"name"`
	Repository    *string           `json:"repository"`
	Description   *string           `json:"description"`
	DefaultBranch *string           `json:"default_branch"`
	Configuration string            `json:"configuration"`
	Steps         []map[string]any  `json:"steps"`
	Env           map[string]string `json:"env"`
	Visibility    *string           `json:"visibility"`
	ClusterID     *string           `json:"cluster_id"`
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// visibility checks a body's visibility: "private" or "public", or none.
func (b pipelineBody) visibility() (string, bool) {
	if b.Visibility == nil {
		return "", true
	}
	switch *b.Visibility {
	case "private", "public":
		return *b.Visibility, true
	}
	return "", false
}

func (b pipelineBody) config() (string, error) {
	if b.Configuration != "" || len(b.Steps) == 0 {
		return b.Configuration, nil
	}
	y, err := yaml.Marshal(map[string]any{"steps": b.Steps})
	return string(y), err
}

// Buildkite derives a slug from a name as Rails' parameterize does.
var (
	nonSlug = regexp.MustCompile(`[^a-z0-9_-]+`)
	dashes  = regexp.MustCompile(`-{2,}`)
)

func slugify(name string) string {
	s := nonSlug.ReplaceAllString(strings.ToLower(name), "-")
	return strings.Trim(dashes.ReplaceAllString(s, "-"), "-")
}

func (s *Server) createPipeline(c *call) response {
	var body pipelineBody
	if bad := c.decode(&body); bad != nil {
		return *bad
	}
	org := c.r.PathValue("org")
	var errs []any
	if body.Name == nil || strings.TrimSpace(*body.Name) == "" {
		errs = append(errs, map[string]string{"field": "name", "code": "blank", "message": "Name can't be blank"})
	}
	if body.Repository == nil || *body.Repository == "" {
		errs = append(errs, map[string]string{"field": "repository", "code": "blank", "message": "Repository can't be blank"})
	}
	// Buildkite's "Create a YAML pipeline" lists cluster_id among the
	// required properties; the id must be one of the organization's
	// clusters. (The error's wording is the stand-in's own.)
	switch {
	case body.ClusterID == nil || strings.TrimSpace(*body.ClusterID) == "":
		errs = append(errs, map[string]string{"field": "cluster_id", "code": "blank", "message": "Cluster can't be blank"})
	case !s.clusters[key(org, *body.ClusterID)]:
		errs = append(errs, map[string]string{"field": "cluster_id", "code": "invalid", "message": "Cluster could not be found"})
	}
	vis, ok := body.visibility()
	if !ok {
		errs = append(errs, map[string]string{"field": "visibility", "code": "invalid", "message": "Visibility must be public or private"})
	}
	if vis == "" {
		vis = "private"
	}
	cfg, err := body.config()
	if err != nil || (cfg == "" && len(body.Steps) == 0) {
		errs = append(errs, map[string]string{"field": "configuration", "code": "blank", "message": "Configuration or steps must be given"})
	}
	if len(errs) > 0 {
		return jsonResp(http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": errs})
	}
	slug := slugify(*body.Name)
	if s.pipelines[key(org, slug)] != nil {
		return jsonResp(http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []any{
			map[string]string{"field": "name", "code": "already_exists", "message": "Name has already been taken"},
		}})
	}
	p := &pipeline{
		id: standin.UUID(), org: org, slug: slug, name: *body.Name, repository: *body.Repository,
		config: cfg, env: body.Env, defaultBranch: "main", createdAt: s.now(), nextNumber: 1, visibility: vis,
	}
	if body.Description != nil {
		p.description = *body.Description
	}
	if body.DefaultBranch != nil && *body.DefaultBranch != "" {
		p.defaultBranch = *body.DefaultBranch
	}
	p.clusterID = *body.ClusterID
	s.pipelines[key(org, slug)] = p
	return jsonResp(http.StatusCreated, s.pipelineJSON(p))
}

func (s *Server) updatePipeline(c *call) response {
	p := s.pipelines[key(c.r.PathValue("org"), c.r.PathValue("pipeline"))]
	if p == nil {
		return errResp(http.StatusNotFound, "No pipeline found")
	}
	var body pipelineBody
	if bad := c.decode(&body); bad != nil {
		return *bad
	}
	cfg, err := body.config()
	if err != nil {
		return unprocessable("Validation Failed")
	}
	if cfg != "" {
		p.config = cfg
	}
	if body.Name != nil && *body.Name != "" {
		p.name = *body.Name
	}
	if body.Repository != nil {
		p.repository = *body.Repository
	}
	if body.Description != nil {
		p.description = *body.Description
	}
	if body.DefaultBranch != nil && *body.DefaultBranch != "" {
		p.defaultBranch = *body.DefaultBranch
	}
	if body.Env != nil {
		p.env = body.Env
	}
	vis, ok := body.visibility()
	if !ok {
		return unprocessable("Validation Failed: visibility must be public or private")
	}
	if vis != "" {
		p.visibility = vis
	}
	return jsonResp(http.StatusOK, s.pipelineJSON(p))
}

// parsePipeline reads a pipeline's YAML and returns its first command step,
// what is wrong with it, and whether there is a step to run at all.
func parsePipeline(config string, want Expectations) (Step, []string, bool) {
	var doc any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return Step{}, []string{"pipeline YAML does not parse: " + err.Error()}, false
	}
	var rawSteps []any
	var topAgents any
	var topEnv map[string]string
	switch d := doc.(type) {
	case []any:
		rawSteps = d
	case map[string]any:
		rawSteps, _ = d["steps"].([]any)
		topAgents = d["agents"]
		topEnv = stringMap(d["env"])
	default:
		return Step{}, []string{"pipeline YAML has no steps"}, false
	}

	var violations []string
	var commands []map[string]any
	for _, rs := range rawSteps {
		m, ok := rs.(map[string]any)
		if !ok {
			violations = append(violations, fmt.Sprintf("step %v is not a command step", rs))
			continue
		}
		if _, ok := m["command"]; ok {
			commands = append(commands, m)
		} else if _, ok := m["commands"]; ok {
			commands = append(commands, m)
		} else {
			violations = append(violations, "a step that is not a command step")
		}
	}
	if len(commands) != 1 {
		violations = append(violations, fmt.Sprintf("want exactly one command step, found %d", len(commands)))
	}
	if len(commands) == 0 {
		return Step{}, violations, false
	}
	m := commands[0]
	st := Step{Env: map[string]string{}}
	for k, v := range topEnv {
		st.Env[k] = v
	}
	for k, v := range stringMap(m["env"]) {
		st.Env[k] = v
	}
	st.Key = str(m["key"])
	if st.Key == "" {
		st.Key = str(m["identifier"])
	}
	st.Label = str(m["label"])
	if st.Label == "" {
		st.Label = str(m["name"])
	}
	cmd := m["command"]
	if cmd == nil {
		cmd = m["commands"]
	}
	st.Command = strings.Join(stringList(cmd), "\n")
	if strings.TrimSpace(st.Command) == "" {
		violations = append(violations, "the command step has an empty command")
	}
	for _, p := range stringList(m["artifact_paths"]) {
		for _, part := range strings.Split(p, ";") {
			if part = strings.TrimSpace(part); part != "" {
				st.ArtifactPaths = append(st.ArtifactPaths, part)
			}
		}
	}
	if _, ok := m["plugins"]; ok {
		violations = append(violations, "the step uses plugins")
	}
	if co, ok := m["checkout"].(map[string]any); ok && co["skip"] == true {
		st.SkipCheckout = true
	} else {
		violations = append(violations, "checkout is not skipped (want checkout: {skip: true})")
	}
	agents := m["agents"]
	if agents == nil {
		agents = topAgents
	}
	st.Queue = queueOf(agents)
	switch {
	case st.Queue == "":
		st.Queue = "default"
		violations = append(violations, "the step targets no queue")
	case want.Queue != "" && st.Queue != want.Queue:
		violations = append(violations, fmt.Sprintf("the step targets queue %q, want %q", st.Queue, want.Queue))
	}
	switch t := m["timeout_in_minutes"].(type) {
	case int:
		st.TimeoutInMinutes = t
	case string:
		st.TimeoutInMinutes, _ = strconv.Atoi(t)
	}
	switch {
	case st.TimeoutInMinutes <= 0:
		violations = append(violations, "the step has no timeout_in_minutes")
	case want.MaxTimeoutMinutes > 0 && st.TimeoutInMinutes > want.MaxTimeoutMinutes:
		violations = append(violations, fmt.Sprintf("timeout_in_minutes %d is over the maximum %d", st.TimeoutInMinutes, want.MaxTimeoutMinutes))
	}
	return st, violations, true
}

func queueOf(agents any) string {
	switch a := agents.(type) {
	case map[string]any:
		return str(a["queue"])
	case []any:
		for _, r := range a {
			if k, v, ok := strings.Cut(str(r), "="); ok && k == "queue" {
				return v
			}
		}
	}
	return ""
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func stringList(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, str(e))
		}
		return out
	default:
		return []string{str(x)}
	}
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		out[k] = str(e)
	}
	return out
}
