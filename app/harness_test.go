package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/storetest"
)

// The fixture's repository and installation (octokit/webhooks payloads).
const (
	owner          = "Codertocat"
	repoName       = "Hello-World"
	repoID         = 186853002
	installationID = 1
	issueNumber    = 1
	prNumber       = 2
	headSHA        = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	secret         = "primary-secret"
	oldSecret      = "rotating-secret"
)

// harness is the real HTTP server wired to the GitHub stand-in, a real store
// and a fake clock. Workers are driven with RunPending, never with sleeps.
type harness struct {
	// exec, when set before start, is the executor sessions dispatch to.
	exec   app.Executor
	t      testing.TB
	gh     *fakegithub.Server
	dsn    string
	driver string
	st     *store.Store
	svc    *app.Service
	srv    *httptest.Server
	clock  *fakeclock.Clock
	cfg    config.Server
	logs   *lockedBuffer
	seq    atomic.Int64
	// lastComment is the id of the comment event() seeded last.
	lastComment int64
	// channelURL, when set before start, is the channel URL the service
	// hands executors: a front server that outlives restarts.
	channelURL string
	// serverTimeouts, when set before start, gives the test server the
	// config's http timeouts, as Service.Serve does.
	serverTimeouts bool
	// handler is the running service's HTTP handler, for a front server.
	handler atomic.Pointer[http.Handler]
	// snapshotBuilder, when set before start, builds snapshots.
	snapshotBuilder app.SnapshotBuilder
	// snapshotExec, when set before start, starts snapshot builds.
	snapshotExec app.Executor
	// registryCache is the replica's registry artifact cache, kept across
	// restarts as a replica's directory is.
	registryCache *registryproxy.Cache
	// metrics is the running service's registry, which its GitHub
	// transport records into, as cmd/inspect wires it.
	metrics *metrics.Metrics
	// metricsListener, when set before start, is where Serve serves
	// /metrics.
	metricsListener net.Listener
}

type harnessOption func(*config.Server)

// forBothDrivers runs an end-to-end test on SQLite and on PostgreSQL.
func forBothDrivers(t *testing.T, fn func(t *testing.T, driver string)) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) { fn(t, driver) })
	}
}

func newHarness(t testing.TB, opts ...harnessOption) *harness {
	return newHarnessOn(t, "sqlite", opts...)
}

func newHarnessOn(t testing.TB, driver string, opts ...harnessOption) *harness {
	t.Helper()
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	t.Cleanup(func() { checkConformance(t, gh) })
	t.Cleanup(func() {
		// GitHub displays a check run's buttons only once it completes:
		// one sent earlier is a button nobody can press.
		for _, r := range gh.CheckRuns(owner, repoName) {
			if r.AppID == gh.AppID() && r.HiddenActionWrites > 0 {
				t.Errorf("check run %d was given actions %d times while GitHub would not display them", r.ID, r.HiddenActionWrites)
			}
		}
	})
	gh.AddInstallation(installationID, owner)
	gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID, OwnerType: "User"})
	for login, role := range map[string]string{"alice": "write", "mara": "maintain", "ada": "admin", "bob": "read", "tina": "triage"} {
		gh.AddUser(login, int64(len(login))*1000, "User")
		gh.SetPermission(owner, repoName, login, role)
	}
	gh.AddUser("evil[bot]", 666, "Bot")
	gh.AddIssue(owner, repoName, fakegithub.Issue{Number: issueNumber, Title: "Spelling error", Body: "README typo", State: "open", User: "alice"})
	gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Fix flaky test", State: "open", User: "alice",
		HeadSHA: headSHA, HeadRef: "fix-flaky", BaseRef: "main"})

	cfg := config.Defaults()
	cfg.GitHub.AppID = gh.AppID()
	cfg.GitHub.PrivateKey = string(gh.AppPrivateKeyPEM())
	cfg.GitHub.WebhookSecret = secret
	cfg.GitHub.WebhookSecretPrevious = oldSecret
	cfg.GitHub.APIURL = gh.APIURL()
	cfg.GitHub.WebURL = gh.URL()
	cfg.Workers.Count = 0 // tests drive the workers with RunPending
	cfg.Workers.MaxAttempts = 3
	cfg.Workers.RetryBackoff = time.Second
	cfg.Snapshots.Store = "oci:" + t.TempDir()
	// The base's verify is a second attempt per session (decision 0080):
	// the tests that look at it ask for it (withBaselines), the others
	// count their own attempts.
	cfg.Sessions.Baseline = false
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// As cmd/inspect does: no cache when egress.cache.disabled says so.
	var regCache *registryproxy.Cache
	if !cfg.Egress.Cache.Disabled {
		var err error
		if regCache, err = registryproxy.OpenCache(t.TempDir(), 0, zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, gh: gh, cfg: cfg, driver: driver, dsn: storetest.MigratedDSN(t, driver),
		clock: fakeclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)), logs: &lockedBuffer{}, registryCache: regCache}
	h.start()
	return h
}

