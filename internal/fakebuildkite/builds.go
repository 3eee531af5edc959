package fakebuildkite

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

type build struct {
	id, org, slug string
	number        int
	state         string
	message       string
	commit        string
	branch        string
	authorName    string
	authorEmail   string
	env           map[string]string
	meta          map[string]string
	config        string
	createdAt     time.Time
	startedAt     time.Time
	finishedAt    time.Time
	job           *job // nil when the pipeline had no step to run
	lost          bool
	canceling     bool
	cancel        context.CancelFunc
	artifacts     []*artifact
}

type job struct {
	id         string
	step       Step
	state      string
	exitStatus *int
	startedAt  time.Time
	finishedAt time.Time
	log        string
}

// Build is a snapshot of a build, for assertions.
type Build struct {
	ID          string
	Number      int
	Org         string
	Pipeline    string
	State       string // scheduled, running, passed, failed, canceling, canceled
	Message     string
	Commit      string
	Branch      string
	AuthorName  string
	AuthorEmail string
	Env         map[string]string
	MetaData    map[string]string
	WebURL      string
	JobID       string
	JobState    string
	ExitStatus  *int
	Log         string // the default runner's combined output
	Lost        bool
	Artifacts   []Artifact
}

// Artifact is an uploaded file.
type Artifact struct {
	ID    string
	JobID string
	Path  string
	Data  []byte
}

// BuildInfo is what a Runner learns about the build it runs a step for.
type BuildInfo struct {
	ID       string
	Number   int
	Org      string
	Pipeline string
	JobID    string
	Branch   string
	Commit   string
	Message  string
	WebURL   string
	Env      map[string]string
	MetaData map[string]string
}

func (s *Server) webURL(b *build) string {
	return fmt.Sprintf("%s/%s/%s/builds/%d", webHost, b.org, b.slug, b.number)
}

func (s *Server) buildAPIURL(b *build) string {
	return fmt.Sprintf("%sorganizations/%s/pipelines/%s/builds/%d", s.APIURL(), b.org, b.slug, b.number)
}

func (s *Server) snapshot(b *build) Build {
	out := Build{
		ID: b.id, Number: b.number, Org: b.org, Pipeline: b.slug, State: b.state,
		Message: b.message, Commit: b.commit, Branch: b.branch,
		AuthorName: b.authorName, AuthorEmail: b.authorEmail,
		Env: maps.Clone(b.env), MetaData: maps.Clone(b.meta), WebURL: s.webURL(b), Lost: b.lost,
	}
	if b.job != nil {
		out.JobID, out.JobState, out.Log = b.job.id, b.job.state, b.job.log
		if b.job.exitStatus != nil {
			e := *b.job.exitStatus
			out.ExitStatus = &e
		}
	}
	for _, a := range b.artifacts {
		out.Artifacts = append(out.Artifacts, Artifact{ID: a.id, JobID: a.jobID, Path: a.path, Data: slices.Clone(a.data)})
	}
	return out
}

// Builds returns a pipeline's builds, lost ones included, oldest first.
func (s *Server) Builds(org, pipeline string) []Build {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Build
	for _, b := range s.builds[key(org, pipeline)] {
		out = append(out, s.snapshot(b))
	}
	return out
}

// LoseBuild makes a build vanish: the API answers 404 for it and lists
// leave it out, no more webhooks are sent for it, and a step it is running
// has its context cancelled. A held build never runs.
func (s *Server) LoseBuild(org, pipeline string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.builds[key(org, pipeline)] {
		if b.number == number {
			b.lost = true
			if b.cancel != nil {
				b.cancel()
			}
		}
	}
}

// HoldBuilds(true) keeps new builds "scheduled" (no agent picks them up);
// HoldBuilds(false) releases them, and they run.
func (s *Server) HoldBuilds(hold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = hold
	if hold {
		return
	}
	held := s.held
	s.held = nil
	for _, b := range held {
		if b.state == "scheduled" && !b.lost {
			s.start(b)
		}
	}
}

func (s *Server) findBuild(c *call) (*build, *response) {
	n, err := strconv.Atoi(c.r.PathValue("number"))
	if err == nil {
		for _, b := range s.builds[key(c.r.PathValue("org"), c.r.PathValue("pipeline"))] {
			if b.number == n && !b.lost {
				return b, nil
			}
		}
	}
	r := errResp(http.StatusNotFound, "No build found")
	return nil, &r
}

