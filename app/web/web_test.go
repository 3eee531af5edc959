package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

type recordedCommands struct {
	mu       sync.Mutex
	triggers []session.Trigger
}

func (c *recordedCommands) AcceptTrigger(_ context.Context, t session.Trigger) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.triggers = append(c.triggers, t)
	return nil
}

type world struct {
	gh    *fakegithub.Server
	st    *store.Store
	srv   *httptest.Server
	cmds  *recordedCommands
	clock *fakeclock.Clock
	http  *http.Client
	// web is the dashboard srv serves; opts built it, over the store at
	// driver's dsn, which another replica opens again (replica).
	web         *Server
	opts        Options
	driver, dsn string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, func(*Options) {})
}

// newWorldWith is newWorld with its Options changed by change first.
func newWorldWith(t *testing.T, change func(*Options)) *world {
	t.Helper()
	return newWorldOn(t, "sqlite", change)
}

// newWorldOn is newWorldWith over a fresh store of driver: a SQLite file,
// or a schema of the test PostgreSQL.
func newWorldOn(t *testing.T, driver string, change func(*Options)) *world {
	t.Helper()
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.AddInstallation(1, "acme")
	gh.AddRepo(fakegithub.Repo{ID: 101, Owner: "acme", Name: "widgets", InstallationID: 1, Private: true})
	gh.AddRepo(fakegithub.Repo{ID: 102, Owner: "acme", Name: "secret", InstallationID: 1, Private: true})
	gh.AddUser("alice", 5000, "User")
	gh.SetPermission("acme", "widgets", "alice", "write")
	dsn := storetest.MigratedDSN(t, driver)
	st := openStore(t, driver, dsn)
	w := &world{gh: gh, st: st, cmds: &recordedCommands{}, clock: fakeclock.New(time.Now()), driver: driver, dsn: dsn}
	mux := http.NewServeMux()
	w.srv = httptest.NewServer(mux)
	t.Cleanup(w.srv.Close)
	id, secret := gh.OAuthClient()
	gh.SetOAuthCallbacks(w.srv.URL + "/auth/callback")
	key := sha256.Sum256([]byte("test key"))
	o := Options{Store: st, Commands: w.cmds, PublicURL: w.srv.URL, WebURL: gh.URL(), APIURL: gh.APIURL(),
		ClientID: id, ClientSecret: secret, Key: key[:], PermissionCache: time.Minute, SessionLifetime: 24 * time.Hour,
		Now: w.clock.Now, Log: zerolog.Nop()}
	change(&o)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	w.web, w.opts = s, o
	s.Routes(mux)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	w.http = &http.Client{Jar: jar}
	for i, repo := range []int64{101, 102} {
		sess := store.Fixture(session.Running, store.Session{ID: []string{"visible-1", "hidden-1"}[i], RepoID: repo, RepoOwner: "acme", RepoName: []string{"widgets", "secret"}[i],
			InstallationID: 1, Number: 3, TriggerKind: session.KindComment, CommentID: int64(10 + i), DeliveryID: "d" + hex.EncodeToString([]byte{byte(i)}),
			RequesterLogin: "alice", RequesterID: 5000, RequesterType: "User", Instructions: "do it"})
		if _, err := st.Accept(context.Background(), store.Acceptance{DeliveryID: sess.DeliveryID, Event: "issue_comment", At: time.Now(), CommentID: sess.CommentID, Session: &sess}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func openStore(t *testing.T, driver, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // a close error after the test has no reader
	return st
}

// replica is another replica's dashboard: the same options over its own
// connection to the world's database.
func (w *world) replica(t *testing.T) *Server {
	t.Helper()
	o := w.opts
	o.Store = openStore(t, w.driver, w.dsn)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signIn follows the flow as a browser would: the login redirect to the
// stand-in's authorize page, its form posted as alice, the callback.
func (w *world) signIn(t *testing.T) {
	t.Helper()
	resp, err := w.http.Get(w.srv.URL + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authorize := resp.Request.URL // the stand-in's page, after the redirects
	if !strings.HasPrefix(authorize.String(), w.gh.URL()+"/login/oauth/authorize?") || authorize.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("sign-in went to %s", authorize)
	}
	form := authorize.Query()
	form.Set("login", "alice")
	resp, err = w.http.PostForm(w.gh.URL()+"/login/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/sessions" {
		t.Fatalf("after the callback: %d at %s", resp.StatusCode, resp.Request.URL)
	}
}

func (w *world) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := w.http.Get(w.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// Past eight hours the user's token is refreshed before the page asks
// GitHub anything, the old one is no longer good, and the page is the same;
// sign-out deletes the token at GitHub and ends the sign-in.
func TestTokensAreRefreshedAndSignOutRevokes(t *testing.T) {
	w := newWorld(t)
	w.signIn(t)
	if code, body := w.get(t, "/sessions"); code != 200 || !strings.Contains(body, "visible-1") || strings.Contains(body, "hidden-1") {
		t.Fatalf("list: %d\n%s", code, body)
	}
	first := w.gh.RequestsMatching("POST", "/login/oauth/access_token")
	w.clock.Advance(9 * time.Hour) // past the token's eight hours and the permission cache
	if code, body := w.get(t, "/sessions/visible-1"); code != 200 || !strings.Contains(body, "do it") {
		t.Fatalf("the session page after eight hours: %d\n%s", code, body)
	}
	refreshes := w.gh.RequestsMatching("POST", "/login/oauth/access_token")
	if len(refreshes) != len(first)+1 || !strings.Contains(string(refreshes[len(refreshes)-1].Body), "grant_type=refresh_token") {
		t.Fatalf("token endpoint calls: %d then %d; want one refresh", len(first), len(refreshes))
	}
	if code, _ := w.get(t, "/sessions/hidden-1"); code != 404 {
		t.Errorf("a session of a repository alice cannot read: %d", code)
	}

	// Sign out, with the page's CSRF token.
	_, page := w.get(t, "/sessions")
	csrf := between(page, `name="csrf" value="`, `"`)
	resp, err := w.http.PostForm(w.srv.URL+"/auth/logout", url.Values{"csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(w.gh.RequestsMatching("DELETE", "/applications/")) != 1 {
		t.Fatalf("sign-out: %d; token deletions %d", resp.StatusCode, len(w.gh.RequestsMatching("DELETE", "/applications/")))
	}
	noRedirect := &http.Client{Jar: w.http.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(w.srv.URL + "/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "/auth/login") {
		t.Errorf("after sign-out: %d to %q, want the sign-in", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A callback whose state is not the one sent, or with no flow cookie, is
// refused; and next never leads off this server.
func TestCallbackRefusesAForeignStateAndNextStaysLocal(t *testing.T) {
	w := newWorld(t)
	if code, body := w.get(t, "/auth/callback?code=x&state=y"); code != 400 || !strings.Contains(body, "expired") {
		t.Errorf("a callback with no flow: %d %s", code, body)
	}
	resp, err := w.http.Get(w.srv.URL + "/sessions") // starts a flow, sets its cookie
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, body := w.get(t, "/auth/callback?code=x&state=forged"); code != 400 || !strings.Contains(body, "state") {
		t.Errorf("a forged state: %d %s", code, body)
	}
	for next, want := range map[string]string{"/sessions/x": "/sessions/x", "//evil.example/": "/sessions", "https://evil.example/": "/sessions", "/\\evil.example": "/sessions"} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
}

// Sign-in's next is a path on this site, however it is spelled. The class
// closed: an open redirect, a next the browser reads as another origin
// once it has stripped or decoded something (WHATWG URL parsing drops
// ASCII tab and newline anywhere and treats "\" as "/"). The review's
// case is the tab; the other rows are variants it did not try: other
// control characters, the backslash raw and encoded, an encoded slash,
// double encoding, and Unicode spaces and format characters.
func TestSignInNextIsAPathOnThisSite(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct{ rawNext, want string }{
		{"/%09/evil.example", "/sessions"}, // the review's: the browser strips the tab, leaving //evil.example
		{"/%0a/evil.example", "/sessions"},
		{"/%0d/evil.example", "/sessions"},
		{"/%00/evil.example", "/sessions"},
		{"/%7f/evil.example", "/sessions"},
		{"%09//evil.example", "/sessions"},
		{"/%5Cevil.example", "/sessions"},
		{"/%5C%5Cevil.example", "/sessions"},
		{"/%2f/evil.example", "/sessions"},
		{"/%252f/evil.example", "/sessions"}, // "/%2f/evil.example" after the query is decoded
		{"/%2509/evil.example", "/sessions"}, // "/%09/evil.example" after the query is decoded
		{"/%20/evil.example", "/sessions"},
		{"/%C2%A0/evil.example", "/sessions"},     // no-break space
		{"/%E3%80%80/evil.example", "/sessions"},  // ideographic space
		{"/%E2%80%8B/evil.example", "/sessions"},  // zero-width space (a format character)
		{"/%E2%80%AE/evil.example", "/sessions"},  // right-to-left override
		{"/%FF/evil.example", "/sessions"},        // not UTF-8
		{"https:%2F%2Fevil.example", "/sessions"}, // a scheme
		{"//evil.example/", "/sessions"},
		{"/sessions/visible-1", "/sessions/visible-1"},
		{"/sessions%3Frepo%3D101", "/sessions?repo=101"},
	} {
		if got := w.signInWithNext(t, c.rawNext); got != c.want {
			t.Errorf("next=%s: after sign-in to %q, want %q", c.rawNext, got, c.want)
		}
	}
}

// signInWithNext signs in from /auth/login?next=rawNext (rawNext as it
// stands in the query) and is the Location the callback answers, read
// raw: Go's client refuses to follow some of them, a browser would not.
func (w *world) signInWithNext(t *testing.T, rawNext string) string {
	t.Helper()
	toCallback := &http.Client{Jar: w.http.Jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == callbackPath {
			return http.ErrUseLastResponse // the callback is asked by hand, below
		}
		return nil
	}}
	resp, err := toCallback.Get(w.srv.URL + "/auth/login?next=" + rawNext)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	form := resp.Request.URL.Query() // the stand-in's authorize page
	form.Set("login", "alice")
	resp, err = toCallback.PostForm(w.gh.URL()+"/login/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback, err := resp.Location()
	if err != nil || callback.Path != callbackPath {
		t.Fatalf("next=%s: the stand-in answered %d to %v (%v)", rawNext, resp.StatusCode, callback, err)
	}
	req, err := http.NewRequest(http.MethodGet, callback.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range w.http.Jar.Cookies(callback) {
		req.AddCookie(c)
	}
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return "an answer that is not HTTP: " + err.Error() // a NUL in the Location header, say
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("next=%s: the callback answered %d", rawNext, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// A value sealed for one purpose does not open for another, nor with
// another key, nor once changed.
func TestSealBindsKeyAndPurpose(t *testing.T) {
	k1, k2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
	a, _ := newSealer(k1[:])
	b, _ := newSealer(k2[:])
	sealed, err := a.seal("token:1", []byte("ghu_secret"))
	if err != nil || strings.Contains(sealed, "ghu_secret") {
		t.Fatalf("sealed %q, %v", sealed, err)
	}
	if plain, err := a.open("token:1", sealed); err != nil || string(plain) != "ghu_secret" {
		t.Fatalf("open: %q %v", plain, err)
	}
	flipped := []byte(sealed)
	flipped[len(flipped)-2] ^= 1
	for name, try := range map[string]func() ([]byte, error){
		"another purpose": func() ([]byte, error) { return a.open("token:2", sealed) },
		"another key":     func() ([]byte, error) { return b.open("token:1", sealed) },
		"changed":         func() ([]byte, error) { return a.open("token:1", string(flipped)) },
	} {
		if _, err := try(); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

func between(s, start, end string) string {
	_, rest, _ := strings.Cut(s, start)
	v, _, _ := strings.Cut(rest, end)
	return v
}

// A session's artifacts are served to those who may read it: an image
// inline, anything else as a download that no browser runs; another
// repository's session's is the same 404 as a missing one.
func TestArtifactsAreServedSafelyToReaders(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	png := []byte("\x89PNG\r\n\x1a\n0000")
	for _, sess := range []string{"visible-1", "hidden-1"} {
		if err := w.st.CreateAttempt(ctx, store.Attempt{ID: sess + "-a1", SessionID: sess, Number: 1, Deadline: time.Now().Add(time.Hour), Spec: "{}"}, "code-"+sess, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := w.st.MutateSession(ctx, sess, time.Now(), func(x *store.Session) error { x.AttemptID = sess + "-a1"; return nil }); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string][]byte{"shots/home.png": png, "report.html": []byte("<script>alert(1)</script>")} {
			ct := http.DetectContentType(body)
			if err := w.st.PutArtifact(ctx, store.Artifact{AttemptID: sess + "-a1", SessionID: sess, Name: name, ContentType: ct, Size: int64(len(body)), SHA256: "x", Content: body, CreatedAt: time.Now()}, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.signIn(t)
	resp, err := w.http.Get(w.srv.URL + "/sessions/visible-1/artifacts/shots/home.png")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || resp.Header.Get("Content-Disposition") != "" {
		t.Errorf("the image: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
	}
	resp, err = w.http.Get(w.srv.URL + "/sessions/visible-1/artifacts/report.html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("the HTML report: %q %q %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), resp.Header.Get("Content-Security-Policy"))
	}
	if code, _ := w.get(t, "/sessions/hidden-1/artifacts/shots/home.png"); code != 404 {
		t.Errorf("another repository's artifact: %d", code)
	}
	if code, _ := w.get(t, "/sessions/visible-1/artifacts/missing.png"); code != 404 {
		t.Errorf("a missing artifact: %d", code)
	}
	// The agent's kept conversation is stored among the artifacts, but is
	// none.
	if err := w.st.PutAgentState(ctx, "visible-1-a1", "visible-1", []byte("conversation"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := w.get(t, "/sessions/visible-1/artifacts/"+contract.AgentStateName); code != 404 {
		t.Errorf("the agent state served as an artifact: %d", code)
	}
}

// Two requests at once after the token expired (a page and its live
// stream) spend the single-use refresh token once, and both are served.
func TestConcurrentRequestsRefreshOnce(t *testing.T) {
	w := newWorld(t)
	w.signIn(t)
	before := len(w.gh.RequestsMatching("POST", "/login/oauth/access_token"))
	w.clock.Advance(9 * time.Hour)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := w.http.Get(w.srv.URL + "/sessions/visible-1")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Errorf("codes %v: one request lost its sign-in to the other's refresh", codes)
	}
	if n := len(w.gh.RequestsMatching("POST", "/login/oauth/access_token")) - before; n != 1 {
		t.Errorf("%d refreshes, want one", n)
	}
}

// The session page tells what the attempt says: its Buildkite build, its
// model and the cost of its tokens at the server's prices, and the
// snapshot it started from, with its age and drift.
func TestSessionPageShowsBuildCostAndSnapshot(t *testing.T) {
	key := sha256.Sum256([]byte("k"))
	s, err := New(Options{PublicURL: "https://inspect.example", WebURL: "https://github.com", APIURL: "https://api.github.com",
		Key: key[:], PermissionCache: time.Minute, SessionLifetime: time.Hour, Log: zerolog.Nop(),
		Cost: func(model string, u contract.TokenUsage) (float64, bool) {
			return float64(u.Input)*1.25/1e6 + float64(u.Output)*10/1e6, model == "gpt-test"
		}})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	spec, _ := json.Marshal(contract.Spec{Agent: contract.Agent{Model: "gpt-test"}})
	result, _ := json.Marshal(contract.ResultUpload{Evidence: contract.Evidence{
		StartedAt: started, Usage: &contract.TokenUsage{Input: 1_000_000, Output: 100_000, Total: 1_100_000, Requests: 3},
		Workspace: &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: "sha256:abc", SnapshotCreatedAt: started.Add(-90 * time.Minute), DriftCommits: 2,
			BaseImage: &contract.BaseImage{Name: "ghcr.io/acme/<toolchain>", Digest: "sha256:def"}},
		ToolsImage: "sha256:" + strings.Repeat("7", 64),
	}})
	view := sessionView{Session: store.Fixture(session.Done, store.Session{ID: "s1"})}
	s.attemptView(&view, store.Attempt{ExternalID: "https://buildkite.com/acme/inspect/builds/7", Spec: string(spec), Result: string(result)})
	if view.BuildURL != "https://buildkite.com/acme/inspect/builds/7" || view.Cost != "$2.25" || view.SnapshotAge != "1h30m0s" {
		t.Fatalf("view = build %q, cost %q, age %q", view.BuildURL, view.Cost, view.SnapshotAge)
	}
	rec := httptest.NewRecorder()
	s.render(rec, http.StatusOK, "session.html", map[string]any{"Viewer": &viewer{Login: "alice", CSRF: "c"}, "S": view})
	for _, want := range []string{`id="build" href="https://buildkite.com/acme/inspect/builds/7"`, `<span id="cost">$2.25</span>`, "sha256:abc", "1h30m0s old", "2 commits of drift",
		`<dd id="base-image">ghcr.io/acme/&lt;toolchain&gt; <code>sha256:def</code></dd>`,
		`<dd id="tools-image"><code>sha256:` + strings.Repeat("7", 64) + `</code></dd>`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// A model without prices shows no cost; a non-URL external id no link.
	other, _ := json.Marshal(contract.Spec{Agent: contract.Agent{Model: "unpriced"}})
	view = sessionView{}
	s.attemptView(&view, store.Attempt{ExternalID: "local-1-abc", Spec: string(other), Result: string(result)})
	if view.Cost != "" || view.BuildURL != "" {
		t.Errorf("unpriced/local: cost %q, build %q", view.Cost, view.BuildURL)
	}
}

// The session page shows the session's usage as the model proxy counted
// it in the store (the supervisor's evidence carries none), the cache
// reads and writes among its input, and prices it the server's way
// (config.Server.ModelCost): cache reads at cached_input_price, writes at
// cache_write_price.
func TestSessionPageShowsTheStoresUsageAndCostsTheCacheAtItsPrices(t *testing.T) {
	cfg := config.Defaults()
	cfg.Agents.Models = []config.Model{{Name: "claude-x", InputPrice: 3, OutputPrice: 15, CachedInputPrice: 0.3, CacheWritePrice: 3.75}}
	w := newWorldWith(t, func(o *Options) { o.Cost = cfg.ModelCost })
	ctx := context.Background()
	spec, _ := json.Marshal(contract.Spec{Agent: contract.Agent{Model: "claude-x"}})
	if err := w.st.CreateAttempt(ctx, store.Attempt{ID: "visible-1-a1", SessionID: "visible-1", Number: 1, Deadline: time.Now().Add(time.Hour), Spec: string(spec)}, "claim-code-0123456789", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.MutateSession(ctx, "visible-1", time.Now(), func(x *store.Session) error { x.AttemptID = "visible-1-a1"; return nil }); err != nil {
		t.Fatal(err)
	}
	used := store.Usage{InputTokens: 1_049_203, CacheReadTokens: 1_000_000, CacheWriteTokens: 48_000, OutputTokens: 10_000, TotalTokens: 1_059_203, Requests: 9}
	if _, err := w.st.AddUsage(ctx, "visible-1-a1", used, time.Now()); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, page := w.get(t, "/sessions/visible-1")
	if code != 200 {
		t.Fatalf("the page: %d", code)
	}
	// 1203×3 + 1,000,000×0.3 + 48,000×3.75 + 10,000×15, per million.
	for _, want := range []string{
		`<p id="usage">1059203 tokens (1049203 in, of which 1000000 cache reads and 48000 cache writes, 10000 out) over 9 requests</p>`,
		`<span id="cost">$0.6336</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// The session page shows the attempt's diff file by file, each line
// classed for its colour and escaped: a line holding <script> is text,
// and a truncated diff says so.
func TestSessionPageShowsTheDiffEscaped(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if err := w.st.CreateAttempt(ctx, store.Attempt{ID: "visible-1-a1", SessionID: "visible-1", Number: 1, Deadline: time.Now().Add(time.Hour), Spec: "{}"}, "claim-code-0123456789", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.MutateSession(ctx, "visible-1", time.Now(), func(x *store.Session) error { x.AttemptID = "visible-1-a1"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.ClaimAttempt(ctx, "visible-1-a1", "claim-code-0123456789", "token-abcdefghijklmnop", time.Now()); err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/page.html b/page.html\nindex 1111111..2222222 100644\n--- a/page.html\n+++ b/page.html\n@@ -1,2 +1,2 @@\n <p>kept</p>\n-<b>old</b>\n+<script>alert(1)</script>\n" +
		"diff --git \"a/we\\\"ird\" \"b/we\\\"ird\"\nnew file mode 100644\nindex 0000000..3333333\n--- /dev/null\n+++ \"b/we\\\"ird\"\n@@ -0,0 +1 @@\n+++ not a header\n" +
		"diff --git a/logo.png b/logo.png\nindex 4444444..5555555 100644\nBinary files a/logo.png and b/logo.png differ\n"
	if _, err := w.st.RecordResult(ctx, "visible-1-a1", "{}", &store.Diff{Patch: patch, Truncated: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, page := w.get(t, "/sessions/visible-1")
	if code != 200 {
		t.Fatalf("the page: %d", code)
	}
	diff := between(page, `<div id="diff">`, `</div>`)
	for _, want := range []string{
		`<h3><code>page.html</code></h3>`,
		`<span class="meta">index 1111111..2222222 100644</span>`,
		`<span class="meta">&#43;&#43;&#43; b/page.html</span>`,
		`<span class="hunk">@@ -1,2 &#43;1,2 @@</span>`,
		`<span class="ctx"> &lt;p&gt;kept&lt;/p&gt;</span>`,
		`<span class="del">-&lt;b&gt;old&lt;/b&gt;</span>`,
		`<span class="add">&#43;&lt;script&gt;alert(1)&lt;/script&gt;</span>`,
		`<h3><code>we&#34;ird</code></h3>`,
		`<span class="add">&#43;&#43;&#43; not a header</span>`,
		`<h3><code>logo.png</code></h3>`,
		`<span class="meta">Binary files a/logo.png and b/logo.png differ</span>`,
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff lacks %s:\n%s", want, diff)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>old") {
		t.Error("a line of the diff reached the page as markup")
	}
	if !strings.Contains(page, `id="diff-truncated"`) || !strings.Contains(page, "cut at 1 MiB") {
		t.Error("the page does not say the diff was cut")
	}

	// A later attempt without a diff (it has not ended) shows none.
	if err := w.st.CreateAttempt(ctx, store.Attempt{ID: "visible-1-a2", SessionID: "visible-1", Number: 2, Deadline: time.Now().Add(time.Hour), Spec: "{}"}, "claim-code-9876543210", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.MutateSession(ctx, "visible-1", time.Now(), func(x *store.Session) error { x.AttemptID = "visible-1-a2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if code, page = w.get(t, "/sessions/visible-1"); code != 200 || strings.Contains(page, `id="diff"`) {
		t.Errorf("an attempt without a diff: %d, diff shown: %v", code, strings.Contains(page, `id="diff"`))
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// TestUserReadsGoThroughTheUsersOwnClient: every request the pages make
// with a user's token (their repositories, the start form's reads) is
// made by Options.AsUser for that user, so the server's per-user outbound
// discipline holds; only sign-in's one question of whose token it is goes
// plain.
func TestUserReadsGoThroughTheUsersOwnClient(t *testing.T) {
	via := &countingTransport{}
	var users []int64
	var mu sync.Mutex
	var w *world
	w = newWorldWith(t, func(o *Options) {
		o.AsUser = func(_ context.Context, userID int64, token string) (*github.Client, error) {
			mu.Lock()
			users = append(users, userID)
			mu.Unlock()
			c := github.NewClient(&http.Client{Transport: via}).WithAuthToken(token)
			base, err := url.Parse(w.gh.APIURL())
			c.BaseURL = base
			return c, err
		}
	})
	w.signIn(t)
	if code, _ := w.get(t, "/sessions"); code != 200 {
		t.Fatalf("sessions: %d", code)
	}
	w.clock.Advance(2 * time.Minute) // past the permission cache
	w.gh.CreateBranch("acme", "widgets", "feature/login", "")
	code, page := w.get(t, "/sessions/new")
	if code != 200 {
		t.Fatalf("start form: %d", code)
	}
	form := url.Values{"csrf": {between(page, `name="csrf" value="`, `"`)}, "repo": {"acme/widgets"}, "branch": {"feature/login"}, "instructions": {"make it pass"}}
	resp, err := w.http.PostForm(w.srv.URL+"/sessions/new", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	w.cmds.mu.Lock()
	started := len(w.cmds.triggers)
	w.cmds.mu.Unlock()
	if started != 1 {
		t.Fatalf("the start form started %d sessions, want 1 (status %d)", started, resp.StatusCode)
	}
	userRequests := 0
	for _, r := range w.gh.Requests() {
		if r.Auth == "user" {
			userRequests++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(users) == 0 {
		t.Fatal("AsUser was never asked for a client")
	}
	for _, id := range users {
		if id != 5000 {
			t.Errorf("AsUser was asked for user %d, want alice (5000)", id)
		}
	}
	via.mu.Lock()
	defer via.mu.Unlock()
	if via.n != userRequests-1 {
		t.Errorf("%d requests went through AsUser's client, %d were made with the user's token; all but sign-in's GET /user should have", via.n, userRequests)
	}
}

// The snapshots page shows each readable repository's newest snapshot
// with its commit, age, size and layers, the default branch's drift since
// (asked of GitHub with the user's token, once a minute at most; a compare
// GitHub refuses is "drift unknown", not an error page), and the last
// build's result with its log, escaped, in a collapsed block.
func TestSnapshotsPageShowsSizeLogAndDrift(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.gh.AddRepo(fakegithub.Repo{ID: 103, Owner: "acme", Name: "gadgets", InstallationID: 1, Private: true})
	w.gh.SetPermission("acme", "gadgets", "alice", "read")
	built := w.gh.CommitFiles("acme", "widgets", "main", map[string]string{"go.mod": "module widgets\n"}, "the snapshot's commit")
	for i := range 3 {
		w.gh.CommitFiles("acme", "widgets", "main", map[string]string{"n.txt": strings.Repeat("n", i+1)}, "after the snapshot")
	}
	w.gh.CommitFiles("acme", "gadgets", "main", map[string]string{"a": "a"}, "gadgets")
	now := w.clock.Now()
	log := "--- snapshot deps: go mod download exited 0 after 2s\n<script>alert(1)</script>\ndownloaded 12 modules\n"
	// The build's egress: a module fetched, and requests refused whose
	// paths and reasons hold the sandbox's markup.
	var egress contract.EgressAudit
	egress.Add(contract.EgressRecord{Kind: contract.EgressRegistry, Phase: contract.PhaseSetup, Upstream: "goproxy", Method: "GET", Path: "fake.test/alpha/@v/v1.0.0.zip", Status: 200, Bytes: 2048, Millis: 30})
	egress.Add(contract.EgressRecord{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "elsewhere", Method: "GET", Path: "<img src=x onerror=alert(2)>/@v/list", Status: 403,
		Why: `the server opens no registry named "elsewhere" <b>to this attempt</b>`})
	egress.Add(contract.EgressRecord{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Method: "CONNECT", Path: "evil.example:443", Status: 403, Why: "this is not a proxy"})
	for _, c := range []struct {
		id   int64
		name string
		o    store.SnapshotOutcome
	}{
		{101, "acme/widgets", store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("ab", 32), SHA: built, Branch: "main", Size: 1610612736, Layers: 5, Log: log, Egress: &egress}},
		// A commit GitHub does not know (a force-push took it away).
		{103, "acme/gadgets", store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("cd", 32), SHA: strings.Repeat("f", 40), Branch: "main", Size: 900, Layers: 1}},
		{102, "acme/secret", store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("ef", 32), SHA: strings.Repeat("e", 40), Branch: "main", Size: 1, Layers: 1, Log: "secret log"}},
	} {
		if err := w.st.WantSnapshots(ctx, c.id, c.name, 1, now.Add(-3*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := w.st.FinishSnapshotBuild(ctx, c.id, c.o, now.Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// gadgets' next build failed before any setup command ran.
	if err := w.st.FinishSnapshotBuild(ctx, 103, store.SnapshotOutcome{Error: "snapshot build of acme/gadgets: cloning: <b>refused</b>"}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, body := w.get(t, "/snapshots")
	if code != 200 {
		t.Fatalf("snapshots page: %d %s", code, body)
	}
	widgets, gadgets := between(body, `id="repo-101"`, "</section>"), between(body, `id="repo-103"`, "</section>")
	for _, want := range []string{
		"acme/widgets", `title="sha256:` + strings.Repeat("ab", 32) + `">sha256:ababababab`, `<code title="` + built + `">` + built[:7] + `</code> on <code>main</code>`,
		"2h0m0s, built", "1.5 GiB in 5 layers", "3 commits on <code>main</code> since",
		"<details><summary>The last build's setup output (101 B)</summary><pre>--- snapshot deps: go mod download exited 0 after 2s\n",
		"&lt;script&gt;alert(1)&lt;/script&gt;\ndownloaded 12 modules", `<span class="badge done">built</span>`,
	} {
		if !strings.Contains(widgets, want) {
			t.Errorf("widgets lacks %q:\n%s", want, widgets)
		}
	}
	// The egress: counted, the refusals shown as they are (not folded
	// away), their text escaped; the requests in a collapsed block.
	refused, requests := between(widgets, `<table class="refused">`, "</table>"), between(widgets, "<details><summary>The last build's registry requests</summary>", "</details>")
	if !strings.Contains(widgets, `<dd class="egress"><div class="egress-summary">1 registry request (2.0 KiB), 2 refused.</div>`) {
		t.Errorf("widgets lacks its egress summary:\n%s", widgets)
	}
	for _, want := range []string{
		"<code>GET elsewhere &lt;img src=x onerror=alert(2)&gt;/@v/list</code>", "the server opens no registry named &#34;elsewhere&#34; &lt;b&gt;to this attempt&lt;/b&gt;",
		"<code>CONNECT evil.example:443</code>", "this is not a proxy",
	} {
		if !strings.Contains(refused, want) || strings.Contains(requests, want) {
			t.Errorf("the refusals, shown open, lack %q:\n%s", want, widgets)
		}
	}
	if !strings.Contains(requests, "<code>GET goproxy fake.test/alpha/@v/v1.0.0.zip</code></td><td>200</td><td>2.0 KiB</td>") {
		t.Errorf("the registry requests lack the module's zip:\n%s", widgets)
	}
	for _, want := range []string{
		"900 B in 1 layer<", "drift unknown", `<span class="badge error">failed</span>`, "cloning: &lt;b&gt;refused&lt;/b&gt;",
		"No output: the last build ran no setup command", "None recorded: the last build's setup reached no registry",
	} {
		if !strings.Contains(gadgets, want) {
			t.Errorf("gadgets lacks %q:\n%s", want, gadgets)
		}
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>refused") || strings.Contains(body, "<img") || strings.Contains(body, "<b>to this") || strings.Contains(body, "acme/secret") || strings.Contains(body, "secret log") {
		t.Errorf("the page has raw markup or another repository's snapshot:\n%s", body)
	}
	compares := func() int { return len(w.gh.RequestsMatching("GET", "/repos/acme/")) }
	asked := compares()
	if n := len(w.gh.RequestsMatching("GET", "/repos/acme/widgets/compare/"+built+"...main")); n != 1 {
		t.Errorf("widgets' drift was asked %d times, want once", n)
	}

	// Within the minute a reload asks GitHub nothing; after it, the new
	// commit on main counts.
	w.gh.CommitFiles("acme", "widgets", "main", map[string]string{"n.txt": "more"}, "one more")
	w.clock.Advance(30 * time.Second)
	if _, body := w.get(t, "/snapshots"); !strings.Contains(body, "3 commits on <code>main</code> since") || compares() != asked {
		t.Errorf("a reload within the minute asked GitHub %d more times", compares()-asked)
	}
	w.clock.Advance(time.Minute)
	if _, body := w.get(t, "/snapshots"); !strings.Contains(body, "4 commits on <code>main</code> since") {
		t.Errorf("after the minute: %s", between(body, `id="repo-101"`, "</section>"))
	}
	if n := len(w.gh.RequestsMatching("GET", "/repos/acme/widgets/compare/")); n != 2 {
		t.Errorf("widgets' drift asked %d times over two minutes, want 2", n)
	}
	// The token was the user's own.
	for _, r := range w.gh.RequestsMatching("GET", "/repos/acme/widgets/compare/") {
		if r.Auth != "user" {
			t.Errorf("compare asked as %q, want alice's user token", r.Auth)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 10 << 20: "10 MiB", 1610612736: "1.5 GiB", 5 << 40: "5.0 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A page's drift reads run at most driftReads at a time, each repository's
// once, and a repository GitHub answers badly for is unknown, not an error.
// GitHub's stand-in holds every read until the test lets one go, and lets
// one go only when driftReads are held: a page that asked more at once
// would have more in flight.
func TestDriftReadsAreBounded(t *testing.T) {
	var mu sync.Mutex
	inflight, most, calls := 0, 0, map[string]int{}
	arrived, proceed := make(chan struct{}, 16), make(chan struct{})
	// In process, no dialling: a read is in flight from the moment the
	// page starts it.
	github := roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		calls[r.URL.Path]++
		mu.Unlock()
		arrived <- struct{}{}
		select {
		case <-proceed:
		case <-r.Context().Done():
		}
		mu.Lock()
		inflight--
		mu.Unlock()
		status, body := http.StatusOK, `{"status":"ahead","ahead_by":7,"behind_by":0,"total_commits":7,"commits":[]}`
		if strings.Contains(r.URL.Path, "/r9/") {
			status, body = http.StatusNotFound, `{"message":"Not Found"}`
		}
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})
	key := sha256.Sum256([]byte("k"))
	s, err := New(Options{PublicURL: "https://inspect.example", WebURL: "https://github.example", APIURL: "https://api.github.example", Key: key[:],
		PermissionCache: time.Minute, SessionLifetime: time.Hour, Log: zerolog.Nop(), HTTP: &http.Client{Transport: github}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	var targets []driftTarget
	for i := range n {
		targets = append(targets, driftTarget{repoID: int64(i), owner: "o", name: "r" + string(rune('0'+i)), sha: strings.Repeat("a", 40), branch: "main"})
	}
	done := make(chan []drift)
	go func() { done <- s.drifts(context.Background(), &viewer{Login: "alice", token: "ghu_x"}, targets) }()
	held := 0
	for received := 0; received < n; {
		<-arrived
		received, held = received+1, held+1
		if held == driftReads {
			// Reads the page started past the bound are runnable now, not
			// blocked: yield to them first, so that they arrive (and are
			// counted) before any read ends. The bound holding never
			// depends on this; catching a page that breaks it does.
			runtime.Gosched()
			proceed <- struct{}{}
			held--
		}
	}
	for ; held > 0; held-- {
		proceed <- struct{}{}
	}
	got := <-done
	if most != driftReads {
		t.Errorf("%d reads at once, want %d", most, driftReads)
	}
	for i, d := range got {
		want := drift{Known: i != 9, Ahead: 7, Branch: "main"}
		if i == 9 {
			want.Ahead = 0
		}
		if d != want {
			t.Errorf("repo %d: %+v, want %+v", i, d, want)
		}
	}
	for p, c := range calls {
		if c != 1 {
			t.Errorf("%s asked %d times", p, c)
		}
	}
	if len(calls) != n {
		t.Errorf("%d repositories asked, want %d", len(calls), n)
	}
}

// roundTripper is an http.RoundTripper that is a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSessionPageShowsTheAnswerAsMarkdownApartFromTheOutcome: the Answer
// box holds the agent's final answer, rendered as Markdown and sanitized
// (decision 0068); Inspect's outcome sentence stands apart; and a reason
// code that only repeats the outcome is not shown twice.
func TestSessionPageShowsTheAnswerAsMarkdownApartFromTheOutcome(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if err := w.st.CreateAttempt(ctx, store.Attempt{ID: "visible-1-a1", SessionID: "visible-1", Number: 1, Deadline: time.Now().Add(time.Hour), Spec: "{}"}, "claim-code-0123456789", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.ClaimAttempt(ctx, "visible-1-a1", "claim-code-0123456789", "token-abcdefghijklmnop", time.Now()); err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(contract.ResultUpload{Evidence: contract.Evidence{
		FinalAnswer: "Fixed `Add` ✅\n\n<script>alert(1)</script>\n\n[see](javascript:alert(2))",
	}})
	if _, err := w.st.RecordResult(ctx, "visible-1-a1", string(result), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.MutateSession(ctx, "visible-1", time.Now(), func(x *store.Session) error {
		x.AttemptID = "visible-1-a1"
		return x.End(session.Changed, string(session.Changed), "Inspect opened a pull request in `6c93235`.")
	}); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, page := w.get(t, "/sessions/visible-1")
	if code != 200 {
		t.Fatalf("the page: %d", code)
	}
	answer := between(page, `<div id="answer" class="answer">`, `</div>`)
	if !strings.Contains(answer, "<code>Add</code> ✅") {
		t.Errorf("the answer is not rendered as Markdown: %q", answer)
	}
	if strings.Contains(answer, "Inspect opened") {
		t.Errorf("the answer box holds the outcome sentence: %q", answer)
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "javascript:") {
		t.Error("the agent's markup reached the page able to act")
	}
	if got := between(page, `<div id="detail" class="outcome">`, `</div>`); got != "<p>Inspect opened a pull request in <code>6c93235</code>.</p>\n" {
		t.Errorf("the outcome sentence: %q", got)
	}
	if strings.Contains(page, "(changed)") {
		t.Error(`the state reads "done · changed (changed)"`)
	}
}

// The session's page shows the comparison with the base as the PR body
// does (decision 0081): where the base's verify ran, the counts, and each
// listed test base → change, the flagged ones marked; a test's name, the
// repository's text, is escaped.
func TestSessionPageShowsTheComparisonWithTheBase(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	if err := w.st.CreateAttempt(ctx, store.Attempt{ID: "visible-1-a1", SessionID: "visible-1", Number: 1, Deadline: time.Now().Add(time.Hour), Spec: "{}"}, "claim-code-0123456789", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.ClaimAttempt(ctx, "visible-1-a1", "claim-code-0123456789", "token-abcdefghijklmnop", time.Now()); err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(contract.ResultUpload{Evidence: contract.Evidence{
		Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test", "./..."}, ExitCode: 1}},
		Baseline: &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "visible-1-b1", Reused: true, BaseSHA: "9e8d7c6a5f4e",
			Verify: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", ExitCode: 1}},
			Counts: contract.BaselineCounts{NewlyFailing: 1, Fixed: 1, Removed: 1, NotFixed: 1, Passing: 40},
			Tests: []contract.TestComparison{
				{Name: "TestLex<script>alert(1)</script>", Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing},
				{Name: "TestGone", Base: contract.TestFailed, Fared: contract.TestRemoved},
				{Name: "TestParse", Base: contract.TestFailed, Change: contract.TestPassed, Fared: contract.TestFixed},
			},
			MoreTests:    4,
			Reproduction: &contract.Reproduction{Why: "no test file in the change"}},
	}})
	if _, err := w.st.RecordResult(ctx, "visible-1-a1", string(result), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.MutateSession(ctx, "visible-1", time.Now(), func(x *store.Session) error {
		x.AttemptID = "visible-1-a1"
		return x.End(session.VerificationFailed, "verification_failed", "❌ Verification failed.")
	}); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, page := w.get(t, "/sessions/visible-1")
	if code != 200 {
		t.Fatalf("the page: %d", code)
	}
	if got := between(page, `<p id="baseline-run">`, `</p>`); got != "Verify on the base (<code>9e8d7c6a5f4e</code>) is reused from an earlier attempt's run, <code>visible-1-b1</code>. There: test exit 1." {
		t.Errorf("where the base's verify ran: %q", got)
	}
	if got := between(page, `<p id="baseline-counts">`, `</p>`); got != "1 fixed, 0 still failing, 1 newly failing, 1 not fixed, 1 removed, 0 skipped, 0 added, 40 passing throughout." {
		t.Errorf("the counts: %q", got)
	}
	table := between(page, `<table id="baseline">`, `</table>`)
	rows := strings.Split(between(table, "<tbody>\n", "</tbody>"), "\n")
	want := []string{
		`<tr class="flagged"><td><code>TestLex&lt;script&gt;alert(1)&lt;/script&gt;</code></td><td>passed</td><td>failed</td><td><strong>newly failing</strong></td></tr>`,
		`<tr class="flagged"><td><code>TestGone</code></td><td>failed</td><td>did not run</td><td><strong>not fixed: removed</strong></td></tr>`,
		`<tr><td><code>TestParse</code></td><td>failed</td><td>passed</td><td>fixed</td></tr>`,
		``,
	}
	if !slices.Equal(rows, want) {
		t.Errorf("the table's rows\n got %q\nwant %q", rows, want)
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("a test's name reached the page able to act")
	}
	if !strings.Contains(page, "4 more tests are not listed.") {
		t.Error("the tests past the comparison's cap are not counted")
	}
	if got := between(page, `<p id="reproduction">`, `</p>`); got != "<strong>Not reproduced</strong>: no test file in the change." {
		t.Errorf("the reproduction: %q", got)
	}
}

// A continuation whose agent could not resume its own conversation says
// so on its page, with why, as text (decision 0072); one that resumed
// says nothing of it.
func TestSessionPageSaysWhenTheAgentStartedFresh(t *testing.T) {
	key := sha256.Sum256([]byte("k"))
	s, err := New(Options{PublicURL: "https://inspect.example", WebURL: "https://github.com", APIURL: "https://api.github.com",
		Key: key[:], PermissionCache: time.Minute, SessionLifetime: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	page := func(note *contract.AgentStateNote) string {
		t.Helper()
		result, _ := json.Marshal(contract.ResultUpload{Evidence: contract.Evidence{AgentState: note}})
		view := sessionView{Session: store.Fixture(session.Done, store.Session{ID: "s1"})}
		s.attemptView(&view, store.Attempt{ExternalID: "local-1-abc", Spec: "{}", Result: string(result)})
		rec := httptest.NewRecorder()
		s.render(rec, http.StatusOK, "session.html", map[string]any{"Viewer": &viewer{Login: "alice", CSRF: "c"}, "S": view})
		return rec.Body.String()
	}
	got := page(&contract.AgentStateNote{Fresh: `the conversation state holds "<b>x</b>", which is not part of a codex conversation`})
	if want := `<p id="started-fresh">The agent started a new conversation, not its own earlier one (the conversation state holds &#34;&lt;b&gt;x&lt;/b&gt;&#34;, which is not part of a codex conversation): it was told the earlier turns as text.</p>`; !strings.Contains(got, want) {
		t.Errorf("the page lacks %s:\n%s", want, between(got, "<h2>Turns</h2>", "<h2>"))
	}
	if got := page(&contract.AgentStateNote{Restored: "s0-a1"}); strings.Contains(got, "started-fresh") {
		t.Error("a resumed conversation's page says it started fresh")
	}
}
