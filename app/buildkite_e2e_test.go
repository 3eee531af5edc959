package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/buildkite"
	"github.com/inspecthq/inspect/session"
)

const (
	bkOrg       = "acme"
	bkPipeline  = "inspect-session"
	bkHookToken = "bk-webhook-token-0123456789"
)

// bkHarness runs sessions on the Buildkite stand-in: the app's Buildkite
// executor creates builds of the shipped session pipeline, the stand-in's
// agent runs its step (`inspect runner`, for real, in bubblewrap), uploads
// the step's artifacts and sends signed webhooks to the app.
type bkHarness struct {
	*harness
	bk *fakebuildkite.Server
	// front is the app's public URL: it outlives app restarts, as a load
	// balancer does, and can refuse result uploads.
	front          *httptest.Server
	refuseUploads  atomic.Bool
	mu             sync.Mutex
	waits          []time.Duration // what the executor waited between retries
	resultAttempts atomic.Int32
	// agentStarted is closed when a supervisor reports the agent phase.
	agentStarted chan struct{}
	agentOnce    sync.Once
}

func newBuildkiteHarness(t *testing.T, opts ...harnessOption) *bkHarness {
	t.Helper()
	bin := inspectBinary(t)
	// The pipeline's step runs `inspect runner` from the agent's PATH.
	t.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))

	bk := fakebuildkite.New(t)
	bk.SetExpectations(fakebuildkite.Expectations{Queue: "inspect", MaxTimeoutMinutes: 60})
	pipelineYAML, err := os.ReadFile("../.buildkite/inspect-session.yml")
	if err != nil {
		t.Fatal(err)
	}
	bk.AddPipeline(bkOrg, bkPipeline, string(pipelineYAML))

	b := &bkHarness{bk: bk, agentStarted: make(chan struct{})}
	b.front = httptest.NewServer(http.HandlerFunc(b.serveFront))
	t.Cleanup(b.front.Close)

	bx, err := buildkite.New(buildkite.Config{
		BaseURL: bk.URL(), Token: bk.Token(), Org: bkOrg, Pipeline: bkPipeline,
		Wait: func(ctx context.Context, d time.Duration) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.waits = append(b.waits, d)
			return ctx.Err()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, append([]harnessOption{func(c *config.Server) {
		c.Executor.Kind = "buildkite"
		c.ChannelURL = b.front.URL
		c.Buildkite.Organization = bkOrg
		c.Buildkite.Pipeline = bkPipeline
		c.Buildkite.APIToken = bk.Token()
		c.Buildkite.WebhookToken = bkHookToken
	}}, opts...)...)
	h.stop()
	h.exec = bx
	h.channelURL = b.front.URL
	// The supervisor enforces the spec's deadline on the real clock.
	h.clock = fakeclock.New(time.Now().UTC().Truncate(time.Second))
	h.start()
	b.harness = h
	bk.SetWebhook(b.front.URL+app.BuildkiteHookPath, bkHookToken, true)
	h.gh.CommitFiles(owner, repoName, "main", examples.SampleRepo(), "the sample repository")
	return b
}

// serveFront hands requests to whichever app is running now.
func (b *bkHarness) serveFront(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/result") {
		b.resultAttempts.Add(1)
		if b.refuseUploads.Load() {
			http.Error(w, `{"code":"invalid","message":"refused by the test"}`, http.StatusBadRequest)
			return
		}
	}
	if strings.HasSuffix(r.URL.Path, "/progress") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		var ev contract.ProgressEvent
		if json.Unmarshal(body, &ev) == nil && ev.Phase == contract.PhaseAgent {
			b.agentOnce.Do(func() { close(b.agentStarted) })
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	hp := b.handler.Load()
	if hp == nil {
		http.Error(w, "restarting", http.StatusServiceUnavailable)
		return
	}
	(*hp).ServeHTTP(w, r)
}

// settle waits for every build to finish and its webhooks to be answered,
// then runs the app's pending work.
func (b *bkHarness) settle() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := b.bk.Wait(ctx); err != nil {
		b.t.Fatalf("builds did not finish: %v\nbuilds: %+v\n%s", err, b.bk.Builds(bkOrg, bkPipeline), b.logs)
	}
	b.runWorkers()
}