func (s *Server) jobJSON(b *build, j *job) map[string]any {
	web := s.webURL(b) + "#" + j.id
	api := fmt.Sprintf("%s/jobs/%s", s.buildAPIURL(b), j.id)
	var agent any
	if !j.startedAt.IsZero() {
		agent = map[string]any{"id": "agent-" + j.id[:8], "name": "fakebuildkite-1", "meta_data": []string{"queue=" + j.step.Queue}}
	}
	return map[string]any{
		"id": j.id, "graphql_id": "Sm9iLS0t" + j.id, "type": "script",
		"name": j.step.Label, "label": j.step.Label, "step_key": j.step.Key,
		"state": j.state, "web_url": web, "log_url": api + "/log", "raw_log_url": api + "/log.txt",
		"artifacts_url": api + "/artifacts", "command": j.step.Command,
		"artifact_paths":    strings.Join(j.step.ArtifactPaths, ";"),
		"agent_query_rules": []string{"queue=" + j.step.Queue},
		"soft_failed":       false, "exit_status": j.exitStatus, "agent": agent,
		"created_at": ts(b.createdAt), "scheduled_at": ts(b.createdAt), "runnable_at": ts(b.createdAt),
		"started_at": ts(j.startedAt), "finished_at": ts(j.finishedAt),
		"retried": false, "retries_count": 0, "priority": map[string]int{"number": 0},
	}
}

func (s *Server) buildJSON(b *build, withJobs bool) map[string]any {
	env := b.env
	if env == nil {
		env = map[string]string{}
	}
	meta := b.meta
	if meta == nil {
		meta = map[string]string{}
	}
	out := map[string]any{
		"id": b.id, "graphql_id": "QnVpbGQtLS0" + b.id, "url": s.buildAPIURL(b), "web_url": s.webURL(b),
		"number": b.number, "state": b.state, "blocked": false, "cancel_reason": nil,
		"message": b.message, "commit": b.commit, "branch": b.branch, "tag": nil,
		"env": env, "source": "api", "meta_data": meta, "pull_request": nil,
		"creator":    map[string]any{"id": "0188a4ed-0000-4000-8000-000000000001", "name": "Inspect API", "email": "api@example.com", "avatar_url": "", "created_at": ts(b.createdAt)},
		"created_at": ts(b.createdAt), "scheduled_at": ts(b.createdAt),
		"started_at": ts(b.startedAt), "finished_at": ts(b.finishedAt),
	}
	if b.authorName != "" || b.authorEmail != "" {
		out["author"] = map[string]string{"name": b.authorName, "email": b.authorEmail}
	}
	if withJobs {
		jobs := []any{}
		if b.job != nil {
			jobs = append(jobs, s.jobJSON(b, b.job))
		}
		out["jobs"] = jobs
		if p := s.pipelines[key(b.org, b.slug)]; p != nil {
			out["pipeline"] = s.pipelineJSON(p)
		}
	}
	return out
}

