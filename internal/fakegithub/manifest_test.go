package fakegithub

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func postManifest(t *testing.T, s *Server, path, manifest string) (int, string) {
	t.Helper()
	resp, err := noRedirect.PostForm(s.URL()+path, url.Values{"manifest": {manifest}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a short page
	return resp.StatusCode, string(b)
}

var tokenRE = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

// register posts a good manifest, confirms it and returns the code.
func register(t *testing.T, s *Server) string {
	t.Helper()
	status, page := postManifest(t, s, "/organizations/octo-org/settings/apps/new?state=st8",
		`{"name":"Inspect","url":"https://x.example","redirect_url":"http://127.0.0.1:1/cb","hook_attributes":{"url":"https://x.example/hook"},"default_permissions":{"contents":"write","issues":"write"},"default_events":["push"]}`)
	if status != 200 {
		t.Fatalf("manifest page: %d %s", status, page)
	}
	m := tokenRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no confirmation token:\n%s", page)
	}
	resp, err := noRedirect.PostForm(s.URL()+"/settings/apps/new/confirm", url.Values{"token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Host != "127.0.0.1:1" || loc.Query().Get("state") != "st8" {
		t.Fatalf("confirm: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func convert(t *testing.T, s *Server, code string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.APIURL()+"app-manifests/"+code+"/conversions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out) // the status is what most cases check
	return resp.StatusCode, out
}

func TestManifestConversionHandsOutTheAppOnce(t *testing.T) {
	s := New()
	defer s.Close()
	code := register(t, s)
	status, app := convert(t, s, code)
	if status != http.StatusCreated {
		t.Fatalf("conversion: %d %v", status, app)
	}
	if app["pem"] != string(s.AppPrivateKeyPEM()) || app["webhook_secret"] == "" || app["client_secret"] == "" ||
		app["owner"].(map[string]any)["login"] != "octo-org" {
		t.Errorf("app = %v", app)
	}
	if got := app["permissions"].(map[string]any); got["contents"] != "write" || got["metadata"] != "read" || got["members"] != nil {
		t.Errorf("permissions = %v, want the manifest's and metadata", got)
	}
	if status, _ := convert(t, s, code); status != http.StatusNotFound {
		t.Errorf("a second conversion: %d", status)
	}
	regs := s.ManifestRegistrations()
	if len(regs) != 1 || regs[0].WebhookSecret != app["webhook_secret"] || regs[0].AccountType != "Organization" {
		t.Errorf("registrations = %+v", regs)
	}
}

func TestManifestCodeExpiresAfterAnHour(t *testing.T) {
	s := New()
	defer s.Close()
	now := time.Now()
	s.SetClock(func() time.Time { return now })
	code := register(t, s)
	s.SetClock(func() time.Time { return now.Add(time.Hour + time.Second) })
	if status, _ := convert(t, s, code); status != http.StatusNotFound {
		t.Errorf("an expired code: %d", status)
	}
}

func TestManifestPageRefusesABadManifest(t *testing.T) {
	s := New()
	defer s.Close()
	for _, m := range []string{
		`not json`,
		`{"name":"x","redirect_url":"http://127.0.0.1/"}`,                                                         // no url
		`{"url":"https://x.example","redirect_url":"http://127.0.0.1/","default_permissions":{"contents":"all"}}`, // a bad level
		`{"url":"https://x.example"}`,                                                                             // no redirect
	} {
		if status, page := postManifest(t, s, "/settings/apps/new", m); status != http.StatusUnprocessableEntity || !strings.Contains(page, "Invalid GitHub App configuration") {
			t.Errorf("%s: %d %s", m, status, page)
		}
	}
	if status, _ := convert(t, s, "nosuchcode"); status != http.StatusNotFound {
		t.Errorf("an unknown code: %d", status)
	}
}