// startOnRealPR opens a PR on a real branch, comments body on it and runs
// the app's work: the session is dispatched.
func (b *bkHarness) startOnRealPR(body string) {
	b.t.Helper()
	withRealPR(b.t, b.harness)
	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: body, onPR: true})); code != 200 {
		b.t.Fatal(code)
	}
	b.runWorkers()
}

func (b *bkHarness) builds() []fakebuildkite.Build { return b.bk.Builds(bkOrg, bkPipeline) }

func (b *bkHarness) buildLogs() string {
	var out strings.Builder
	for _, bd := range b.builds() {
		out.WriteString(bd.Log)
	}
	return out.String()
}

// checkBuildsCarryNoSecret asserts that builds were made as issue 4 says:
// message, author and meta-data name the session, and the env holds the
// session id, attempt id, channel URL and claim code, and no secret.
func (b *bkHarness) checkBuildsCarryNoSecret(t testing.TB) {
	t.Helper()
	secrets := append([]string{b.bk.Token(), b.bk.AgentAccessToken(), bkHookToken, secret, oldSecret,
		strings.TrimSpace(b.cfg.GitHub.PrivateKey)}, b.gh.MintedTokens()...)
	for _, bd := range b.builds() {
		if len(bd.Env) != 4 || bd.Env[contract.EnvSessionID] == "" || bd.Env[contract.EnvAttemptID] == "" ||
			bd.Env[contract.EnvChannelURL] != b.front.URL || bd.Env[contract.EnvClaimCode] == "" {
			t.Errorf("build %d env = %v", bd.Number, bd.Env)
		}
		if bd.MetaData["inspect:session"] != bd.Env[contract.EnvSessionID] || bd.MetaData["inspect:attempt"] == "" {
			t.Errorf("build %d meta-data = %v", bd.Number, bd.MetaData)
		}
		if !strings.Contains(bd.Message, bd.Env[contract.EnvSessionID]) || !strings.Contains(bd.Message, "@alice") || bd.AuthorName != "alice" {
			t.Errorf("build %d message %q author %q", bd.Number, bd.Message, bd.AuthorName)
		}
		if bd.Commit != "HEAD" || bd.Branch != "main" {
			t.Errorf("build %d on %s@%s, want the pipeline's own main@HEAD", bd.Number, bd.Branch, bd.Commit)
		}
		for _, sec := range secrets {
			if sec == "" {
				continue
			}
			for k, v := range bd.Env {
				if strings.Contains(v, sec) {
					t.Errorf("build %d env %s holds a secret", bd.Number, k)
				}
			}
			for k, v := range bd.MetaData {
				if strings.Contains(v, sec) {
					t.Errorf("build %d meta-data %s holds a secret", bd.Number, k)
				}
			}
		}
	}
	if v := b.bk.Violations(); len(v) != 0 {
		t.Errorf("pipeline violations: %v", v)
	}
}

func TestBuildkiteSessionOnAnIssueOpensAPullRequest(t *testing.T) {
	b := newBuildkiteHarness(t)
	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	b.runWorkers()
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nbuild log:\n%s\n%s", s.State(), s.Outcome, s.Detail, b.buildLogs(), b.logs)
	}
	sess := assertIssueSessionOpenedPR(t, b.harness)

	builds := b.builds()
	if len(builds) != 1 || builds[0].State != "passed" {
		t.Fatalf("builds = %+v", builds)
	}
	b.checkBuildsCarryNoSecret(t)
	// The upload over the channel was the fast path; the artifacts are
	// there too.
	if n := b.resultAttempts.Load(); n != 1 {
		t.Errorf("result uploads = %d, want 1", n)
	}
	if len(builds[0].Artifacts) != 2 {
		t.Errorf("artifacts = %+v", builds[0].Artifacts)
	}
	anns := b.bk.Annotations(bkOrg, bkPipeline, builds[0].Number)
	if len(anns) != 1 || anns[0].Style != "success" || !strings.Contains(anns[0].Body, sess.ID) {
		t.Errorf("annotations = %+v", anns)
	}
	a, err := b.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil || a.ExternalID != builds[0].WebURL || a.Number != 1 {
		t.Errorf("attempt = %+v (%v), want build %s", a, err, builds[0].WebURL)
	}

	// The claim code in the build's env was spent by the supervisor: a
	// second use is refused.
	claim, _ := json.Marshal(contract.ClaimRequest{SpecVersion: contract.SpecVersion, AttemptID: a.ID, ClaimCode: builds[0].Env[contract.EnvClaimCode]})
	resp, err := http.Post(b.front.URL+contract.AttemptPath(contract.PathClaim, a.ID), contract.ContentTypeJSON, bytes.NewReader(claim))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second claim: %d, want 401", resp.StatusCode)
	}
}

