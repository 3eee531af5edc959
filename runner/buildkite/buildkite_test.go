package buildkite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bk "github.com/buildkite/go-buildkite/v3/buildkite"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
	"github.com/inspecthq/inspect/runner"
)

const (
	org          = "acme"
	pipelineSlug = "inspect-session"
	buildsPath   = "/v2/organizations/acme/pipelines/inspect-session/builds"
	build1Path   = buildsPath + "/1"
)

// probe stands between the executor and the stand-in: it records what the
// executor waited for, without waiting, and every request it sent, in the
// order sent (the stand-in records a request only after answering it, so
// its own log can lag behind the client's next request). It can also lose
// the answer to one request.
type probe struct {
	// lose, when set, is the "METHOD path" whose first answer is lost:
	// the server handles the request, the client gets a transport error.
	lose string

	mu    sync.Mutex
	waits []time.Duration
	sent  []sent
}

// sent is one request as the client sent it; Status is 0 when no answer
// came back.
type sent struct {
	Method, Path string
	Body         []byte
	Status       int
}

func (p *probe) wait(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits = append(p.waits, d)
	return ctx.Err()
}

func (p *probe) waited() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.waits)
}

func (p *probe) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.GetBody != nil {
		r, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		if body, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := sent{Method: req.Method, Path: req.URL.Path, Body: body}
	if err == nil {
		rec.Status = resp.StatusCode
		if p.lose == req.Method+" "+req.URL.Path {
			p.lose = ""
			rec.Status = 0
			resp.Body.Close()
			resp, err = nil, errors.New("connection reset by peer")
		}
	}
	p.sent = append(p.sent, rec)
	return resp, err
}

// requests returns the requests sent with that method ("" for any) to
// paths matching pattern (path.Match; "" for any).
func (p *probe) requests(method, pattern string) []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []sent
	for _, r := range p.sent {
		if ok, _ := path.Match(pattern, r.Path); (ok || pattern == "") && (method == "" || r.Method == method) {
			out = append(out, r)
		}
	}
	return out
}

// summary lists requests as "METHOD status".
func summary(rs []sent) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %d", r.Method, r.Status))
	}
	return out
}

