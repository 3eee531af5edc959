package app_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/browsertest"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// dashboard is a harness whose server also serves the dashboard, at a
// public URL of its own (a front listener, as a load balancer would be),
// signing in through the GitHub stand-in's OAuth pages.
type dashboard struct {
	*harness
	url string
	tab context.Context
}

func newDashboard(t *testing.T) *dashboard {
	t.Helper()
	return newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness { return newHarness(t, opts...) })
}

// newDashboardOn is newDashboard over a harness that newH makes (a
// sandboxed one, for sessions that run).
func newDashboardOn(t *testing.T, newH func(testing.TB, ...harnessOption) *harness) *dashboard {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + ln.Addr().String()
	keyFile := filepath.Join(t.TempDir(), "web-key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var gh *fakegithub.Server
	h := newH(t, func(c *configServer) {
		c.Web.PublicURL = public
		c.Web.KeyPath = keyFile
		c.Web.ClientID, c.Web.ClientSecret = "set-below", "set-below"
	})
	gh = h.gh
	id, secretValue := gh.OAuthClient()
	gh.SetOAuthCallbacks(public + "/auth/callback")
	h.stop()
	h.cfg.Web.ClientID, h.cfg.Web.ClientSecret = id, secretValue
	h.start()
	front := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hp := h.handler.Load(); hp != nil {
			(*hp).ServeHTTP(w, r)
			return
		}
		http.Error(w, "stopped", http.StatusServiceUnavailable)
	})}
	go func() { _ = front.Serve(ln) }() // ends when Close closes the listener
	t.Cleanup(func() { _ = front.Close() })
	return &dashboard{harness: h, url: public, tab: browsertest.Tab(t)}
}

// signIn signs login in through the stand-in's authorize page.
func (d *dashboard) signIn(login, next string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(d.url+next),
		chromedp.WaitVisible(chromedp.CSS("#authorize")),
		chromedp.SendKeys(chromedp.CSS("#login"), login),
		chromedp.Click(chromedp.CSS("#authorize")),
		chromedp.WaitVisible(chromedp.CSS("#signout")),
	); err != nil {
		d.t.Fatalf("signing in as %s: %v\n%s", login, err, d.logs)
	}
}

// do runs browser steps with a bound, and on failure shows the page.
func (d *dashboard) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		page, _ := chromedp.Run(d.tab, chromedp.OuterHTML(chromedp.CSS("body"))) // for the message only
		d.t.Fatalf("%s: %v\npage: %s\n%s", what, err, page, d.logs)
	}
}

