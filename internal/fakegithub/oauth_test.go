package fakegithub

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// userFlow runs the web flow as a browser would, without one: the
// Authorize form posted for login, and the redirect's code taken.
func userFlow(t *testing.T, s *Server, login, verifier string) (code string, status int) {
	t.Helper()
	id, _ := s.OAuthClient()
	sum := sha256.Sum256([]byte(verifier))
	form := url.Values{"client_id": {id}, "redirect_uri": {"https://inspect.example/auth/callback"}, "state": {"st-1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "login": {login}}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(s.URL()+"/login/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", resp.StatusCode
	}
	to, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || to.Query().Get("state") != "st-1" || !strings.HasPrefix(to.String(), "https://inspect.example/auth/callback?") {
		t.Fatalf("redirected to %q", resp.Header.Get("Location"))
	}
	return to.Query().Get("code"), resp.StatusCode
}

func exchange(t *testing.T, s *Server, form url.Values) map[string]any {
	t.Helper()
	id, secret := s.OAuthClient()
	form.Set("client_id", id)
	if form.Get("client_secret") == "" {
		form.Set("client_secret", secret)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("token endpoint: %d %v", resp.StatusCode, err)
	}
	return out
}

func userClient(t *testing.T, s *Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The web flow with PKCE, the user's own APIs (only the repositories they
// can read), a refresh that retires the old pair, and the App revoking a
// token.
func TestUserAuthorizationFlow(t *testing.T) {
	s := newServer(t)
	s.SetOAuthCallbacks("https://inspect.example/auth/callback")
	s.AddUser("alice", 5000, "User")
	s.SetPermission("acme", "widgets", "alice", "read")
	ctx := context.Background()

	if _, status := userFlow(t, s, "nobody-known", "v-0123456789abcdefghijklmnopqrstuvwxyz0123456"); status != http.StatusUnauthorized {
		t.Errorf("an unknown user signing in: %d", status)
	}
	code, _ := userFlow(t, s, "alice", "v-0123456789abcdefghijklmnopqrstuvwxyz0123456")
	if got := exchange(t, s, url.Values{"code": {code}, "code_verifier": {"wrong"}}); got["error"] != "bad_verification_code" {
		t.Errorf("a wrong verifier: %v", got)
	}
	code, _ = userFlow(t, s, "alice", "v-0123456789abcdefghijklmnopqrstuvwxyz0123456")
	tok := exchange(t, s, url.Values{"code": {code}, "code_verifier": {"v-0123456789abcdefghijklmnopqrstuvwxyz0123456"}, "redirect_uri": {"https://inspect.example/auth/callback"}})
	access, _ := tok["access_token"].(string)
	if !strings.HasPrefix(access, "ghu_") || tok["expires_in"] != float64(28800) || !strings.HasPrefix(tok["refresh_token"].(string), "ghr_") {
		t.Fatalf("tokens = %v", tok)
	}
	if again := exchange(t, s, url.Values{"code": {code}}); again["error"] != "bad_verification_code" {
		t.Errorf("a code used twice: %v", again)
	}
	c := userClient(t, s, access)
	me, _, err := c.Users.Get(ctx, "")
	if err != nil || me.GetLogin() != "alice" {
		t.Fatalf("GET /user: %v %v", me, err)
	}
	insts, _, err := c.Apps.ListUserInstallations(ctx, nil)
	if err != nil || len(insts) != 1 || insts[0].GetID() != 1 {
		t.Fatalf("installations: %v %v", insts, err)
	}
	repos, _, err := c.Apps.ListUserRepos(ctx, 1, nil)
	if err != nil || len(repos.Repositories) != 1 || repos.Repositories[0].GetName() != "widgets" {
		t.Fatalf("repositories: %v %v", repos, err)
	}
	if _, resp, err := c.Apps.ListUserRepos(ctx, 2, nil); err == nil || resp.StatusCode != 404 {
		t.Errorf("another installation's repositories: %v", err)
	}

	// As the user, a repository they can read answers; one they cannot is
	// a 404, as if it did not exist.
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "t", State: "open", User: "alice"})
	if _, _, err := c.Issues.Get(ctx, "acme", "widgets", 1); err != nil {
		t.Errorf("alice reading widgets#1: %v", err)
	}
	if _, resp, err := c.Issues.Get(ctx, "acme", "gadgets", 1); err == nil || resp.StatusCode != 404 {
		t.Errorf("alice reading a repository she has no role on: %v", err)
	}
	if _, resp, err := c.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")}); err == nil || resp.StatusCode != 403 {
		t.Errorf("alice (read) commenting: %v", err)
	}

	fresh := exchange(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}})
	if _, _, err := c.Users.Get(ctx, ""); err == nil {
		t.Error("the old access token still works after a refresh")
	}
	if reuse := exchange(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}); reuse["error"] != "bad_refresh_token" {
		t.Errorf("a refresh token used twice: %v", reuse)
	}
	id, secret := s.OAuthClient()
	req, _ := http.NewRequest(http.MethodDelete, s.URL()+"/api/v3/applications/"+id+"/token", strings.NewReader(`{"access_token":"`+fresh["access_token"].(string)+`"}`))
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE token: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, _, err := userClient(t, s, fresh["access_token"].(string)).Users.Get(ctx, ""); err == nil {
		t.Error("a deleted token still works")
	}
}

// Refreshes are counted, once each: a refresh token spent a second time
// is refused and not counted. With expiring user tokens off, a grant
// has neither expires_in nor a refresh token, and its token keeps working.
func TestRefreshGrantsCountedAndTokensThatNeverExpire(t *testing.T) {
	s := newServer(t)
	s.SetOAuthCallbacks("https://inspect.example/auth/callback")
	s.AddUser("alice", 5000, "User")
	const verifier = "v-0123456789abcdefghijklmnopqrstuvwxyz0123456"
	code, _ := userFlow(t, s, "alice", verifier)
	tok := exchange(t, s, url.Values{"code": {code}, "code_verifier": {verifier}})
	if s.RefreshGrants() != 0 {
		t.Fatalf("%d refreshes after a code exchange", s.RefreshGrants())
	}
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}
	exchange(t, s, refresh)
	if again := exchange(t, s, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok["refresh_token"].(string)}}); again["error"] != "bad_refresh_token" || s.RefreshGrants() != 1 {
		t.Fatalf("a second spend: %v; %d refreshes counted, want 1", again, s.RefreshGrants())
	}

	s.SetUserTokensExpire(false)
	code, _ = userFlow(t, s, "alice", verifier)
	tok = exchange(t, s, url.Values{"code": {code}, "code_verifier": {verifier}})
	_, hasExpiry := tok["expires_in"]
	_, hasRefresh := tok["refresh_token"]
	if hasExpiry || hasRefresh {
		t.Fatalf("a grant of an App whose tokens never expire: %v", tok)
	}
	s.SetClock(func() time.Time { return time.Now().Add(24 * 365 * time.Hour) })
	if me, _, err := userClient(t, s, tok["access_token"].(string)).Users.Get(context.Background(), ""); err != nil || me.GetLogin() != "alice" {
		t.Fatalf("a year later: %v %v", me, err)
	}
}