// standIn is a stand-in Buildkite with the session pipeline, whose steps
// pass without running anything until a test sets its own runner.
func standIn(t *testing.T) *fakebuildkite.Server {
	t.Helper()
	s := fakebuildkite.New(t)
	s.AddPipeline(org, pipelineSlug, string(SessionPipelineYAML("inspect", 60)))
	s.SetExpectations(fakebuildkite.Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	s.SetRunner(func(context.Context, fakebuildkite.BuildInfo, fakebuildkite.Step, []string, string) int { return 0 })
	return s
}

func config(s *fakebuildkite.Server, p *probe) Config {
	return Config{
		BaseURL:    s.URL(),
		Token:      s.Token(),
		Org:        org,
		Pipeline:   pipelineSlug,
		HTTPClient: &http.Client{Transport: p, Timeout: 20 * time.Second},
		UserAgent:  "inspect/test",
		Wait:       p.wait,
	}
}

func newExecutor(t *testing.T, s *fakebuildkite.Server) (*Executor, *probe) {
	t.Helper()
	p := &probe{}
	e, err := New(config(s, p))
	if err != nil {
		t.Fatal(err)
	}
	return e, p
}

func attempt(number int) runner.Attempt {
	return runner.Attempt{
		SessionID:      "ses_01",
		AttemptID:      fmt.Sprintf("att_%02d", number),
		ChannelURL:     "https://inspect.example/",
		ClaimCode:      "claim-code-0123456789abcdef",
		Number:         number,
		RequesterLogin: "octocat",
		RequesterID:    583231,
	}
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func idle(t *testing.T, s *fakebuildkite.Server) {
	t.Helper()
	if err := s.Wait(ctxFor(t)); err != nil {
		t.Fatalf("waiting for the stand-in: %v", err)
	}
}

func start(t *testing.T, e *Executor, a runner.Attempt) string {
	t.Helper()
	id, err := e.Start(ctxFor(t), a)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return id
}

func TestStartCreatesOneBuildAndIsIdempotent(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	a := attempt(1)
	id := start(t, e, a)
	if want := "https://buildkite.example/acme/inspect-session/builds/1"; id != want {
		t.Fatalf("id = %q, want %q", id, want)
	}
	if again := start(t, e, a); again != id {
		t.Fatalf("second Start = %q, want %q", again, id)
	}
	if n := len(p.requests("POST", buildsPath)); n != 1 {
		t.Fatalf("%d create requests, want 1", n)
	}
	bs := s.Builds(org, pipelineSlug)
	if len(bs) != 1 {
		t.Fatalf("%d builds, want 1", len(bs))
	}
	b := bs[0]
	if want := "Inspect session ses_01 for @octocat (attempt 1)"; b.Message != want {
		t.Errorf("message = %q, want %q", b.Message, want)
	}
	if b.AuthorName != "octocat" || b.AuthorEmail != "583231+octocat@users.noreply.github.com" {
		t.Errorf("author = %q <%s>", b.AuthorName, b.AuthorEmail)
	}
	if b.Commit != "HEAD" || b.Branch != "main" {
		t.Errorf("commit %q on branch %q, want HEAD on main", b.Commit, b.Branch)
	}
	// The keys spelled out, not MetaSession and MetaAttempt: they are a
	// format that builds already made and the app's webhook handler rely
	// on, which a changed constant would break.
	if want := map[string]string{"inspect:session": "ses_01", "inspect:attempt": "1"}; !maps.Equal(b.MetaData, want) {
		t.Errorf("meta-data = %v, want %v", b.MetaData, want)
	}
	wantEnv := map[string]string{
		contract.EnvSessionID:  a.SessionID,
		contract.EnvAttemptID:  a.AttemptID,
		contract.EnvChannelURL: a.ChannelURL,
		contract.EnvClaimCode:  a.ClaimCode,
	}
	if !maps.Equal(b.Env, wantEnv) {
		t.Errorf("env = %v, want exactly %v", b.Env, wantEnv)
	}
	for _, r := range p.requests("", "") {
		if strings.Contains(string(r.Body), s.Token()) {
			t.Errorf("%s %s sent the API token in its body", r.Method, r.Path)
		}
	}

	// Another attempt of the session gets its own build; the default
	// branch was read once.
	if id2 := start(t, e, attempt(2)); id2 != "https://buildkite.example/acme/inspect-session/builds/2" {
		t.Fatalf("attempt 2 = %q", id2)
	}
	if n := len(p.requests("GET", "/v2/organizations/acme/pipelines/inspect-session")); n != 1 {
		t.Errorf("pipeline read %d times, want once", n)
	}
	idle(t, s)
	if v := s.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}
}

func TestStartWithoutRequesterAndOnAConfiguredBranch(t *testing.T) {
	s := standIn(t)
	p := &probe{}
	cfg := config(s, p)
	cfg.Branch = "inspect"
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := attempt(1)
	a.RequesterLogin, a.RequesterID = "", 0
	start(t, e, a)
	b := s.Builds(org, pipelineSlug)[0]
	if b.Message != "Inspect session ses_01 (attempt 1)" || b.AuthorName != "" || b.AuthorEmail != "" || b.Branch != "inspect" {
		t.Errorf("build = message %q, author %q <%s>, branch %q", b.Message, b.AuthorName, b.AuthorEmail, b.Branch)
	}
	if n := len(p.requests("GET", "/v2/organizations/acme/pipelines/inspect-session")); n != 0 {
		t.Errorf("pipeline read %d times with a configured branch", n)
	}
	idle(t, s)
}

func TestStartRefusesAMalformedAttempt(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	for name, change := range map[string]func(*runner.Attempt){
		"no session":         func(a *runner.Attempt) { a.SessionID = "" },
		"no attempt id":      func(a *runner.Attempt) { a.AttemptID = "" },
		"no channel":         func(a *runner.Attempt) { a.ChannelURL = "" },
		"no claim code":      func(a *runner.Attempt) { a.ClaimCode = "" },
		"newline in code":    func(a *runner.Attempt) { a.ClaimCode = "secret-claim\ncode" },
		"NUL in session":     func(a *runner.Attempt) { a.SessionID = "s\x00" },
		"attempt number 0":   func(a *runner.Attempt) { a.Number = 0 },
		"newline in login":   func(a *runner.Attempt) { a.RequesterLogin = "a\nb" },
		"newline in channel": func(a *runner.Attempt) { a.ChannelURL = "https://x/\n" },
	} {
		a := attempt(1)
		change(&a)
		_, err := e.Start(ctxFor(t), a)
		if err == nil {
			t.Errorf("%s: Start succeeded", name)
		} else if strings.Contains(err.Error(), "secret-claim") {
			t.Errorf("%s: error echoes the claim code: %v", name, err)
		}
	}
	if n := len(p.requests("", "")); n != 0 {
		t.Errorf("%d requests for malformed attempts", n)
	}
}

func TestStartWaitsOutARateLimitedCreate(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.FailNext("POST", buildsPath, http.StatusTooManyRequests, "7")
	start(t, e, attempt(1))
	if n := len(s.Builds(org, pipelineSlug)); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{7 * time.Second}) {
		t.Fatalf("waits = %v, want [7s]", got)
	}
	rs := p.requests("POST", buildsPath)
	if len(rs) != 2 || rs[0].Status != 429 || rs[1].Status != 201 {
		t.Fatalf("creates = %+v", rs)
	}
	if string(rs[0].Body) != string(rs[1].Body) || len(rs[1].Body) == 0 {
		t.Fatalf("the retried create sent another body:\n%s\n%s", rs[0].Body, rs[1].Body)
	}
	idle(t, s)
}