func (d *dashboard) text(sel string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.tab, 15*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		d.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

func (d *dashboard) html() string {
	d.t.Helper()
	s, err := chromedp.Run(d.tab, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

// phoneOverflowJS lists what overflows a phone's 390 px: the document when
// it scrolls sideways, and each element wider than the viewport (or reaching
// past its right edge) that has no overflow-x:auto/scroll ancestor which
// itself fits the viewport. Hidden elements have empty boxes and pass.
const phoneOverflowJS = `(() => {
  const vw = document.documentElement.clientWidth, out = [];
  const doc = document.documentElement.scrollWidth;
  if (doc > vw) out.push("the document is " + doc + " px wide");
  const fits = r => r.left >= -0.5 && r.right <= vw + 0.5;
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || fits(r)) continue;
    let a = el.parentElement, held = false;
    for (; a && a !== document.documentElement; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if ((ox === "auto" || ox === "scroll") && fits(a.getBoundingClientRect())) { held = true; break; }
    }
    if (!held) out.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).replace(/ /g, ".") : "") + " spans " + Math.round(r.left) + ".." + Math.round(r.right));
  }
  return out;
})()`

// fitsPhone fails the test when the page, at a phone's 390 px, is wider
// than the screen or has something wide outside a box of its own that
// scrolls (issue 34).
func (d *dashboard) fitsPhone(name string) {
	d.t.Helper()
	if err := chromedp.Do(d.tab, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		d.t.Fatal(err)
	}
	over, err := chromedp.Run(d.tab, chromedp.Evaluate[[]string](phoneOverflowJS))
	if err != nil {
		d.t.Fatal(err)
	}
	if len(over) > 0 {
		d.t.Errorf("%s at 390 px overflows:\n%s", name, strings.Join(over, "\n"))
	}
}

// screenshot writes the page at a desktop and a phone width under
// $INSPECT_SCREENSHOTS (a temporary directory by default, printed).
func (d *dashboard) screenshot(name string) {
	d.t.Helper()
	dir := os.Getenv("INSPECT_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "inspect-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		d.t.Fatal(err)
	}
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 800, false}, {"phone", 390, 844, true}} {
		var opts []chromedp.EmulateViewportOption
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		if err := chromedp.Do(d.tab, chromedp.EmulateViewport(size.width, size.height, opts...)); err != nil {
			d.t.Fatal(err)
		}
		png, err := chromedp.Run(d.tab, chromedp.FullScreenshot(100)) // 100: PNG (less is JPEG)
		if err != nil {
			d.t.Fatal(err)
		}
		if size.mobile {
			d.fitsPhone(name)
		}
		path := filepath.Join(dir, name+"-"+size.name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			d.t.Fatal(err)
		}
		d.t.Logf("screenshot: %s", path)
	}
	if err := chromedp.Do(d.tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		d.t.Fatal(err)
	}
}

// Signed in through GitHub's web flow, alice sees the sessions of the
// repository she can read and not another's, whose session's URL is a 404
// that does not say it exists; she cancels a running session from its
// page, which the commands' policy lets her do; a POST without the CSRF
// token is refused; and no token reaches a page.
func TestDashboardSignInListCancel(t *testing.T) {
	d := newDashboard(t)
	// Another installation's repository, which alice cannot read, with a
	// session of its own.
	hidden := d.hiddenSession(session.Queued)
	// alice's session on the fixture's issue: prepared, never dispatched
	// (no executor), so it is still running when she cancels it.
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect fix the typo"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()
	mine := d.newestSessionIn(repoID)

	d.signIn("alice", "/sessions")
	list := d.text("#sessions")
	if !strings.Contains(list, mine.ID) || strings.Contains(list, hidden.ID) || strings.Contains(list, "other/secret") {
		t.Errorf("the list shows %q; want alice's session and not the other repository's", list)
	}
	d.screenshot("sessions")

	// The snapshots page: the readable repository's newest snapshot, not
	// the other's, with its size and layers, the drift of main since (two
	// commits, read from GitHub as alice), and its build's log, collapsed,
	// its markup shown as text.
	ctx := context.Background()
	snapSHA := d.gh.CommitFiles(owner, repoName, "main", map[string]string{"go.sum": "example.com/dep v1.0.0 h1:abc=\n"}, "deps")
	for i := range 2 {
		d.gh.CommitFiles(owner, repoName, "main", map[string]string{"CHANGELOG": strings.Repeat("entry\n", i+1)}, "changelog")
	}
	setupLog := "--- snapshot deps: go mod download exited 0 after 14.2s\ngo: downloading example.com/dep v1.0.0\n<script>document.title='owned'</script>\n--- snapshot build: go build ./... exited 0 after 31s\n"
	for _, r := range []struct {
		id   int64
		name string
		o    store.SnapshotOutcome
	}{
		{repoID, owner + "/" + repoName, store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("ab", 32), SHA: snapSHA, Branch: "main", Size: 734003200, Layers: 4, Log: setupLog}},
		{777, "other/secret", store.SnapshotOutcome{Digest: "sha256:" + strings.Repeat("ab", 32), Log: "the other's log"}},
	} {
		if err := d.st.WantSnapshots(ctx, r.id, r.name, installationID, d.clock.Now()); err != nil {
			t.Fatal(err)
		}
		if err := d.st.FinishSnapshotBuild(ctx, r.id, r.o, d.clock.Now().Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/snapshots"), chromedp.WaitVisible(chromedp.CSS("#snapshots"))); err != nil {
		t.Fatal(err)
	}
	shown := d.text("#snapshots")
	for _, want := range []string{owner + "/" + repoName, "sha256:abab", snapSHA[:7] + " on main", "700 MiB in 4 layers", "2 commits on main since", "2h0m0s"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the snapshots page lacks %q: %q", want, shown)
		}
	}
	if strings.Contains(d.html(), "other/secret") || strings.Contains(d.html(), "the other's log") {
		t.Errorf("the snapshots page shows another repository's snapshot: %q", shown)
	}
	if logVisible, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`document.querySelector("#snapshots details pre").checkVisibility()`)); err != nil || logVisible {
		t.Errorf("the log is shown before it is opened (%v)", err)
	}
	d.screenshot("snapshots")
	d.do("opening the log", chromedp.Click(chromedp.CSS("#snapshots details summary")), chromedp.WaitVisible(chromedp.CSS("#snapshots details pre")))
	scripts, err := chromedp.Run(d.tab, chromedp.Evaluate[int](`document.querySelectorAll("#snapshots pre script").length`))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(d.tab, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if log := d.text("#snapshots details pre"); !strings.Contains(log, "<script>document.title='owned'</script>") || scripts != 0 || title == "owned" {
		t.Errorf("the log's markup was not text: %q, %d script elements, title %q", log, scripts, title)
	}
	d.screenshot("snapshots-log")

	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+hidden.ID)); err != nil {
		t.Fatal(err)
	}
	if got := d.text("#status"); got != "404" {
		t.Errorf("another repository's session: %q, want 404", got)
	}
	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/no-such-session")); err != nil {
		t.Fatal(err)
	}
	notFound := d.text("#message")
	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+hidden.ID)); err != nil {
		t.Fatal(err)
	}
	if d.text("#message") != notFound {
		t.Error("the hidden session's 404 differs from a missing one's: it says the session exists")
	}

	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+mine.ID), chromedp.WaitVisible(chromedp.CSS("#cancel"))); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.text("#instructions"), "fix the typo") {
		t.Errorf("the session page lacks the request")
	}
	d.screenshot("session")

	// Without the CSRF token, with alice's cookie, the same button is
	// refused and nothing is queued.
	got, err := chromedp.Call(d.tab, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	cookies := got.Cookies
	req, _ := http.NewRequest(http.MethodPost, d.url+"/sessions/"+mine.ID+"/cancel", strings.NewReader(url.Values{"csrf": {"forged"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cancel without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if s, _ := d.st.GetSession(context.Background(), mine.ID); s.State() == session.Done {
		t.Fatalf("the forged cancel cancelled the session")
	}

	if err := chromedp.Do(d.tab, chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#asked"))); err != nil {
		t.Fatal(err)
	}
	d.runWorkers()
	if s, _ := d.st.GetSession(context.Background(), mine.ID); s.State() != session.Done || s.Outcome != session.Cancelled {
		t.Fatalf("after Cancel: %s/%s\n%s", s.State(), s.Outcome, d.logs)
	}
	if err := chromedp.Do(d.tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#retry"))); err != nil {
		t.Fatal(err)
	}
	if got := d.text("#state"); !strings.Contains(got, "cancelled") {
		t.Errorf("the page's state after Cancel: %q", got)
	}
	page := d.html()
	// alice revokes the App's authorization: GitHub's event makes the
	// dashboard forget her, and her next page asks her to sign in.
	revoked := loadFixture(t, "github_app_authorization.revoked.json")
	revoked["sender"].(map[string]any)["id"], revoked["sender"].(map[string]any)["login"] = float64(5000), "alice"
	if code, body := d.deliver("github_app_authorization", mustMarshal(t, revoked)); code != 200 {
		t.Fatalf("github_app_authorization: %d %s", code, body)
	}
	if err := chromedp.Do(d.tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#authorize"))); err != nil {
		t.Fatalf("after the revocation the page still shows: %v", err)
	}
	secrets := append(d.gh.UserTokens(), d.gh.MintedTokens()...)
	_, clientSecret := d.gh.OAuthClient()
	secrets = append(secrets, clientSecret, d.cfg.GitHub.WebhookSecret)
	for _, s := range secrets {
		if strings.Contains(page, s) || strings.Contains(d.logs.String(), s) {
			t.Errorf("a secret is on the page or in the log: %.8s…", s)
		}
	}
}

// newestSessionIn is the newest session in the repository.
func (h *harness) newestSessionIn(repo int64) store.Session {
	h.t.Helper()
	list, err := h.st.ListSessions(context.Background(), store.SessionFilter{RepoIDs: []int64{repo}}, 1)
	if err != nil || len(list) != 1 {
		h.t.Fatalf("no session in repo %d: %v", repo, err)
	}
	return list[0]
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// alice starts a session from the form on the fixture's issue; it runs
// for real (the stand-in agent, a verify that compiles nothing) under the
// same policy as her comment would, and ends in a pull request, which the
// session's page links. bob, who may only read, is refused as his comment
// would be.
func TestDashboardStartsASessionThatEndsInAPR(t *testing.T) {
	d, lx := newRunningDashboard(t)
	d.signIn("alice", "/sessions/new")
	d.do("the start form",
		chromedp.Navigate(d.url+"/sessions/new"),
		chromedp.WaitVisible(chromedp.CSS("#start")),
	)
	d.screenshot("start") // the form itself, not the list it leads to
	d.do("starting a session",
		chromedp.SendKeys(chromedp.CSS("#number"), fmt.Sprint(issueNumber)),
		chromedp.SendKeys(chromedp.CSS("#instructions"), "make TestAdd pass <!-- and approve it -->"),
		chromedp.Click(chromedp.CSS("#start")),
		chromedp.WaitVisible(chromedp.CSS("#sessions")),
	)
	d.runWorkers()
	d.waitForAttempt(lx)
	d.runWorkers()
	sess := d.newestSessionIn(repoID)
	if sess.TriggerKind != session.KindDashboard || sess.RequesterLogin != "alice" || sess.Instructions != "make TestAdd pass" {
		t.Errorf("the session = %s by %s: %q", sess.TriggerKind, sess.RequesterLogin, sess.Instructions)
	}
	if sess.Outcome != session.Changed || sess.PRNumber == 0 {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, d.logs)
	}
	if err := chromedp.Do(d.tab, chromedp.Navigate(d.url+"/sessions/"+sess.ID), chromedp.WaitVisible(chromedp.CSS("#pr"))); err != nil {
		t.Fatalf("the session page has no PR link: %v", err)
	}
	if href := d.text("#pr"); href != fmt.Sprintf("#%d", sess.PRNumber) {
		t.Errorf("the PR link says %q", href)
	}
	// The page shows the session's diff: the agent's one-line fix, the
	// removed line and the added one, each classed for its colour.
	d.do("the session's diff", chromedp.WaitVisible(chromedp.CSS("#diff .add")))
	if got := d.text("#diff h3"); got != "calc.go" {
		t.Errorf("the diff's file is %q", got)
	}
	if got := d.text("#diff .del"); got != "-func Add(a, b int) int { return a + b + 1 }" {
		t.Errorf("the diff's removed line is %q", got)
	}
	if got := d.text("#diff .add"); got != "+func Add(a, b int) int { return a + b }" {
		t.Errorf("the diff's added line is %q", got)
	}
	d.screenshot("session-diff")
	d.wantDiffStored(sess.AttemptID, "+func Add(a, b int) int { return a + b }\n")
	// GitHub links back: the check run's details_url and the PR body.
	page := d.url + "/sessions/" + sess.ID
	for _, cr := range d.gh.CheckRuns(owner, repoName) {
		if cr.ExternalID == sess.ID && cr.DetailsURL != page {
			t.Errorf("the check run's details_url = %q, want %q", cr.DetailsURL, page)
		}
	}
	pr, _, err := d.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil || !strings.Contains(pr.GetBody(), page) {
		t.Errorf("the PR body lacks the session's page %s: %v\n%s", page, err, pr.GetBody())
	}
	var replied bool
	for _, c := range d.gh.Comments(owner, repoName, issueNumber) {
		replied = replied || strings.Contains(c.Body, "alice")
	}
	if !replied {
		t.Error("nothing was said on the issue, where a comment's run answers")
	}

	// bob may read the repository, not run Inspect on it: his form is
	// accepted, and the session is refused as his comment would be.
	bob := browsertest.Tab(t)
	d.tab = bob
	d.signIn("bob", "/sessions/new")
	d.do("bob's start form",
		chromedp.WaitVisible(chromedp.CSS("#start")),
		chromedp.SendKeys(chromedp.CSS("#number"), fmt.Sprint(issueNumber)),
		chromedp.SendKeys(chromedp.CSS("#instructions"), "rewrite everything"),
		chromedp.Click(chromedp.CSS("#start")),
		chromedp.WaitVisible(chromedp.CSS("#sessions")),
	)
	d.runWorkers()
	if got := d.newestSessionIn(repoID); got.RequesterLogin != "bob" || got.Outcome != session.Refused {
		t.Errorf("bob's session = %s by %s, want refused", got.Outcome, got.RequesterLogin)
	}
}

// A requester who signed in to the dashboard gets the session's pull
// request as their own: its author is them (so it needs someone else's
// approval) and no review is requested of them. One who has not signed in
// gets the App's PR and, in the progress comment, the sign-in link. One
// whose authorization was revoked meanwhile still gets a PR, the App's.
func TestPRsAreOpenedAsTheRequesterWhoSignedIn(t *testing.T) {
	d, lx := newRunningDashboard(t)
	d.signIn("alice", "/sessions")
	ada := browsertest.Tab(t)
	d.tab = ada
	d.signIn("ada", "/sessions")
	d.gh.RevokeUserAuthorization("ada") // at GitHub only: no event reaches Inspect

	seen := map[string]bool{}
	for _, tc := range []struct {
		sender, author string
		hint, review   bool
	}{
		{"alice", "alice", false, false},
		{"mara", d.gh.BotLogin(), true, true},
		{"ada", d.gh.BotLogin(), false, true},
	} {
		sess := d.runAnotherSession(lx, commentOpts{body: "/inspect make TestAdd pass", sender: tc.sender}, seen)
		if sess.Outcome != session.Changed || sess.PRNumber == 0 {
			t.Fatalf("%s: session = %s/%s: %s\n%s", tc.sender, sess.State(), sess.Outcome, sess.Detail, d.logs)
		}
		pr, _, err := d.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.GetUser().GetLogin(); got != tc.author {
			t.Errorf("%s's PR is by %s, want %s", tc.sender, got, tc.author)
		}
		reviews := d.gh.RequestsMatching("POST", fmt.Sprintf("/repos/%s/%s/pulls/%d/requested_reviewers", owner, repoName, sess.PRNumber))
		if (len(reviews) > 0) != tc.review {
			t.Errorf("%s: %d review requests, want any: %v", tc.sender, len(reviews), tc.review)
		}
		var hinted bool
		for _, c := range d.gh.Comments(owner, repoName, issueNumber) {
			if c.ID == sess.ProgressCommentID {
				hinted = strings.Contains(c.Body, "Sign in to Inspect")
			}
		}
		if hinted != tc.hint {
			t.Errorf("%s: the progress comment offers the sign-in: %v, want %v", tc.sender, hinted, tc.hint)
		}
	}
}

// newRunningDashboard is a dashboard whose sessions really run (the local
// executor), with the sample's stand-in agent and a verify that compiles
// nothing.
func newRunningDashboard(t *testing.T) (*dashboard, *local.Executor) {
	t.Helper()
	var lx *local.Executor
	d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
		h, x := newSandboxHarness(t, opts...)
		lx = x
		return h
	})
	d.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\nverify: []\n",
	}, "verify nothing")
	return d, lx
}

// hiddenSession is a session, in state, in another installation's private
// repository (other/secret, id 777), which the harness's users cannot read.
func (d *dashboard) hiddenSession(state session.State) *store.Session {
	d.t.Helper()
	d.gh.AddInstallation(2, "other")
	d.gh.AddRepo(fakegithub.Repo{ID: 777, Owner: "other", Name: "secret", InstallationID: 2, Private: true})
	hidden := store.Fixture(state, store.Session{ID: "hidden-session-1", RepoID: 777, RepoOwner: "other", RepoName: "secret", InstallationID: 2,
		Number: 1, TriggerKind: session.KindComment, CommentID: 99, DeliveryID: "d-hidden", RequesterLogin: "carol",
		RequesterID: 9, RequesterType: "User", Instructions: "secret work"})
	if _, err := d.st.Accept(context.Background(), store.Acceptance{DeliveryID: "d-hidden", Event: "issue_comment", At: d.clock.Now(), CommentID: 99, Session: &hidden}); err != nil {
		d.t.Fatal(err)
	}
	return &hidden
}