// A PR session on Buildkite whose agent records its environment: the
// commit shows the sandbox saw no BUILDKITE_* variable, the agent's
// access token least of all.
func TestBuildkiteSessionOnAPullRequestAndTheSandboxSeesNoBuildkiteSecret(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": "agent:\n  preset: command\n" +
		"  command: [\"sh\", \"-c\", \"env > sandbox-env.txt && exec sh scripts/inspect-stand-in-agent.sh \\\"$@\\\"\", \"agent\"]\n" +
		"verify:\n  - name: unit tests\n    run: [\"go\", \"test\", \"-json\", \"./...\"]\n"}, "record the agent's env")
	b.gh.CreateBranch(owner, repoName, "fix-add", "main")
	head := b.gh.CommitFiles(owner, repoName, "fix-add", map[string]string{"NOTES.md": "looking into TestAdd\n"}, "notes")
	b.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Fix Add", State: "open", User: "mara", HeadRef: "fix-add", BaseRef: "main"})
	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: "/inspect make TestAdd pass", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	b.runWorkers()
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nbuild log:\n%s\n%s", s.State(), s.Outcome, s.Detail, b.buildLogs(), b.logs)
	}
	sess := assertPRSessionPushed(t, b.harness, head)
	b.checkBuildsCarryNoSecret(t)
	env, err := exec.Command("git", "--git-dir", b.gh.GitDir(owner, repoName), "show", sess.CommitSHA+":sandbox-env.txt").Output()
	if err != nil || !strings.Contains(string(env), "PATH=") {
		t.Fatalf("the agent's env was not recorded: %v\n%s", err, env)
	}
	if strings.Contains(string(env), "BUILDKITE") || strings.Contains(string(env), b.bk.AgentAccessToken()) || strings.Contains(string(env), "INSPECT_CLAIM_CODE") {
		t.Errorf("the sandbox saw Buildkite's or Inspect's variables:\n%s", env)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
}

// When the supervisor's upload fails, the result comes from the build's
// artifacts, once build.finished arrives.
func TestBuildkiteFailedUploadIsReplacedByTheArtifacts(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.refuseUploads.Store(true)
	b.startOnRealPR("/inspect make TestAdd pass")
	b.settle()
	s := b.onlySession()
	if s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nbuild log:\n%s\n%s", s.State(), s.Outcome, s.Detail, b.buildLogs(), b.logs)
	}
	if n := b.resultAttempts.Load(); n < 1 {
		t.Error("the supervisor never tried to upload")
	}
	// The result was handled once, though the webhooks queued its
	// collection twice (job.finished, build.finished).
	log, err := exec.Command("git", "--git-dir", b.gh.GitDir(owner, repoName), "log", "--format=%H", "fix-flaky", "--grep=Inspect-Session: "+s.ID).Output()
	if err != nil || len(strings.Fields(string(log))) != 1 {
		t.Errorf("Inspect's commits on the branch: %q (%v), want one", log, err)
	}
	if bs := b.builds(); len(bs) != 1 || bs[0].State != "failed" {
		t.Errorf("builds = %+v (the supervisor exits 1 when its upload fails)", bs)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
	// The diff came in evidence.json among the artifacts, and was stored
	// on its own, out of the result.
	b.wantDiffStored(s.AttemptID, "+func Add(a, b int) int { return a + b }\n")
}

