package appsetup

import (
	"context"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakegithub"
)

// browser is what a browser does with the flow's pages, by hand: submit
// the one form of a page, follow redirects.
type browser struct {
	t      *testing.T
	client *http.Client
}

var (
	formRE  = regexp.MustCompile(`<form[^>]*method="post"[^>]*action="([^"]*)"`)
	inputRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

func (b *browser) get(u string) (int, string) {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body) // a short page; a read error shows as a wrong page
	return resp.StatusCode, string(body)
}

// submit posts the page's form, resolved against base.
func (b *browser) submit(base, page string) (int, string) {
	b.t.Helper()
	m := formRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form on the page:\n%s", page)
	}
	action, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		b.t.Fatal(err)
	}
	baseURL, _ := url.Parse(base)
	form := url.Values{}
	for _, in := range inputRE.FindAllStringSubmatch(page, -1) {
		form.Set(in[1], html.UnescapeString(in[2]))
	}
	resp, err := b.client.PostForm(baseURL.ResolveReference(action).String(), form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body) // as in get
	return resp.StatusCode, string(body)
}

func startFlow(t *testing.T, gh *fakegithub.Server, org string) (*Flow, string, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := "http://" + ln.Addr().String() + "/"
	f, err := NewFlow(Options{WebURL: gh.URL(), APIURL: gh.APIURL(), Org: org, PageURL: page,
		Manifest: ManifestOptions{PublicURL: "https://inspect.example.com"}}, page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_, _ = f.Serve(ctx, ln) // the result is read through f.Result
	}()
	t.Cleanup(func() { cancel(); <-served })
	return f, page, served
}

func TestFlowRegistersTheAppAndWritesAConfigThatLoads(t *testing.T) {
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.SetSignedInUser("mona")
	f, page, served := startFlow(t, gh, "")
	b := &browser{t: t, client: &http.Client{Timeout: 30 * time.Second}}

	code, body := b.get(page)
	if code != 200 || !strings.Contains(body, "your personal account") {
		t.Fatalf("page: %d\n%s", code, body)
	}
	code, confirm := b.submit(page, body)
	if code != 200 || !strings.Contains(confirm, "Create GitHub App for mona") {
		t.Fatalf("GitHub's page: %d\n%s", code, confirm)
	}
	code, done := b.submit(gh.URL(), confirm) // the client follows the redirect to the callback
	if code != 200 || !strings.Contains(done, "Registered") {
		t.Fatalf("callback: %d\n%s", code, done)
	}
	<-served
	app, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	regs := gh.ManifestRegistrations()
	if len(regs) != 1 || regs[0].Account != "mona" || !regs[0].Converted {
		t.Fatalf("registrations = %+v", regs)
	}
	if hook := regs[0].Manifest["hook_attributes"].(map[string]any)["url"]; hook != "https://inspect.example.com"+HookPath {
		t.Errorf("GitHub got the hook URL %v", hook)
	}
	if app.ID != gh.AppID() || app.Owner.Login != "mona" || app.WebhookSecret != regs[0].WebhookSecret {
		t.Errorf("app = %v, owner %s", app, app.Owner.Login)
	}

	dir := filepath.Join(t.TempDir(), "conf")
	w, err := Write(dir, app, ServerKeys{APIURL: gh.APIURL(), WebURL: gh.URL(), PublicURL: "https://inspect.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w.Config, w.PrivateKey, w.WebhookSecret, w.ClientSecret, w.WebKey} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v, want 0600", p, fi.Mode().Perm())
		}
	}
	key, err := os.ReadFile(w.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if string(key) != string(gh.AppPrivateKeyPEM()) || strings.Contains(string(key), `\n`) {
		t.Errorf("the key file is not the decoded pem:\n%s", key)
	}
	cfg, err := config.Load(w.Config, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the written config does not load: %v", err)
	}
	if cfg.GitHub.AppID != gh.AppID() || cfg.GitHub.WebhookSecret != regs[0].WebhookSecret || cfg.GitHub.APIURL != gh.APIURL() {
		t.Errorf("config = %+v", cfg.GitHub)
	}
	// The dashboard's sign-in is configured with the App's OAuth client.
	if secret, err := cfg.WebClientSecret(); err != nil || secret != regs[0].ClientSecret || cfg.Web.ClientID != app.ClientID || !cfg.WebEnabled() {
		t.Errorf("web = %+v (%v)", cfg.Web, err)
	}
	if _, err := cfg.WebKey(); err != nil {
		t.Error(err)
	}
	if err := cfg.CheckFiles(); err != nil {
		t.Error(err)
	}
	if cb := regs[0].Manifest["callback_urls"].([]any); len(cb) != 1 || cb[0] != "https://inspect.example.com"+CallbackPath {
		t.Errorf("callback_urls = %v", cb)
	}
	conf, err := os.ReadFile(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(conf), regs[0].WebhookSecret) || strings.Contains(string(conf), "PRIVATE KEY") {
		t.Error("the config file holds a secret; it should name the files")
	}
	if _, err := Write(dir, app, ServerKeys{APIURL: gh.APIURL(), WebURL: gh.URL()}); err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("a second Write: %v", err)
	}
}