func TestStartFindsBeforeRetryingAFailedCreate(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.FailNext("POST", buildsPath, http.StatusServiceUnavailable, "")
	start(t, e, attempt(1))
	if n := len(s.Builds(org, pipelineSlug)); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
	want := []string{"GET 200", "POST 503", "GET 200", "POST 201"}
	if got := summary(p.requests("", buildsPath)); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("waits = %v, want [1s]", got)
	}
	idle(t, s)
}

func TestStartFindsBeforeRetryingATimedOutCreate(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.FailNext("POST", buildsPath, http.StatusRequestTimeout, "")
	start(t, e, attempt(1))
	if n := len(s.Builds(org, pipelineSlug)); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
	// The transport does not retry a POST; Start does, after a Find.
	want := []string{"GET 200", "POST 408", "GET 200", "POST 201"}
	if got := summary(p.requests("", buildsPath)); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("waits = %v, want [1s]", got)
	}
	idle(t, s)
}

func TestStartFindsTheBuildOfALostAnswer(t *testing.T) {
	s := standIn(t)
	p := &probe{lose: "POST " + buildsPath}
	e, err := New(config(s, p))
	if err != nil {
		t.Fatal(err)
	}
	id := start(t, e, attempt(1))
	if n := len(s.Builds(org, pipelineSlug)); n != 1 || id != s.Builds(org, pipelineSlug)[0].WebURL {
		t.Fatalf("%d builds, id %q", n, id)
	}
	if want, got := []string{"GET 200", "POST 0", "GET 200"}, summary(p.requests("", buildsPath)); !slices.Equal(got, want) {
		t.Fatalf("requests = %v, want %v", got, want)
	}
	idle(t, s)
}

func TestStartGivesUpAfterMaxRetries(t *testing.T) {
	s := standIn(t)
	p := &probe{}
	cfg := config(s, p)
	cfg.MaxRetries = 2
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.FailNext("POST", buildsPath, http.StatusInternalServerError, "")
	}
	_, err = e.Start(ctxFor(t), attempt(1))
	var final *FinalError
	if err == nil || errors.As(err, &final) {
		t.Fatalf("Start = %v, want a plain error", err)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Fatalf("waits = %v", got)
	}
	if n := len(s.Builds(org, pipelineSlug)); n != 0 {
		t.Fatalf("%d builds", n)
	}
}

func TestClientErrorsAreFinal(t *testing.T) {
	for _, code := range []int{http.StatusUnprocessableEntity, http.StatusForbidden} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			s := standIn(t)
			e, p := newExecutor(t, s)
			s.FailNext("POST", buildsPath, code, "")
			_, err := e.Start(ctxFor(t), attempt(1))
			var final *FinalError
			if !errors.As(err, &final) || final.Status != code || final.Message != http.StatusText(code) {
				t.Fatalf("Start = %v, want a *FinalError %d", err, code)
			}
			if strings.Contains(err.Error(), s.Token()) {
				t.Fatalf("the error shows the token: %v", err)
			}
			if n := len(p.requests("POST", buildsPath)); n != 1 {
				t.Fatalf("%d creates, want 1 (no retry)", n)
			}
			if got := p.waited(); len(got) != 0 {
				t.Fatalf("waited %v", got)
			}
		})
	}
}