// wantDiffStored checks that the attempt's diff is in the store with the
// line want, and that the stored result no longer carries it.
func (h *harness) wantDiffStored(attemptID, want string) {
	h.t.Helper()
	d, err := h.st.AttemptDiff(context.Background(), attemptID)
	if err != nil || !strings.Contains(d.Patch, want) || d.Truncated {
		h.t.Errorf("the attempt's diff: %v, truncated %v:\n%s", err, d.Truncated, d.Patch)
	}
	a, err := h.st.GetAttempt(context.Background(), attemptID)
	if err != nil || a.Result == "" || strings.Contains(a.Result, "diff --git") {
		h.t.Errorf("the stored result still carries the diff (%v)", err)
	}
}

// With every webhook dropped and the upload failing too, reconcile finds
// the finished build and takes the result from its artifacts.
func TestBuildkiteWithoutWebhooksReconcileFinishesFromArtifacts(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.DropWebhooks(1 << 20)
	b.refuseUploads.Store(true)
	b.startOnRealPR("/inspect make TestAdd pass")
	b.settle()
	if s := b.onlySession(); s.State() == session.Done {
		t.Fatalf("the session ended before reconcile looked: %s", s.Outcome)
	}
	b.clock.Advance(b.cfg.Workers.ReconcileInterval)
	b.runWorkers()
	s := b.onlySession()
	if s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", s.State(), s.Outcome, s.Detail, b.logs)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
	for _, d := range b.bk.Deliveries() {
		if !d.Dropped {
			t.Errorf("a webhook was delivered: %s", d.Event)
		}
	}
}

// A 429 with Retry-After on the build's creation is waited out inside the
// executor: exactly one build, and the session completes.
func TestBuildkiteRateLimitThenSuccessMakesExactlyOneBuild(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.FailNext(http.MethodPost, "/v2/organizations/*/pipelines/*/builds", http.StatusTooManyRequests, "3")
	b.startOnRealPR("/inspect make TestAdd pass")
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", s.State(), s.Outcome, s.Detail, b.logs)
	}
	if n := len(b.builds()); n != 1 {
		t.Errorf("builds = %d, want 1", n)
	}
	b.mu.Lock()
	waits := append([]time.Duration(nil), b.waits...)
	b.mu.Unlock()
	if len(waits) != 1 || waits[0] != 3*time.Second {
		t.Errorf("waits = %v, want [3s] from Retry-After", waits)
	}
}

// The app restarts while the build runs: the new process, on the same
// database and URL, takes the upload and finishes the session.
func TestBuildkiteAppRestartWhileTheBuildRuns(t *testing.T) {
	b := newBuildkiteHarness(t)
	started, release := make(chan struct{}), make(chan struct{})
	b.bk.SetRunner(func(ctx context.Context, info fakebuildkite.BuildInfo, step fakebuildkite.Step, env []string, dir string) int {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return 1
		}
		return b.bk.RunCommand(ctx, info, step, env, dir)
	})
	b.startOnRealPR("/inspect make TestAdd pass")
	<-started
	b.stop()
	b.start()
	close(release)
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nbuild log:\n%s\n%s", s.State(), s.Outcome, s.Detail, b.buildLogs(), b.logs)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v", runs)
	}
}