func TestFlowForAnOrganisationPostsToItsPage(t *testing.T) {
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	_, page, _ := startFlow(t, gh, "octo-org")
	b := &browser{t: t, client: &http.Client{Timeout: 30 * time.Second}}
	_, body := b.get(page)
	if !strings.Contains(body, "/organizations/octo-org/settings/apps/new?state=") {
		t.Fatalf("the form does not post to the org's page:\n%s", body)
	}
	_, confirm := b.submit(page, body)
	if !strings.Contains(confirm, "Create GitHub App for octo-org") {
		t.Fatalf("GitHub's page:\n%s", confirm)
	}
}

func TestCallbackRefusesAForeignStateAndAUsedCode(t *testing.T) {
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	f, page, served := startFlow(t, gh, "")
	b := &browser{t: t, client: &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if code, _ := b.get(page + "callback?code=abc&state=not-ours"); code != http.StatusBadRequest {
		t.Errorf("a foreign state: %d", code)
	}
	select {
	case <-f.Done():
		t.Fatal("a foreign redirect ended the flow")
	default:
	}
	_, body := b.get(page)
	_, confirm := b.submit(page, body)
	// Exchange the code first, as an attacker who saw it would; the
	// callback then gets GitHub's 404.
	code, loc := func() (int, string) {
		m := formRE.FindStringSubmatch(confirm)
		form := url.Values{}
		for _, in := range inputRE.FindAllStringSubmatch(confirm, -1) {
			form.Set(in[1], html.UnescapeString(in[2]))
		}
		resp, err := b.client.PostForm(gh.URL()+html.UnescapeString(m[1]), form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}()
	if code != http.StatusFound {
		t.Fatalf("confirm: %d", code)
	}
	u, _ := url.Parse(loc)
	if _, err := Convert(context.Background(), http.DefaultClient, gh.APIURL(), u.Query().Get("code")); err != nil {
		t.Fatal(err)
	}
	if code, body := b.get(loc); code != http.StatusBadGateway || !strings.Contains(body, "good once") {
		t.Errorf("a used code: %d\n%s", code, body)
	}
	<-served
	if _, err := f.Result(); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("result: %v", err)
	}
}

// The page and its callback answer only at the page URL's host. The class
// closed: DNS rebinding, a name of the attacker's that a browser resolves
// to this host's loopback once its page is loaded, which then reads the
// page (and its state token) as same-origin and finishes the flow with an
// App the attacker owns. Its Host header is the attacker's name, never
// ours. The ssh -L form (localhost or 127.0.0.1 at the listener's port)
// keeps working. Variants the review did not try: the callback with the
// right state, a rebinding service's name that spells out 127.0.0.1, our
// host at another port, no Host at all, and a loopback host when an
// explicit page URL names another.
func TestPageAnswersOnlyAtItsOwnHost(t *testing.T) {
	for _, c := range []struct {
		name, page, host, path string
		served                 bool
	}{
		{"the page URL's host", "http://127.0.0.1:3000/", "127.0.0.1:3000", "/", true},
		{"ssh -L as localhost", "http://127.0.0.1:3000/", "localhost:3000", "/", true},
		{"ssh -L as localhost, any case", "http://127.0.0.1:3000/", "LocalHost:3000", "/", true},
		{"ssh -L over IPv6 loopback", "http://127.0.0.1:3000/", "[::1]:3000", "/", true},
		{"an explicit page URL", "https://setup.internal.example/", "setup.internal.example", "/", true},
		{"an explicit page URL with its default port", "https://setup.internal.example/", "setup.internal.example:443", "/", true},
		{"a rebound name", "http://127.0.0.1:3000/", "evil.example:3000", "/", false},
		{"a rebound name at the callback", "http://127.0.0.1:3000/", "evil.example:3000", "/callback", false},
		{"a rebinding service's name", "http://127.0.0.1:3000/", "127.0.0.1.nip.io:3000", "/", false},
		{"a name ending in localhost", "http://127.0.0.1:3000/", "evil.localhost.example:3000", "/", false},
		{"another port", "http://127.0.0.1:3000/", "127.0.0.1:3001", "/", false},
		{"no port", "http://127.0.0.1:3000/", "127.0.0.1", "/", false},
		{"no Host", "http://127.0.0.1:3000/", "", "/", false},
		{"loopback when the page URL names another host", "https://setup.internal.example/", "127.0.0.1:443", "/", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The API is a closed port: a callback that got through would fail
			// there, not reach GitHub.
			f, err := NewFlow(Options{WebURL: "https://github.com", APIURL: "http://127.0.0.1:1/", PageURL: c.page,
				Manifest: ManifestOptions{PublicURL: "https://inspect.example.com"}}, c.page)
			if err != nil {
				t.Fatal(err)
			}
			path := c.path
			if path == "/callback" {
				path += "?code=abc&state=" + f.state // the right state: only the Host is wrong
			}
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = c.host
			rec := httptest.NewRecorder()
			f.Handler().ServeHTTP(rec, req)
			body := rec.Body.String()
			if !c.served {
				if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(body, "only at "+c.page) || strings.Contains(body, f.state) {
					t.Errorf("Host %q: %d\n%s", c.host, rec.Code, body)
				}
				select {
				case <-f.Done():
					t.Error("a refused callback ended the flow")
				default:
				}
				return
			}
			if rec.Code != http.StatusOK || !strings.Contains(body, "state="+f.state) {
				t.Errorf("Host %q: %d\n%s", c.host, rec.Code, body)
			}
		})
	}
}