func TestBadTokenIsFinalAndNotShown(t *testing.T) {
	s := standIn(t)
	p := &probe{}
	cfg := config(s, p)
	cfg.Token = "bkua_wrong_0123456789abcdef"
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.State(ctxFor(t), "https://buildkite.example/acme/inspect-session/builds/1")
	var final *FinalError
	if !errors.As(err, &final) || final.Status != http.StatusUnauthorized || !strings.Contains(final.Message, "Authentication required") {
		t.Fatalf("State = %v, want a *FinalError 401", err)
	}
	if strings.Contains(err.Error(), cfg.Token) {
		t.Fatalf("the error shows the token: %v", err)
	}
}

// controlled is a runner whose steps block until released, per attempt
// number, and report that they started.
type controlled struct {
	// Both maps are filled before the runner is installed and only read
	// after.
	started map[string]chan struct{}
	release map[string]chan int
}

func newControlled(s *fakebuildkite.Server, attempts ...string) *controlled {
	c := &controlled{started: map[string]chan struct{}{}, release: map[string]chan int{}}
	for _, a := range attempts {
		c.started[a] = make(chan struct{})
		c.release[a] = make(chan int, 1)
	}
	s.SetRunner(func(ctx context.Context, b fakebuildkite.BuildInfo, _ fakebuildkite.Step, _ []string, _ string) int {
		a := b.MetaData[MetaAttempt]
		started, release := c.started[a], c.release[a]
		if started == nil {
			return 0
		}
		close(started)
		select {
		case code := <-release:
			return code
		case <-ctx.Done():
			return 143 // as a supervisor ended by SIGTERM
		}
	})
	return c
}

func (c *controlled) waitStarted(t *testing.T, attempt string) {
	t.Helper()
	select {
	case <-c.started[attempt]:
	case <-ctxFor(t).Done():
		t.Fatalf("attempt %s never started", attempt)
	}
}

func state(t *testing.T, e *Executor, id string) runner.AttemptState {
	t.Helper()
	st, err := e.State(ctxFor(t), id)
	if err != nil {
		t.Fatalf("State(%s): %v", id, err)
	}
	return st
}

func TestStateFollowsTheBuild(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	c := newControlled(s, "1")

	s.HoldBuilds(true)
	id := start(t, e, attempt(1))
	if st := state(t, e, id); st.Status != runner.StatusPending {
		t.Fatalf("held build = %+v, want pending", st)
	}
	s.HoldBuilds(false)
	c.waitStarted(t, "1")
	if st := state(t, e, id); st.Status != runner.StatusRunning {
		t.Fatalf("running build = %+v, want running", st)
	}
	c.release["1"] <- 3
	idle(t, s)
	if st := state(t, e, id); st.Status != runner.StatusExited || st.ExitCode != 3 {
		t.Fatalf("finished build = %+v, want exited 3", st)
	}

	s.HoldBuilds(true)
	lost := start(t, e, attempt(2))
	s.LoseBuild(org, pipelineSlug, 2)
	if st := state(t, e, lost); st.Status != runner.StatusLost {
		t.Fatalf("lost build = %+v, want lost", st)
	}

	for _, bad := range []string{"", "local-1-att", "https://buildkite.com/acme/inspect-session/builds/x", "https://buildkite.com/acme/inspect-session/jobs/1", "https://buildkite.com/acme/../builds/1", "https://buildkite.com/builds/1"} {
		if _, err := e.State(ctxFor(t), bad); err == nil {
			t.Errorf("State(%q) succeeded", bad)
		}
	}
}

func TestStateOfABuildThatNeverRanHasNoExitCode(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	s.HoldBuilds(true)
	id := start(t, e, attempt(1))
	if err := e.Cancel(ctxFor(t), id); err != nil {
		t.Fatal(err)
	}
	if st := state(t, e, id); st.Status != runner.StatusExited || st.ExitCode != -1 {
		t.Fatalf("cancelled before running = %+v, want exited -1", st)
	}
}