// start (re)builds the app over the same database, as a restart would.
func (h *harness) start() {
	h.t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, h.driver, h.dsn)
	if err != nil {
		h.t.Fatal(err)
	}
	h.st = st
	if h.metrics == nil {
		// Kept across restarts, so a test reads one registry's series
		// across a reconfiguration (the store's counts follow the new
		// store).
		h.metrics = metrics.New()
	}
	countGitHub := ghclient.WithBaseTransport(func(rt http.RoundTripper) http.RoundTripper { return h.metrics.Transport(metrics.GitHub, rt) })
	clients, err := ghclient.NewGitHubClients(h.cfg.GitHub.APIURL, h.cfg.GitHub.AppID, []byte(h.cfg.GitHub.PrivateKey), "inspect-test", nil, countGitHub)
	if err != nil {
		h.t.Fatal(err)
	}
	// Unstarted first, so the service knows the channel's URL (supervisors
	// started by a real executor call it).
	srv := httptest.NewUnstartedServer(nil)
	channelURL := h.channelURL
	if channelURL == "" {
		channelURL = "http://" + srv.Listener.Addr().String()
	}
	h.svc = app.NewService(app.Options{Config: h.cfg, Store: st, GitHub: clients, Clock: h.clock,
		Logger: zerolog.New(h.logs), WorkerName: "test", Executor: h.exec, ChannelURL: channelURL,
		SnapshotBuilder: h.snapshotBuilder, SnapshotExecutor: h.snapshotExec, RegistryCache: h.registryCache, Version: "test", Metrics: h.metrics, MetricsListener: h.metricsListener})
	if err := h.svc.ResolveIdentity(ctx); err != nil {
		h.t.Fatal(err)
	}
	handler := h.svc.Handler()
	srv.Config.Handler = handler
	if h.serverTimeouts {
		srv.Config.ReadHeaderTimeout, srv.Config.ReadTimeout = h.cfg.HTTP.ReadHeaderTimeout, h.cfg.HTTP.ReadTimeout
		srv.Config.WriteTimeout, srv.Config.IdleTimeout = h.cfg.HTTP.WriteTimeout, h.cfg.HTTP.IdleTimeout
	}
	h.handler.Store(&handler)
	srv.Start()
	h.srv = srv
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	h.handler.Store(nil)
	if h.srv != nil {
		h.srv.Close()
		h.srv = nil
	}
	if h.st != nil {
		_ = h.st.Close() // closing twice (a restart test) is harmless
		h.st = nil
	}
}