type createBuildBody struct {
	Commit  string `json:"commit"`
	Branch  string `json:"branch"`
	Message string `json:"message"`
	Author  struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"author"`
	Env      map[string]string `json:"env"`
	MetaData map[string]string `json:"meta_data"`
}

func (s *Server) createBuild(c *call) response {
	org, slug := c.r.PathValue("org"), c.r.PathValue("pipeline")
	p := s.pipelines[key(org, slug)]
	if p == nil {
		return errResp(http.StatusNotFound, "No pipeline found")
	}
	var body createBuildBody
	if bad := c.decode(&body); bad != nil {
		return *bad
	}
	var errs []string
	if body.Commit == "" {
		errs = append(errs, "Commit can't be blank")
	}
	if body.Branch == "" {
		errs = append(errs, "Branch can't be blank")
	}
	if len(errs) > 0 {
		return unprocessable("Validation Failed: "+strings.Join(errs, ", "), errs...)
	}
	for k, v := range body.MetaData {
		if len(k)+len(v) > 100<<10 {
			return unprocessable("Validation Failed: meta-data value too large")
		}
	}
	now := s.now()
	b := &build{
		id: standin.UUID(), org: p.org, slug: p.slug, number: p.nextNumber, state: "scheduled",
		message: body.Message, commit: body.Commit, branch: body.Branch,
		authorName: body.Author.Name, authorEmail: body.Author.Email,
		env: body.Env, meta: body.MetaData, config: p.config, createdAt: now,
	}
	p.nextNumber++
	step, violations, ok := parsePipeline(p.config, s.expect)
	s.violate(p.org, p.slug, violations...)
	if ok {
		b.job = &job{id: standin.UUID(), step: step, state: "scheduled"}
	}
	k := key(p.org, p.slug)
	s.builds[k] = append(s.builds[k], b)
	s.enqueue("build.scheduled", b, nil)
	switch {
	case !ok:
		// Nothing an agent could run: the build fails at once, as it does
		// when Buildkite cannot process the pipeline.
		b.state, b.finishedAt = "failed", now
		s.enqueue("build.finished", b, nil)
	case s.hold:
		s.held = append(s.held, b)
	default:
		s.start(b)
	}
	return jsonResp(http.StatusCreated, s.buildJSON(b, true))
}

func (s *Server) getBuild(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	return jsonResp(http.StatusOK, s.buildJSON(b, true))
}

// listBuilds answers newest first, filtered by state / state[], branch /
// branch[], commit and meta_data[key]=value.
func (s *Server) listBuilds(c *call) response {
	q := c.r.URL.Query()
	states := append(q["state"], q["state[]"]...)
	branches := append(q["branch"], q["branch[]"]...)
	commit := q.Get("commit")
	meta := map[string]string{}
	for k, v := range q {
		if strings.HasPrefix(k, "meta_data[") && strings.HasSuffix(k, "]") && len(v) > 0 {
			meta[k[len("meta_data["):len(k)-1]] = v[0]
		}
	}
	var out []map[string]any
	bs := s.builds[key(c.r.PathValue("org"), c.r.PathValue("pipeline"))]
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		if b.lost ||
			(len(states) > 0 && !slices.Contains(states, b.state)) ||
			(len(branches) > 0 && !slices.Contains(branches, b.branch)) ||
			(commit != "" && commit != b.commit) {
			continue
		}
		match := true
		for k, v := range meta {
			if b.meta[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, s.buildJSON(b, true))
		}
	}
	if s.pipelines[key(c.r.PathValue("org"), c.r.PathValue("pipeline"))] == nil {
		return errResp(http.StatusNotFound, "No pipeline found")
	}
	return page(c, out)
}

// cancelBuild: a scheduled build is canceled at once; a running one goes
// to canceling, its step's context is cancelled (the agent's SIGTERM), and
// it ends canceled when the step exits or the grace period runs out.
func (s *Server) cancelBuild(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	switch b.state {
	case "scheduled":
		b.state, b.finishedAt = "canceled", s.now()
		if b.job != nil {
			b.job.state = "canceled"
		}
		s.held = slices.DeleteFunc(s.held, func(h *build) bool { return h == b })
		if b.cancel != nil {
			b.cancel()
		}
		s.enqueue("build.finished", b, nil)
	case "running":
		b.state, b.canceling = "canceling", true
		if b.job != nil {
			b.job.state = "canceling"
		}
		if b.cancel != nil {
			b.cancel()
		}
	case "canceling":
	default:
		return unprocessable("Build can't be canceled because it's already finished")
	}
	return jsonResp(http.StatusOK, s.buildJSON(b, true))
}

type annotation struct {
	id, context, style, body string
	createdAt, updatedAt     time.Time
}

// Annotation is a build's annotation, for assertions.
type Annotation struct {
	Context string
	Style   string
	Body    string
}

// Annotations returns a build's annotations in creation order.
func (s *Server) Annotations(org, pipeline string, number int) []Annotation {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Annotation
	for _, b := range s.builds[key(org, pipeline)] {
		if b.number == number {
			for _, a := range s.annotations[b.id] {
				out = append(out, Annotation{Context: a.context, Style: a.style, Body: a.body})
			}
		}
	}
	return out
}

func annotationJSON(a *annotation) map[string]any {
	return map[string]any{
		"id": a.id, "context": a.context, "style": a.style, "body_html": a.body,
		"created_at": ts(a.createdAt), "updated_at": ts(a.updatedAt),
	}
}

func (s *Server) listAnnotations(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	out := []map[string]any{}
	for _, a := range s.annotations[b.id] {
		out = append(out, annotationJSON(a))
	}
	return page(c, out)
}

// createAnnotation creates or replaces the annotation with that context
// (default "default"), or appends to it when append is true. Bodies are
// limited to 1 MiB, as buildkite-agent annotate's are.
func (s *Server) createAnnotation(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	var body struct {
		Body    string `json:"body"`
		Style   string `json:"style"`
		Context string `json:"context"`
		Append  bool   `json:"append"`
	}
	if bad := c.decode(&body); bad != nil {
		return *bad
	}
	if body.Body == "" {
		return unprocessable("Validation Failed: body can't be blank")
	}
	if body.Context == "" {
		body.Context = "default"
	}
	switch body.Style {
	case "":
		body.Style = "default"
	case "default", "info", "warning", "error", "success":
	default:
		return unprocessable("Validation Failed: style must be one of default, info, warning, error or success")
	}
	now := s.now()
	for _, a := range s.annotations[b.id] {
		if a.context == body.Context {
			text := body.Body
			if body.Append {
				text = a.body + body.Body
			}
			if len(text) > 1<<20 {
				return unprocessable("Validation Failed: body is too large (maximum is 1 MiB)")
			}
			a.body, a.style, a.updatedAt = text, body.Style, now
			return jsonResp(http.StatusCreated, annotationJSON(a))
		}
	}
	if len(body.Body) > 1<<20 {
		return unprocessable("Validation Failed: body is too large (maximum is 1 MiB)")
	}
	a := &annotation{id: standin.UUID(), context: body.Context, style: body.Style, body: body.Body, createdAt: now, updatedAt: now}
	s.annotations[b.id] = append(s.annotations[b.id], a)
	return jsonResp(http.StatusCreated, annotationJSON(a))
}