// Builds lost after creation: the first is re-dispatched once, the second
// is left to the deadline, which ends the session timed_out with its check
// run concluded.
func TestBuildkiteLostBuildsAreRedispatchedOnceThenTimeOut(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.HoldBuilds(true) // no agent picks them up
	b.startOnRealPR("/inspect make TestAdd pass")
	if n := len(b.builds()); n != 1 {
		t.Fatalf("builds = %d", n)
	}
	first := b.onlySession()
	b.bk.LoseBuild(bkOrg, bkPipeline, 1)
	b.clock.Advance(b.cfg.Workers.ReconcileInterval)
	b.runWorkers()
	builds := b.builds()
	if len(builds) != 2 || builds[1].MetaData["inspect:attempt"] != "2" {
		t.Fatalf("builds after the first loss = %+v\n%s", builds, b.logs)
	}
	if s := b.onlySession(); s.Redispatches != 1 || !s.Deadline.Equal(first.Deadline) {
		t.Fatalf("after the re-dispatch: redispatches %d, deadline %v (was %v)", s.Redispatches, s.Deadline, first.Deadline)
	}
	b.bk.LoseBuild(bkOrg, bkPipeline, 2)
	b.clock.Advance(b.cfg.Workers.ReconcileInterval)
	b.runWorkers()
	if n := len(b.builds()); n != 2 {
		t.Fatalf("builds after the second loss = %d, want no third", n)
	}
	if s := b.onlySession(); s.State() == session.Done {
		t.Fatalf("ended before the deadline: %s", s.Outcome)
	}
	b.clock.Advance(first.Deadline.Add(3 * time.Minute).Sub(b.clock.Now()))
	b.runWorkers()
	s := b.onlySession()
	if s.Outcome != session.TimedOut || !s.Deadline.Equal(first.Deadline) {
		t.Fatalf("session = %s/%s deadline %v (first %v)", s.State(), s.Outcome, s.Deadline, first.Deadline)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "timed_out" {
		t.Errorf("check runs = %+v", runs)
	}
	b.checkBuildsCarryNoSecret(t)
}

// A forged or stale Buildkite webhook gets 401 and changes nothing; the
// same event correctly signed is taken.
func TestBuildkiteForgedOrStaleWebhookIsRefused(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.HoldBuilds(true)
	b.startOnRealPR("/inspect make TestAdd pass")
	bd := b.builds()[0]
	body, _ := json.Marshal(map[string]any{"event": "build.running", "build": map[string]any{
		"web_url": bd.WebURL, "state": "running", "meta_data": bd.MetaData}})
	post := func(header, value string) int {
		req, _ := http.NewRequest(http.MethodPost, b.front.URL+app.BuildkiteHookPath, bytes.NewReader(body))
		req.Header.Set("X-Buildkite-Event", "build.running")
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	now := b.clock.Now()
	for name, c := range map[string]struct{ header, value string }{
		"no auth":     {"", ""},
		"wrong token": {"X-Buildkite-Token", "not-the-token-at-all"},
		"forged":      {"X-Buildkite-Signature", fakebuildkite.Sign("another-key-entirely", now, body)},
		"stale":       {"X-Buildkite-Signature", fakebuildkite.Sign(bkHookToken, now.Add(-10*time.Minute), body)},
		"future":      {"X-Buildkite-Signature", fakebuildkite.Sign(bkHookToken, now.Add(10*time.Minute), body)},
		"garbled":     {"X-Buildkite-Signature", "timestamp=x,signature=zz"},
	} {
		if code := post(c.header, c.value); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	sess := b.onlySession()
	a, err := b.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil || a.ExternalState != "" {
		t.Fatalf("a refused webhook changed the attempt: %+v %v", a, err)
	}
	if code := post("X-Buildkite-Signature", fakebuildkite.Sign(bkHookToken, now, body)); code != http.StatusOK {
		t.Fatalf("a good signature: %d", code)
	}
	if code := post("X-Buildkite-Token", bkHookToken); code != http.StatusOK {
		t.Fatalf("a good token: %d", code)
	}
	if a, _ := b.st.GetAttempt(context.Background(), sess.AttemptID); a.ExternalState != "running" {
		t.Errorf("external state = %q after a good webhook", a.ExternalState)
	}
	b.runWorkers()
	progress := ""
	for _, c := range b.comments(prNumber) {
		if strings.Contains(c.Body, "Status") {
			progress = c.Body
		}
	}
	if !strings.Contains(progress, bd.WebURL) {
		t.Errorf("the progress comment does not link the build:\n%s", progress)
	}
}

// A 4xx other than 429 from Buildkite is final: no retry, and the session
// ends at once with an error that says who refused what.
func TestBuildkiteRefusalEndsTheSessionWithAClearError(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.FailNext(http.MethodPost, "/v2/organizations/*/pipelines/*/builds", http.StatusForbidden, "")
	b.startOnRealPR("/inspect make TestAdd pass")
	s := b.onlySession()
	if s.Outcome != session.Errored || s.Reason != "api_refused" || !strings.Contains(s.Detail, "Buildkite refused") || !strings.Contains(s.Detail, "403") {
		t.Fatalf("session = %s/%s/%s: %s", s.State(), s.Outcome, s.Reason, s.Detail)
	}
	if posts := b.bk.RequestsMatching(http.MethodPost, "/v2/organizations/*/pipelines/*/builds"); len(posts) != 1 {
		t.Errorf("create requests = %d, want 1 (no retry)", len(posts))
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs = %+v", runs)
	}
	if strings.Contains(s.Detail, b.bk.Token()) {
		t.Error("the reply holds the API token")
	}
}

// `/inspect cancel` on a running Buildkite session cancels the build: the
// agent's SIGTERM reaches the supervisor, which stops the sandbox, leaves
// partial evidence in its artifacts and exits; nothing is left running.
func TestBuildkiteCancelStopsTheBuildWithPartialEvidence(t *testing.T) {
	b := newBuildkiteHarness(t)
	marker := fmt.Sprintf("inspect-bk-hang-%d", time.Now().UnixNano())
	b.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"hang.sh":             "#!/bin/sh\nsh -c 'sleep 1000; : " + marker + "'\n",
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"hang.sh\"]\n",
	}, "an agent that hangs")
	b.startOnRealPR("/inspect hang")
	select {
	case <-b.agentStarted:
	case <-time.After(2 * time.Minute): // a failure guard, not a synchronisation
		t.Fatalf("the agent never started\nbuild log:\n%s\n%s", b.buildLogs(), b.logs)
	}
	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: "/inspect cancel", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	b.runWorkers()
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Cancelled {
		t.Fatalf("session = %s/%s: %s", s.State(), s.Outcome, s.Detail)
	}
	bs := b.builds()
	if len(bs) != 1 || bs[0].State != "canceled" {
		t.Fatalf("builds = %+v", bs)
	}
	var ev contract.Evidence
	for _, art := range bs[0].Artifacts {
		if art.Path == buildkite.EvidenceArtifact {
			if err := json.Unmarshal(art.Data, &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ev.Outcome != contract.OutcomeCancelled || !ev.Partial {
		t.Errorf("evidence = %s partial %v, want cancelled and partial\nbuild log:\n%s", ev.Outcome, ev.Partial, bs[0].Log)
	}
	if left := processesWith(t, marker); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "cancelled" {
		t.Errorf("check runs = %+v", runs)
	}
}

// answerLostExecutor creates the build and then reports failure, as when
// Buildkite's answer to the create is lost on the way back.
type answerLostExecutor struct {
	*buildkite.Executor
	lost atomic.Int32
}

func (e *answerLostExecutor) Start(ctx context.Context, a runner.Attempt) (string, error) {
	if _, err := e.Executor.Start(ctx, a); err != nil {
		return "", err
	}
	if e.lost.Add(1) == 1 {
		return "", errors.New("connection reset by peer")
	}
	return "", errors.New("the test expected one Start only")
}

// A dispatch whose build was created but not recorded finds that build by
// its meta-data on the retry and adopts it: never a second build.
func TestBuildkiteUnrecordedBuildIsAdoptedNotDuplicated(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.HoldBuilds(true)
	b.stop()
	b.exec = &answerLostExecutor{Executor: b.exec.(*buildkite.Executor)}
	b.start()
	b.startOnRealPR("/inspect make TestAdd pass")
	if s := b.onlySession(); s.State() != session.Preparing {
		t.Fatalf("state = %s, want preparing (the dispatch failed)", s.State())
	}
	b.clock.Advance(b.cfg.Workers.RetryBackoff)
	b.runWorkers()
	builds := b.builds()
	s := b.onlySession()
	a, err := b.st.GetAttempt(context.Background(), s.AttemptID)
	if len(builds) != 1 || err != nil || a.ExternalID != builds[0].WebURL || s.State() != session.Dispatched {
		t.Fatalf("builds = %d, attempt = %+v (%v), session %s", len(builds), a, err, s.State())
	}
	b.bk.HoldBuilds(false)
	b.settle()
	if s := b.onlySession(); s.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\n%s", s.State(), s.Outcome, s.Detail, b.logs)
	}
	if n := len(b.builds()); n != 1 {
		t.Errorf("builds = %d, want 1", n)
	}
}

// A build that exits before claiming its attempt (no inspect on the agent,
// say) ends the session runner_lost at once, with a pointer to the build.
func TestBuildkiteBuildThatNeverClaimsEndsTheSessionWithAHint(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.SetRunner(func(context.Context, fakebuildkite.BuildInfo, fakebuildkite.Step, []string, string) int {
		return 127 // inspect: not found
	})
	b.startOnRealPR("/inspect make TestAdd pass")
	b.settle()
	s := b.onlySession()
	bd := b.builds()[0]
	if s.Outcome != session.Errored || s.Reason != "runner_lost" || !strings.Contains(s.Detail, "never reached Inspect") || !strings.Contains(s.Detail, bd.WebURL) {
		t.Fatalf("session = %s/%s/%s: %s", s.State(), s.Outcome, s.Reason, s.Detail)
	}
	if runs := b.gh.CheckRuns(owner, repoName); len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs = %+v", runs)
	}
}

// A correctly signed webhook about a build that is not the attempt's
// recorded one (another pipeline's build carrying the same meta-data) is
// acknowledged and changes nothing.
func TestBuildkiteWebhookForAnotherBuildIsIgnored(t *testing.T) {
	b := newBuildkiteHarness(t)
	b.bk.HoldBuilds(true)
	b.startOnRealPR("/inspect make TestAdd pass")
	bd := b.builds()[0]
	body, _ := json.Marshal(map[string]any{"event": "build.finished", "build": map[string]any{
		"web_url": "https://buildkite.example/mallory/other/builds/1", "state": "passed", "meta_data": bd.MetaData}})
	req, _ := http.NewRequest(http.MethodPost, b.front.URL+app.BuildkiteHookPath, bytes.NewReader(body))
	req.Header.Set("X-Buildkite-Event", "build.finished")
	req.Header.Set("X-Buildkite-Signature", fakebuildkite.Sign(bkHookToken, b.clock.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b.runWorkers()
	s := b.onlySession()
	a, _ := b.st.GetAttempt(context.Background(), s.AttemptID)
	if s.State() != session.Dispatched || a.ExternalID != bd.WebURL || a.ExternalState != "" {
		t.Errorf("session %s, attempt %+v", s.State(), a)
	}
}

// Snapshots on Buildkite (decision 0012): the repo's snapshot is built by a
// build of the snapshot pipeline, whose supervisor claims a snapshot job,
// builds in its sandbox and pushes to the registry; the next session pins
// that image and restores it.
func TestBuildkiteBuildsTheSnapshotAndTheNextSessionRestoresIt(t *testing.T) {
	b := newBuildkiteHarness(t)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	b.withSnapshotPipeline(strings.TrimPrefix(reg.URL, "http://") + "/inspect")
	head := b.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"deps.lock": "v1\n",
		".github/inspect.yml": "agent: {preset: command, command: [sh, scripts/inspect-stand-in-agent.sh]}\n" +
			"verify: [{name: unit tests, run: [go, test, -json, ./...]}]\n" +
			"snapshot:\n  setup: [{name: deps, run: [sh, -c, \"echo from-the-snapshot > /cache/deps/marker\"]}]\n" +
			"  caches: [{path: /cache/deps, lockfiles: [deps.lock]}]\n",
	}, "snapshots on")

	// The first session clones cold (no snapshot yet) and puts the repo on
	// the schedule; the next pass of the workers dispatches its build.
	b.startOnRealPR("/inspect make TestAdd pass")
	b.settle()
	b.runWorkers()
	b.settle()
	snapBuild, sr := b.onlySnapshotBuild()
	// What the snapshots page shows came back over the channel: the commit
	// and branch, the pushed image's footprint, and the setup's log.
	st, err := images.OpenStore(b.cfg.Snapshots.Store)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := v1.NewHash(sr.LastDigest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := st.Image(context.Background(), owner+"/"+repoName, digest)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := images.FootprintOf(img)
	if err != nil {
		t.Fatal(err)
	}
	if sr.LastSHA != head || sr.LastBranch != "main" || sr.LastSize != fp.Size || sr.LastLayers != fp.Layers || fp.Size == 0 {
		t.Errorf("recorded sha %s branch %q size %d layers %d; want %s main and the pushed image's %+v", sr.LastSHA, sr.LastBranch, sr.LastSize, sr.LastLayers, head, fp)
	}
	if !strings.HasPrefix(sr.LastLog, "--- snapshot deps: sh -c echo from-the-snapshot > /cache/deps/marker exited with status 0 after ") || sr.LastFinishedAt.IsZero() {
		t.Errorf("recorded log %q, finished %s", sr.LastLog, sr.LastFinishedAt)
	}
	first := b.onlySession()
	if first.Outcome != session.Changed {
		t.Fatalf("first session = %s/%s: %s", first.State(), first.Outcome, first.Detail)
	}
	if ev := sessionEvidence(t, b.harness, first); ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceClone {
		t.Errorf("first session's workspace = %+v, want a cold clone", ev.Workspace)
	}

	// The next session restores that snapshot.
	if code, _ := b.deliver("issue_comment", b.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	b.runWorkers()
	b.settle()
	var second store.Session
	for _, s := range b.sessions() {
		if s.ID != first.ID {
			second = s
		}
	}
	if second.Outcome != session.Changed {
		t.Fatalf("second session = %s/%s: %s\n%s", second.State(), second.Outcome, second.Detail, b.buildLogs())
	}
	ev := sessionEvidence(t, b.harness, second)
	if ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot || ev.Workspace.SnapshotDigest != sr.LastDigest {
		t.Errorf("second session's workspace = %+v, want snapshot %s", ev.Workspace, sr.LastDigest)
	}
	// The snapshot build's env, like a session's, holds no secret.
	for k := range snapBuild.Env {
		if !strings.HasPrefix(k, "INSPECT_") {
			t.Errorf("snapshot build env has %s", k)
		}
	}
}

// withSnapshotPipeline restarts the app with snapshot builds on the
// snapshot pipeline (its own pipeline, the session pipeline's steps),
// pushing to store ("" keeps the harness's).
func (b *bkHarness) withSnapshotPipeline(store string) {
	b.t.Helper()
	pipelineYAML, _ := b.bk.PipelineConfig(bkOrg, bkPipeline)
	b.bk.AddPipeline(bkOrg, "inspect-snapshot", pipelineYAML)
	sx, err := buildkite.New(buildkite.Config{BaseURL: b.bk.URL(), Token: b.bk.Token(), Org: bkOrg, Pipeline: "inspect-snapshot"})
	if err != nil {
		b.t.Fatal(err)
	}
	b.stop()
	if store != "" {
		b.cfg.Snapshots.Store = store
	}
	b.snapshotExec = sx
	b.start()
}

// onlySnapshotBuild is the one build of the snapshot pipeline, which must
// have passed, and the schedule's record of what it pushed.
func (b *bkHarness) onlySnapshotBuild() (fakebuildkite.Build, store.SnapshotRepo) {
	b.t.Helper()
	builds := b.bk.Builds(bkOrg, "inspect-snapshot")
	if len(builds) != 1 || builds[0].State != "passed" {
		b.t.Fatalf("snapshot builds = %+v\n%s", builds, b.logs)
	}
	sr, err := b.st.GetSnapshotRepo(context.Background(), repoID)
	if err != nil || sr.LastDigest == "" || sr.LastError != "" {
		b.t.Fatalf("schedule = %+v (%v)\nbuild log:\n%s", sr, err, builds[0].Log)
	}
	return builds[0], sr
}

// sessionEvidence is the evidence a session's attempt reported.
func sessionEvidence(t *testing.T, h *harness, sess store.Session) contract.Evidence {
	t.Helper()
	a, err := h.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	var up contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		t.Fatalf("attempt result: %v", err)
	}
	return up.Evidence
}