func sign(body []byte, key string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliver posts a webhook signed with the primary secret.
func (h *harness) deliver(event string, body []byte) (int, string) {
	return h.deliverAs(event, fmt.Sprintf("delivery-%d", h.seq.Add(1)), body, sign(body, secret))
}

func (h *harness) deliverAs(event, deliveryID string, body []byte, signature string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+app.WebhookPath, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	if signature != "" {
		req.Header.Set("X-Hub-Signature-256", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body) // a short read only shortens the failure message
	return resp.StatusCode, string(out)
}

// runWorkers runs every ready work item, as the worker loop would.
func (h *harness) runWorkers() {
	h.t.Helper()
	if _, err := h.svc.RunPending(context.Background()); err != nil {
		h.t.Fatalf("workers: %v\nlogs:\n%s", err, h.logs)
	}
}

func loadFixture(t testing.TB, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../testdata/github-webhooks/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

var commentSeq atomic.Int64

type commentOpts struct {
	body      string
	sender    string
	senderTyp string
	onPR      bool
	action    string
	commentID int64
	viaAppID  int64
	// number, when set, is a pull request other than #2 (onPR must be set).
	number int
}

// commentEvent builds an issue_comment payload from the real fixture.
func commentEvent(t testing.TB, o commentOpts) []byte {
	t.Helper()
	m := loadFixture(t, "issue_comment.created.with-installation.json")
	if o.action != "" {
		m["action"] = o.action
	}
	if o.sender == "" {
		o.sender = "alice"
	}
	if o.senderTyp == "" {
		o.senderTyp = "User"
	}
	if o.commentID == 0 {
		o.commentID = 900000 + commentSeq.Add(1)
	}
	sender := m["sender"].(map[string]any)
	sender["login"], sender["type"], sender["id"] = o.sender, o.senderTyp, float64(len(o.sender)*1000)
	comment := m["comment"].(map[string]any)
	comment["body"], comment["id"] = o.body, float64(o.commentID)
	comment["user"] = sender
	if o.viaAppID != 0 {
		comment["performed_via_github_app"] = map[string]any{"id": float64(o.viaAppID), "slug": "inspect-app"}
	}
	issue := m["issue"].(map[string]any)
	issue["number"] = float64(issueNumber)
	if o.onPR {
		issue["number"] = float64(prNumber)
		if o.number != 0 {
			issue["number"] = float64(o.number)
		}
		issue["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/2"}
	}
	m["repository"].(map[string]any)["default_branch"] = "main"
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *harness) sessions() []store.Session {
	h.t.Helper()
	var all []store.Session
	for _, n := range []int{issueNumber, prNumber} {
		got, err := h.st.SessionsForTarget(context.Background(), repoID, n, 100)
		if err != nil {
			h.t.Fatal(err)
		}
		all = append(all, got...)
	}
	return all
}

func (h *harness) onlySession() store.Session {
	h.t.Helper()
	all := h.sessions()
	if len(all) != 1 {
		h.t.Fatalf("sessions = %d, want 1: %+v", len(all), all)
	}
	return all[0]
}

// event seeds the comment on the stand-in (GitHub has it before it sends
// the webhook) and returns its issue_comment payload.
func (h *harness) event(o commentOpts) []byte {
	h.t.Helper()
	number := issueNumber
	if o.onPR {
		number = prNumber
		if o.number != 0 {
			number = o.number
		}
	}
	if o.sender == "" {
		o.sender = "alice"
	}
	o.commentID = h.gh.AddComment(owner, repoName, number, o.sender, o.body)
	h.lastComment = o.commentID
	return commentEvent(h.t, o)
}

// comments are the comments the app's bot posted on an issue or PR.
// commentsWith are the bot's comments on number whose body contains s.
func (h *harness) commentsWith(number int, s string) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range h.comments(number) {
		if strings.Contains(c.Body, s) {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) comments(number int) []fakegithub.Comment {
	var out []fakegithub.Comment
	for _, c := range h.gh.Comments(owner, repoName, number) {
		if c.User == h.gh.AppSlug()+"[bot]" {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) expectOneReply(number int, wants ...string) fakegithub.Comment {
	h.t.Helper()
	cs := h.comments(number)
	if len(cs) != 1 {
		h.t.Fatalf("comments on #%d = %d, want exactly one reply: %+v\nlogs:\n%s", number, len(cs), cs, h.logs)
	}
	for _, w := range wants {
		if !strings.Contains(cs[0].Body, w) {
			h.t.Errorf("reply does not contain %q:\n%s", w, cs[0].Body)
		}
	}
	if cs[0].User != h.gh.AppSlug()+"[bot]" {
		h.t.Errorf("reply author = %q, want the app's bot", cs[0].User)
	}
	return cs[0]
}

type configServer = config.Server

// lockedBuffer collects logs from concurrent workers and requests.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// client is an installation client on the stand-in, for assertions.
func (h *harness) client(t *testing.T) *github.Client {
	t.Helper()
	clients, err := ghclient.NewGitHubClients(h.cfg.GitHub.APIURL, h.cfg.GitHub.AppID, []byte(h.cfg.GitHub.PrivateKey), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clients.Installation(context.Background(), installationID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appClient is the App's own (JWT) client on the stand-in.
func (h *harness) appClient(t *testing.T) *github.Client {
	t.Helper()
	clients, err := ghclient.NewGitHubClients(h.cfg.GitHub.APIURL, h.cfg.GitHub.AppID, []byte(h.cfg.GitHub.PrivateKey), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clients.App(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// attemptResult is the attempt's result as the store keeps it: the
// supervisor's upload, with what the app added when it reported (the
// comparison with the base, decision 0080).
func attemptResult(t testing.TB, h *harness, attemptID string) contract.ResultUpload {
	t.Helper()
	a, err := h.st.GetAttempt(context.Background(), attemptID)
	if err != nil {
		t.Fatal(err)
	}
	var up contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		t.Fatalf("the stored result: %v", err)
	}
	return up
}