func TestCancel(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	c := newControlled(s, "1")
	id := start(t, e, attempt(1))
	c.waitStarted(t, "1")
	if err := e.Cancel(ctxFor(t), id); err != nil {
		t.Fatalf("Cancel of a running build: %v", err)
	}
	idle(t, s)
	if b := s.Builds(org, pipelineSlug)[0]; b.State != "canceled" {
		t.Fatalf("build state %s, want canceled", b.State)
	}
	if st := state(t, e, id); st.Status != runner.StatusExited || st.ExitCode != 143 {
		t.Fatalf("cancelled build = %+v, want exited 143", st)
	}
	if err := e.Cancel(ctxFor(t), id); err != nil {
		t.Fatalf("Cancel of a finished build: %v", err)
	}
	if got := p.requests("PUT", build1Path+"/cancel"); len(got) != 2 || got[1].Status != http.StatusUnprocessableEntity {
		t.Fatalf("cancels = %+v", got)
	}

	s.HoldBuilds(true)
	lost := start(t, e, attempt(2))
	s.LoseBuild(org, pipelineSlug, 2)
	if err := e.Cancel(ctxFor(t), lost); err != nil {
		t.Fatalf("Cancel of a lost build: %v", err)
	}
	if err := e.Cancel(ctxFor(t), "not-a-build"); err == nil {
		t.Fatal("Cancel of a malformed id succeeded")
	}
}

func TestCancelRetriesAGatewayError(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.HoldBuilds(true)
	id := start(t, e, attempt(1))
	s.FailNext("PUT", build1Path+"/cancel", http.StatusBadGateway, "")
	if err := e.Cancel(ctxFor(t), id); err != nil {
		t.Fatal(err)
	}
	if b := s.Builds(org, pipelineSlug)[0]; b.State != "canceled" {
		t.Fatalf("build state %s, want canceled", b.State)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("waits = %v", got)
	}
}

// writing is a runner that writes the given files under its work
// directory, as `inspect runner --out-dir .inspect-out` does.
func writing(t *testing.T, s *fakebuildkite.Server, files map[string][]byte) {
	s.SetRunner(func(_ context.Context, _ fakebuildkite.BuildInfo, _ fakebuildkite.Step, _ []string, dir string) int {
		for name, data := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Error(err)
				return 1
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Error(err)
				return 1
			}
		}
		return 0
	})
}

func TestFetchResult(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	evidence := []byte(`{"version":"evidence"}`)
	manifest := []byte(`{"version":"manifest"}`)
	writing(t, s, map[string][]byte{EvidenceArtifact: evidence, ManifestArtifact: manifest, "elsewhere.json": []byte("{}")})
	id := start(t, e, attempt(1))
	idle(t, s)
	gotEvidence, gotManifest, err := e.FetchResult(ctxFor(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if string(gotEvidence) != string(evidence) || string(gotManifest) != string(manifest) {
		t.Fatalf("FetchResult = %q, %q", gotEvidence, gotManifest)
	}

	// Over a cap, by the listed size: ErrResultTooLarge, not a truncated
	// document, and not ErrNoResult.
	e.maxManifestBytes = int64(len(manifest) - 1)
	if _, _, err := e.FetchResult(ctxFor(t), id); !errors.Is(err, ErrResultTooLarge) || errors.Is(err, ErrNoResult) {
		t.Fatalf("manifest over the cap: %v, want ErrResultTooLarge", err)
	}
	e.maxManifestBytes = contract.MaxManifestBytes
	e.maxEvidenceBytes = int64(len(evidence) - 1)
	if _, _, err := e.FetchResult(ctxFor(t), id); !errors.Is(err, ErrResultTooLarge) || errors.Is(err, ErrNoResult) {
		t.Fatalf("evidence over the cap: %v, want ErrResultTooLarge", err)
	}
	// At the cap exactly is within it.
	e.maxEvidenceBytes = int64(len(evidence))
	if _, _, err := e.FetchResult(ctxFor(t), id); err != nil {
		t.Fatalf("evidence at the cap: %v", err)
	}
}

func TestFetchResultDownloadCapDoesNotTrustTheListedSize(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	evidence := []byte(`{"version":"evidence","padding":"0123456789"}`)
	writing(t, s, map[string][]byte{EvidenceArtifact: evidence})
	id := start(t, e, attempt(1))
	idle(t, s)
	path, err := buildPath(id)
	if err != nil {
		t.Fatal(err)
	}
	var arts []bk.Artifact
	if _, err := e.do(ctxFor(t), http.MethodGet, path+"/artifacts", nil, &arts); err != nil || len(arts) != 1 {
		t.Fatalf("artifacts = %+v, %v", arts, err)
	}
	// Listed as small, or not listed, the download is still cut at the
	// cap, and is as much too large as one listed so.
	small := int64(1)
	for _, size := range []*int64{&small, nil} {
		arts[0].FileSize = size
		_, err := e.download(ctxFor(t), &arts[0], 8)
		if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), "more than the 8 bytes") {
			t.Fatalf("download over the cap, listed size %v: %v, want ErrResultTooLarge", size, err)
		}
	}
}

