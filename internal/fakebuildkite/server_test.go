package fakebuildkite

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buildkite/go-buildkite/v3/buildkite"
)

const goodYAML = `steps:
  - label: ":mag: inspect"
    key: session
    command: |
      mkdir -p evidence
      printf '%s %s %s %s' "$BUILDKITE_BUILD_NUMBER" "$BUILDKITE_PIPELINE_SLUG" "$BUILDKITE_AGENT_META_DATA_QUEUE" "$INSPECT_SESSION" > evidence/evidence.json
      echo not-an-artifact > other.txt
    checkout:
      skip: true
    agents:
      queue: inspect
    timeout_in_minutes: 1440
    artifact_paths:
      - "evidence/**/*"
`

func client(t *testing.T, s *Server, token string) *buildkite.Client {
	t.Helper()
	c, err := buildkite.NewOpts(buildkite.WithBaseURL(s.URL()), buildkite.WithTokenAuth(token))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wait(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

func create(t *testing.T, c *buildkite.Client, meta map[string]string, env map[string]string) *buildkite.Build {
	t.Helper()
	b, _, err := c.Builds.Create("acme", "inspect-session", &buildkite.CreateBuild{
		Commit: "HEAD", Branch: "main", Message: "session s1 for @octocat",
		Author: buildkite.Author{Name: "octocat", Email: "octocat@example.com"},
		Env:    env, MetaData: meta,
	})
	if err != nil {
		t.Fatalf("create build: %v", err)
	}
	return b
}

func statusOf(err error) int {
	var er *buildkite.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode
	}
	return 0
}

func TestBuildRunsUploadsArtifactsAndIsFoundByMetaData(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	s.SetExpectations(Expectations{Queue: "inspect", MaxTimeoutMinutes: 1440})
	c := client(t, s, s.Token())

	b := create(t, c, map[string]string{"inspect:session": "s1", "inspect:attempt": "1"}, map[string]string{"INSPECT_SESSION": "s1"})
	if *b.State != "scheduled" || *b.Number != 1 || b.WebURL == nil || len(b.Jobs) != 1 {
		t.Fatalf("created build = state %v number %v jobs %d", *b.State, *b.Number, len(b.Jobs))
	}
	wait(t, s)

	got, _, err := c.Builds.Get("acme", "inspect-session", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *got.State != "passed" || *got.Jobs[0].State != "passed" || *got.Jobs[0].ExitStatus != 0 {
		t.Fatalf("build state %s, job %s", *got.State, *got.Jobs[0].State)
	}

	arts, _, err := c.Artifacts.ListByBuild("acme", "inspect-session", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 1 || *arts[0].Path != "evidence/evidence.json" || *arts[0].Filename != "evidence.json" {
		t.Fatalf("artifacts = %+v", arts)
	}
	var buf bytes.Buffer
	if _, err := c.Artifacts.DownloadArtifactByURL(*arts[0].DownloadURL, &buf); err != nil {
		t.Fatal(err)
	}
	if want := "1 inspect-session inspect s1"; buf.String() != want {
		t.Fatalf("artifact = %q, want %q", buf.String(), want)
	}

	found, _, err := c.Builds.ListByPipeline("acme", "inspect-session", &buildkite.BuildsListOptions{
		MetaData: buildkite.MetaDataFilters{MetaData: map[string]string{"inspect:session": "s1", "inspect:attempt": "1"}},
		State:    []string{"passed", "running"},
	})
	if err != nil || len(found) != 1 || *found[0].Number != 1 {
		t.Fatalf("list by meta-data = %d builds, %v", len(found), err)
	}
	none, _, err := c.Builds.ListByPipeline("acme", "inspect-session", &buildkite.BuildsListOptions{
		MetaData: buildkite.MetaDataFilters{MetaData: map[string]string{"inspect:session": "s2"}},
	})
	if err != nil || len(none) != 0 {
		t.Fatalf("list by other meta-data = %d builds, %v", len(none), err)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations = %q", v)
	}
	bs := s.Builds("acme", "inspect-session")
	if len(bs) != 1 || bs[0].AuthorName != "octocat" || bs[0].MetaData["inspect:attempt"] != "1" {
		t.Fatalf("Builds() = %+v", bs)
	}
}

func TestAgentEnvironment(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	var mu sync.Mutex
	var env []string
	var dir string
	s.SetRunner(func(ctx context.Context, b BuildInfo, step Step, e []string, workDir string) int {
		mu.Lock()
		defer mu.Unlock()
		env, dir = e, workDir
		return 0
	})
	c := client(t, s, s.Token())
	b := create(t, c, nil, map[string]string{"INSPECT_SESSION": "s1", "BUILDKITE_BUILD_NUMBER": "999"})
	wait(t, s)
	mu.Lock()
	defer mu.Unlock()
	want := map[string]string{
		"BUILDKITE_BUILD_NUMBER":          "1",
		"BUILDKITE_BUILD_ID":              *b.ID,
		"BUILDKITE_JOB_ID":                *b.Jobs[0].ID,
		"BUILDKITE_PIPELINE_SLUG":         "inspect-session",
		"BUILDKITE_ORGANIZATION_SLUG":     "acme",
		"BUILDKITE_BRANCH":                "main",
		"BUILDKITE_COMMIT":                "HEAD",
		"BUILDKITE_MESSAGE":               "session s1 for @octocat",
		"BUILDKITE_BUILD_URL":             *b.WebURL,
		"BUILDKITE_AGENT_META_DATA_QUEUE": "inspect",
		"BUILDKITE_AGENT_ACCESS_TOKEN":    s.AgentAccessToken(),
		"INSPECT_SESSION":                 "s1",
	}
	for k, v := range want {
		if !slices.Contains(env, k+"="+v) {
			t.Errorf("env lacks %s=%s", k, v)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work dir %s not removed: %v", dir, err)
	}
}

func TestCancelSendsSIGTERMAndEndsCanceled(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", `steps:
  - command: |
      trap 'echo partial > evidence.txt; exit 3' TERM
      echo ready > "$READY_FIFO"
      while :; do sleep 0.01; done
    checkout: {skip: true}
    agents: ["queue=inspect"]
    timeout_in_minutes: 60
    artifact_paths: evidence.txt
`)
	fifo := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := client(t, s, s.Token())
	create(t, c, nil, map[string]string{"READY_FIFO": fifo})
	// Opening the fifo blocks until the step has set its trap and writes.
	ready, err := os.ReadFile(fifo)
	if err != nil || strings.TrimSpace(string(ready)) != "ready" {
		t.Fatalf("ready = %q, %v", ready, err)
	}
	b, err := c.Builds.Cancel("acme", "inspect-session", "1")
	if err != nil {
		t.Fatal(err)
	}
	if *b.State != "canceling" {
		t.Fatalf("cancel answered state %s, want canceling", *b.State)
	}
	wait(t, s)
	got, _, err := c.Builds.Get("acme", "inspect-session", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *got.State != "canceled" || *got.Jobs[0].State != "canceled" || *got.Jobs[0].ExitStatus != 3 {
		t.Fatalf("after cancel: build %s job %s exit %v", *got.State, *got.Jobs[0].State, *got.Jobs[0].ExitStatus)
	}
	arts := s.Builds("acme", "inspect-session")[0].Artifacts
	if len(arts) != 1 || string(arts[0].Data) != "partial\n" {
		t.Fatalf("partial evidence = %+v", arts)
	}
	if _, err := c.Builds.Cancel("acme", "inspect-session", "1"); statusOf(err) != http.StatusUnprocessableEntity {
		t.Fatalf("cancelling a finished build: %v", err)
	}
}

func TestCancelGivesUpAfterGrace(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	s.SetCancelGrace(0)
	started, release, cancelled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s.SetRunner(func(ctx context.Context, b BuildInfo, step Step, env []string, workDir string) int {
		close(started)
		<-ctx.Done()
		close(cancelled)
		<-release // ignores the cancellation for a while
		return 0
	})
	c := client(t, s, s.Token())
	create(t, c, nil, nil)
	<-started
	if _, err := c.Builds.Cancel("acme", "inspect-session", "1"); err != nil {
		t.Fatal(err)
	}
	<-cancelled
	wait(t, s) // the build ends although the runner has not returned
	if st := s.Builds("acme", "inspect-session")[0]; st.State != "canceled" || st.ExitStatus != nil {
		t.Fatalf("build = %s exit %v", st.State, st.ExitStatus)
	}
	close(release)
}

type receiver struct {
	t      *testing.T
	token  string
	signed bool
	mu     sync.Mutex
	events []string
	states []string
	bad    int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ok := false
	if rc.signed {
		stamp, sig, _ := strings.Cut(r.Header.Get("X-Buildkite-Signature"), ",")
		stamp, sig = strings.TrimPrefix(stamp, "timestamp="), strings.TrimPrefix(sig, "signature=")
		mac := hmac.New(sha256.New, []byte(rc.token))
		mac.Write([]byte(stamp + "." + string(body)))
		want := hex.EncodeToString(mac.Sum(nil))
		unix, err := strconv.ParseInt(stamp, 10, 64)
		fresh := err == nil && time.Since(time.Unix(unix, 0)).Abs() < 5*time.Minute
		ok = hmac.Equal([]byte(sig), []byte(want)) && fresh && r.Header.Get("X-Buildkite-Token") == ""
		// go-buildkite's own check must agree.
		r.Body = io.NopCloser(bytes.NewReader(body))
		if _, err := buildkite.ValidatePayload(r, []byte(rc.token)); err != nil {
			ok = false
		}
	} else {
		ok = hmac.Equal([]byte(r.Header.Get("X-Buildkite-Token")), []byte(rc.token))
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !ok {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	event := r.Header.Get("X-Buildkite-Event")
	payload, err := buildkite.ParseWebHook(event, body)
	if err != nil {
		rc.t.Errorf("ParseWebHook(%s): %v", event, err)
	}
	var state string
	switch p := payload.(type) {
	case *buildkite.BuildFinishedEvent:
		state = *p.Build.State
	case *buildkite.JobFinishedEvent:
		state = *p.Job.State
	}
	var generic map[string]any
	_ = json.Unmarshal(body, &generic)
	if generic["event"] != event || generic["pipeline"] == nil || generic["sender"] == nil {
		rc.t.Errorf("payload of %s lacks event/pipeline/sender: %s", event, body)
	}
	rc.events = append(rc.events, event)
	rc.states = append(rc.states, state)
	w.WriteHeader(http.StatusOK)
}

func TestSignedWebhooks(t *testing.T) {
	s := New(t)
	rc := &receiver{t: t, token: "whsec", signed: true}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	s.SetWebhook(hook.URL, "whsec", true)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	c := client(t, s, s.Token())
	create(t, c, nil, nil)
	wait(t, s)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	want := []string{"build.scheduled", "build.running", "job.started", "job.finished", "build.finished"}
	if !slices.Equal(rc.events, want) || rc.bad != 0 {
		t.Fatalf("events = %v (bad %d), want %v", rc.events, rc.bad, want)
	}
	if rc.states[3] != "passed" || rc.states[4] != "passed" {
		t.Fatalf("finished states = %v", rc.states)
	}
}

func TestTokenWebhooksAndDrops(t *testing.T) {
	s := New(t)
	rc := &receiver{t: t, token: "plain"}
	hook := httptest.NewServer(rc)
	defer hook.Close()
	s.SetWebhook(hook.URL, "plain", false)
	s.DropWebhooks(2)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	c := client(t, s, s.Token())
	create(t, c, nil, nil)
	wait(t, s)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if want := []string{"job.started", "job.finished", "build.finished"}; !slices.Equal(rc.events, want) || rc.bad != 0 {
		t.Fatalf("events = %v (bad %d), want %v", rc.events, rc.bad, want)
	}
	ds := s.Deliveries()
	if len(ds) != 5 || !ds[0].Dropped || !ds[1].Dropped || ds[2].Dropped || ds[4].Status != http.StatusOK {
		t.Fatalf("deliveries = %+v", ds)
	}
}

func TestHeldThenLostBuildIs404AndNeverRuns(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	ran := false
	s.SetRunner(func(context.Context, BuildInfo, Step, []string, string) int { ran = true; return 0 })
	s.HoldBuilds(true)
	c := client(t, s, s.Token())
	create(t, c, nil, nil)
	create(t, c, nil, nil)
	if b, _, err := c.Builds.Get("acme", "inspect-session", "1", nil); err != nil || *b.State != "scheduled" {
		t.Fatalf("held build: %v", err)
	}
	s.LoseBuild("acme", "inspect-session", 1)
	if _, _, err := c.Builds.Get("acme", "inspect-session", "1", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("lost build: %v, want 404", err)
	}
	if _, _, err := c.Artifacts.ListByBuild("acme", "inspect-session", "1", nil); statusOf(err) != http.StatusNotFound {
		t.Fatalf("lost build's artifacts: %v, want 404", err)
	}
	list, _, err := c.Builds.ListByPipeline("acme", "inspect-session", nil)
	if err != nil || len(list) != 1 || *list[0].Number != 2 {
		t.Fatalf("list = %d builds, %v", len(list), err)
	}
	s.HoldBuilds(false)
	wait(t, s)
	bs := s.Builds("acme", "inspect-session")
	if !bs[0].Lost || bs[0].State != "scheduled" || bs[1].State != "passed" || !ran {
		t.Fatalf("builds = %+v", bs)
	}
}

func TestFailNext(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	s.SetRunner(func(context.Context, BuildInfo, Step, []string, string) int { return 0 })
	s.FailNext("POST", "/v2/organizations/*/pipelines/*/builds", http.StatusTooManyRequests, "7")
	c := client(t, s, s.Token())
	_, _, err := c.Builds.Create("acme", "inspect-session", &buildkite.CreateBuild{Commit: "HEAD", Branch: "main"})
	var er *buildkite.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 429 || er.Response.Header.Get("Retry-After") != "7" {
		t.Fatalf("first create: %v", err)
	}
	create(t, c, nil, nil)
	if n := len(s.Builds("acme", "inspect-session")); n != 1 {
		t.Fatalf("%d builds, want exactly 1", n)
	}
	s.FailNext("GET", "/v2/organizations/acme/pipelines/inspect-session/builds/1", http.StatusBadGateway, "")
	if _, _, err := c.Builds.Get("acme", "inspect-session", "1", nil); statusOf(err) != http.StatusBadGateway {
		t.Fatalf("get: %v, want 502", err)
	}
	if _, _, err := c.Builds.Get("acme", "inspect-session", "1", nil); err != nil {
		t.Fatalf("get after the failure: %v", err)
	}
	wait(t, s)
	if rs := s.RequestsMatching("POST", "/v2/organizations/*/pipelines/*/builds"); len(rs) != 2 || rs[0].Status != 429 || rs[1].Status != 201 {
		t.Fatalf("requests = %+v", rs)
	}
}

func TestViolations(t *testing.T) {
	s := New(t)
	s.SetExpectations(Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	s.AddPipeline("acme", "bad", `steps:
  - command: "true"
    plugins:
      - docker#v5.0.0: {image: alpine}
    agents: {queue: default}
    timeout_in_minutes: 120
  - wait
`)
	s.AddPipeline("acme", "nocommand", "steps: []\n")
	c := client(t, s, s.Token())
	for _, p := range []string{"bad", "nocommand"} {
		if _, _, err := c.Builds.Create("acme", p, &buildkite.CreateBuild{Commit: "HEAD", Branch: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	wait(t, s)
	got := strings.Join(s.Violations(), "\n")
	for _, want := range []string{"acme/bad: checkout is not skipped", "uses plugins", `queue "default", want "inspect"`, "over the maximum 60", "not a command step", "acme/nocommand: want exactly one command step, found 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %q:\n%s", want, got)
		}
	}
	if st := s.Builds("acme", "nocommand")[0].State; st != "failed" {
		t.Errorf("build without a step = %s, want failed", st)
	}
}

func TestAuthAndNotFound(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	if _, _, err := client(t, s, "wrong").Builds.ListByPipeline("acme", "inspect-session", nil); statusOf(err) != http.StatusUnauthorized {
		t.Fatalf("bad token: %v, want 401", err)
	}
	resp, err := http.Get(s.APIURL() + "organizations/acme/pipelines")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	c := client(t, s, s.Token())
	if _, _, err := c.Builds.Create("acme", "missing", &buildkite.CreateBuild{Commit: "HEAD", Branch: "main"}); statusOf(err) != http.StatusNotFound {
		t.Fatalf("unknown pipeline: %v", err)
	}
	if _, _, err := c.Builds.Create("acme", "inspect-session", &buildkite.CreateBuild{}); statusOf(err) != http.StatusUnprocessableEntity {
		t.Fatalf("no commit: %v", err)
	}
	if rs := s.Requests(); rs[0].Status != 401 || rs[0].Auth != "bearer" || rs[1].Auth != "none" {
		t.Fatalf("requests = %+v", rs[:2])
	}
}

func TestAnnotations(t *testing.T) {
	s := New(t)
	s.AddPipeline("acme", "inspect-session", goodYAML)
	s.SetRunner(func(context.Context, BuildInfo, Step, []string, string) int { return 0 })
	c := client(t, s, s.Token())
	create(t, c, nil, nil)
	str := func(v string) *string { return &v }
	yes := true
	if _, _, err := c.Annotations.Create("acme", "inspect-session", "1", &buildkite.AnnotationCreate{Body: str("**Done**"), Style: str("success"), Context: str("inspect")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Annotations.Create("acme", "inspect-session", "1", &buildkite.AnnotationCreate{Body: str(" more"), Context: str("inspect"), Append: &yes, Style: str("success")}); err != nil {
		t.Fatal(err)
	}
	got := s.Annotations("acme", "inspect-session", 1)
	if len(got) != 1 || got[0].Body != "**Done** more" || got[0].Style != "success" {
		t.Fatalf("annotations = %+v", got)
	}
	list, _, err := c.Annotations.ListByBuild("acme", "inspect-session", "1", nil)
	if err != nil || len(list) != 1 || *list[0].Context != "inspect" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	wait(t, s)
}

func TestPipelinesCreateUpdateAndPagination(t *testing.T) {
	s := New(t)
	c := client(t, s, s.Token())
	const cluster = "0188f2e4-9a5c-7b4e-8c3d-2a1b0c9d8e7f"
	s.AddCluster("acme", cluster)
	// Buildkite's "Create a YAML pipeline" requires cluster_id: none, or
	// one the organization lacks, is refused and creates nothing.
	for _, id := range []string{"", "no-such-cluster"} {
		_, _, err := c.Pipelines.Create("acme", &buildkite.CreatePipeline{Name: "Inspect Session", Repository: "https://github.com/acme/inspect.git", Configuration: goodYAML, ClusterID: id})
		if statusOf(err) != http.StatusUnprocessableEntity || !strings.Contains(err.Error(), "Validation Failed") {
			t.Fatalf("cluster_id %q: %v", id, err)
		}
	}
	if got := s.Pipelines("acme"); len(got) != 0 {
		t.Fatalf("refused creates left %+v", got)
	}
	p, _, err := c.Pipelines.Create("acme", &buildkite.CreatePipeline{Name: "Inspect Session", Repository: "https://github.com/acme/inspect.git", Configuration: goodYAML, ClusterID: cluster})
	if err != nil {
		t.Fatal(err)
	}
	if *p.Slug != "inspect-session" {
		t.Fatalf("slug = %s", *p.Slug)
	}
	if got := s.Pipelines("acme"); len(got) != 1 || got[0].ClusterID != cluster || got[0].Name != "Inspect Session" {
		t.Fatalf("pipelines = %+v", got)
	}
	if _, _, err := c.Pipelines.Create("acme", &buildkite.CreatePipeline{Name: "Inspect Session", Repository: "x", Configuration: goodYAML, ClusterID: cluster}); statusOf(err) != http.StatusUnprocessableEntity {
		t.Fatalf("duplicate: %v", err)
	}
	p.Configuration = strings.Replace(goodYAML, "queue: inspect", "queue: big", 1)
	if _, err := c.Pipelines.Update("acme", p); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := s.PipelineConfig("acme", "inspect-session"); !strings.Contains(cfg, "queue: big") {
		t.Fatalf("config not updated:\n%s", cfg)
	}
	got, _, err := c.Pipelines.Get("acme", "inspect-session")
	if err != nil || *got.Name != "Inspect Session" {
		t.Fatalf("get = %+v, %v", got, err)
	}

	s.SetRunner(func(context.Context, BuildInfo, Step, []string, string) int { return 1 })
	for range 3 {
		create(t, c, nil, nil)
	}
	wait(t, s)
	first, resp, err := c.Builds.ListByPipeline("acme", "inspect-session", &buildkite.BuildsListOptions{ListOptions: buildkite.ListOptions{PerPage: 2}, State: []string{"failed"}})
	if err != nil || len(first) != 2 || *first[0].Number != 3 || resp.NextPage != 2 {
		t.Fatalf("page 1 = %d builds, next %d, %v", len(first), resp.NextPage, err)
	}
	second, resp, err := c.Builds.ListByPipeline("acme", "inspect-session", &buildkite.BuildsListOptions{ListOptions: buildkite.ListOptions{PerPage: 2, Page: 2}})
	if err != nil || len(second) != 1 || *second[0].Number != 1 || resp.NextPage != 0 {
		t.Fatalf("page 2 = %d builds, next %d, %v", len(second), resp.NextPage, err)
	}
}