func TestFetchResultWithoutManifestOrEvidence(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	writing(t, s, map[string][]byte{EvidenceArtifact: []byte("{}")})
	id := start(t, e, attempt(1))
	idle(t, s)
	ev, man, err := e.FetchResult(ctxFor(t), id)
	if err != nil || string(ev) != "{}" || man != nil {
		t.Fatalf("FetchResult = %q, %v, %v; want evidence and no manifest", ev, man, err)
	}
	s.LoseBuild(org, pipelineSlug, 1)
	if _, _, err := e.FetchResult(ctxFor(t), id); !errors.Is(err, ErrNoResult) {
		t.Fatalf("lost build: %v, want ErrNoResult", err)
	}

	writing(t, s, nil)
	none := start(t, e, attempt(2))
	idle(t, s)
	if _, _, err := e.FetchResult(ctxFor(t), none); !errors.Is(err, ErrNoResult) || !errors.Is(err, runner.ErrNoResult) {
		t.Fatalf("no evidence: %v, want ErrNoResult", err)
	}
}

func TestFetchResultFollowsPagination(t *testing.T) {
	s := standIn(t)
	// A pipeline that uploads everything under the output directory, so
	// the evidence comes after more than a page of other artifacts.
	s.AddPipeline(org, pipelineSlug, strings.Replace(string(SessionPipelineYAML("inspect", 60)),
		"- .inspect-out/evidence.json", "- .inspect-out/**/*", 1))
	e, p := newExecutor(t, s)
	files := map[string][]byte{EvidenceArtifact: []byte("evidence")}
	for i := range perPage + 5 {
		files[fmt.Sprintf("%s/a%03d.log", outDir, i)] = []byte("x")
	}
	writing(t, s, files)
	id := start(t, e, attempt(1))
	idle(t, s)
	ev, _, err := e.FetchResult(ctxFor(t), id)
	if err != nil || string(ev) != "evidence" {
		t.Fatalf("FetchResult = %q, %v", ev, err)
	}
	if rs := p.requests("GET", build1Path+"/artifacts"); len(rs) != 2 {
		t.Fatalf("%d artifact list requests, want 2 pages", len(rs))
	}
}

func TestFindByMetaData(t *testing.T) {
	s := standIn(t)
	e, _ := newExecutor(t, s)
	if _, found, err := e.Find(ctxFor(t), "ses_01", 1); err != nil || found {
		t.Fatalf("Find before Start = %v, %v", found, err)
	}
	id := start(t, e, attempt(1))
	got, found, err := e.Find(ctxFor(t), "ses_01", 1)
	if err != nil || !found || got != id {
		t.Fatalf("Find = %q, %v, %v; want %q", got, found, err, id)
	}
	if _, found, err := e.Find(ctxFor(t), "ses_01", 2); err != nil || found {
		t.Fatalf("Find of another attempt = %v, %v", found, err)
	}
	if _, found, err := e.Find(ctxFor(t), "ses_02", 1); err != nil || found {
		t.Fatalf("Find of another session = %v, %v", found, err)
	}
	if _, _, err := e.Find(ctxFor(t), "", 1); err == nil {
		t.Fatal("Find without a session succeeded")
	}
	idle(t, s)
}

func TestRateLimitExhaustedIsARateLimitedError(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.HoldBuilds(true)
	id := start(t, e, attempt(1))
	for range DefaultMaxRetries + 1 {
		s.FailNext("GET", build1Path, http.StatusTooManyRequests, "3")
	}
	_, err := e.State(ctxFor(t), id)
	var limited *RateLimitedError
	if !errors.As(err, &limited) || limited.RetryAfter != 3*time.Second {
		t.Fatalf("State = %v, want a *RateLimitedError after 3s", err)
	}
	want := slices.Repeat([]time.Duration{3 * time.Second}, DefaultMaxRetries)
	if got := p.waited(); !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	if n := len(p.requests("GET", build1Path)); n != DefaultMaxRetries+1 {
		t.Fatalf("%d tries, want %d", n, DefaultMaxRetries+1)
	}
	// The next call is answered normally.
	if st := state(t, e, id); st.Status != runner.StatusPending {
		t.Fatalf("State after the limit = %+v", st)
	}
}

func TestGatewayErrorsBackOffAndEndInAnError(t *testing.T) {
	s := standIn(t)
	p := &probe{}
	cfg := config(s, p)
	cfg.MaxWait = 3 * time.Second
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range DefaultMaxRetries + 1 {
		s.FailNext("GET", build1Path, http.StatusServiceUnavailable, "")
	}
	_, err = e.State(ctxFor(t), "https://buildkite.example/acme/inspect-session/builds/1")
	var final *FinalError
	if err == nil || errors.As(err, &final) || status(err) != http.StatusServiceUnavailable {
		t.Fatalf("State = %v, want the 503", err)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	if got := p.waited(); !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
}

func TestRequestTimeoutIsRetriedLikeAGatewayError(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	s.HoldBuilds(true)
	id := start(t, e, attempt(1))
	s.FailNext("GET", build1Path, http.StatusRequestTimeout, "")
	s.FailNext("PUT", build1Path+"/cancel", http.StatusRequestTimeout, "")
	if st := state(t, e, id); st.Status != runner.StatusPending {
		t.Fatalf("State after a 408 = %+v, want pending", st)
	}
	if err := e.Cancel(ctxFor(t), id); err != nil {
		t.Fatalf("Cancel after a 408: %v", err)
	}
	if got := summary(p.requests("GET", build1Path)); !slices.Equal(got, []string{"GET 408", "GET 200"}) {
		t.Fatalf("reads = %v", got)
	}
	if got := summary(p.requests("PUT", build1Path+"/cancel")); !slices.Equal(got, []string{"PUT 408", "PUT 200"}) {
		t.Fatalf("cancels = %v", got)
	}
	if got := p.waited(); !slices.Equal(got, []time.Duration{time.Second, time.Second}) {
		t.Fatalf("waits = %v, want [1s 1s]", got)
	}
}

func TestRequestTimeoutsToTheLastRetryAreNotFinal(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	for range DefaultMaxRetries + 1 {
		s.FailNext("GET", build1Path, http.StatusRequestTimeout, "")
	}
	_, err := e.State(ctxFor(t), "https://buildkite.example/acme/inspect-session/builds/1")
	var final *FinalError
	if err == nil || errors.As(err, &final) || status(err) != http.StatusRequestTimeout {
		t.Fatalf("State = %v, want the 408, not a *FinalError", err)
	}
	if n := len(p.requests("GET", build1Path)); n != DefaultMaxRetries+1 {
		t.Fatalf("%d tries, want %d", n, DefaultMaxRetries+1)
	}
}

func TestAnnotate(t *testing.T) {
	s := standIn(t)
	e, p := newExecutor(t, s)
	id := start(t, e, attempt(1))
	if err := e.Annotate(ctxFor(t), id, "info", "Session **running**"); err != nil {
		t.Fatal(err)
	}
	if err := e.Annotate(ctxFor(t), id, "success", "Session **done**"); err != nil {
		t.Fatal(err)
	}
	got := s.Annotations(org, pipelineSlug, 1)
	want := []fakebuildkite.Annotation{{Context: "inspect", Style: "success", Body: "Session **done**"}}
	if !slices.Equal(got, want) {
		t.Fatalf("annotations = %+v, want %+v", got, want)
	}
	before := len(p.requests("", ""))
	for _, bad := range []struct{ style, body string }{{"default", "x"}, {"", "x"}, {"info", ""}, {"info", strings.Repeat("x", maxAnnotationBytes+1)}} {
		if err := e.Annotate(ctxFor(t), id, bad.style, bad.body); err == nil {
			t.Errorf("Annotate(%q, %d bytes) succeeded", bad.style, len(bad.body))
		}
	}
	if after := len(p.requests("", "")); after != before {
		t.Errorf("%d requests for refused annotations", after-before)
	}
	s.FailNext("POST", build1Path+"/annotations", http.StatusForbidden, "")
	var final *FinalError
	if err := e.Annotate(ctxFor(t), id, "error", "x"); !errors.As(err, &final) || final.Status != http.StatusForbidden {
		t.Fatalf("Annotate without the scope = %v, want a *FinalError 403", err)
	}
	idle(t, s)
}

func TestNewChecksTheConfig(t *testing.T) {
	good := Config{Token: "bkua_0123456789", Org: "acme", Pipeline: "inspect-session"}
	if e, err := New(good); err != nil || e.base.String() != "https://api.buildkite.com/" {
		t.Fatalf("New(good) = %v", err)
	}
	for name, change := range map[string]func(*Config){
		"no token":          func(c *Config) { c.Token = "" },
		"no org":            func(c *Config) { c.Org = "" },
		"no pipeline":       func(c *Config) { c.Pipeline = "" },
		"org with a slash":  func(c *Config) { c.Org = "acme/x" },
		"pipeline dot-dot":  func(c *Config) { c.Pipeline = ".." },
		"ftp base":          func(c *Config) { c.BaseURL = "ftp://api.buildkite.com/" },
		"relative base":     func(c *Config) { c.BaseURL = "api.buildkite.com" },
		"unparseable base":  func(c *Config) { c.BaseURL = "http://[::1" },
		"newline in branch": func(c *Config) { c.Branch = "main\n" },
		"token in bad base": func(c *Config) { c.BaseURL = "ftp://bkua_0123456789@x/" },
		"base without host": func(c *Config) { c.BaseURL = "https:///v2" },
	} {
		cfg := good
		change(&cfg)
		_, err := New(cfg)
		if err == nil {
			t.Errorf("%s: New succeeded", name)
		} else if strings.Contains(err.Error(), good.Token) {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
	// A base URL without its trailing slash keeps its path.
	cfg := good
	cfg.BaseURL = "https://proxy.example/buildkite"
	if e, err := New(cfg); err != nil || e.base.String() != "https://proxy.example/buildkite/" {
		t.Fatalf("New without the slash = %v, %v", e.base, err)
	}
}

func TestPaths(t *testing.T) {
	if got, want := pipelinesPath("acme"), "v2/organizations/acme/pipelines"; got != want {
		t.Errorf("pipelinesPath = %q, want %q", got, want)
	}
	if got, want := pipelinePath("acme", "inspect-session"), "v2/organizations/acme/pipelines/inspect-session"; got != want {
		t.Errorf("pipelinePath = %q, want %q", got, want)
	}
	got, err := buildPath("https://buildkite.com/acme/inspect-session/builds/42")
	if want := "v2/organizations/acme/pipelines/inspect-session/builds/42"; err != nil || got != want {
		t.Errorf("buildPath = %q, %v; want %q", got, err, want)
	}
	if _, err := buildPath("https://buildkite.com/acme/inspect-session/jobs/42"); err == nil {
		t.Error("buildPath of a job's URL succeeded")
	}
}

func TestParseExternalID(t *testing.T) {
	org, pipeline, n, err := parseExternalID("https://buildkite.com/acme/inspect-session/builds/42")
	if err != nil || org != "acme" || pipeline != "inspect-session" || n != 42 {
		t.Fatalf("parseExternalID = %q %q %d %v", org, pipeline, n, err)
	}
	for _, bad := range []string{
		"", "42", "https://buildkite.com/acme/inspect-session/builds/",
		"https://buildkite.com/acme/inspect-session/builds/0",
		"https://buildkite.com/acme/inspect-session/builds/-1",
		"https://buildkite.com/acme/inspect-session/builds/+1",
		"https://buildkite.com/acme/inspect-session/builds/01",
		"https://buildkite.com/acme/inspect-session/build/1",
		"https://buildkite.com/acme/inspect session/builds/1",
		"https://buildkite.com/acme/inspect-session/builds/1\n",
	} {
		if _, _, _, err := parseExternalID(bad); err == nil {
			t.Errorf("parseExternalID(%q) succeeded", bad)
		}
	}
}
