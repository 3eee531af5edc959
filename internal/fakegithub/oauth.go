package fakegithub

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// The App's user authorization, as GitHub documents it for GitHub Apps
// ("Generating a user access token for a GitHub App"): the web flow's
// pages, the token exchange and refresh, the user's own APIs, and the
// revocation of a token by the App. User access tokens are "ghu_…" and
// expire after eight hours; refresh tokens are "ghr_…", good for six
// months and for one use.
//
// The authorize page stands for GitHub's sign-in and consent: it asks
// which user is signing in (a test's browser types the login) and has an
// Authorize button. A real GitHub would know the user from its own cookie.

const (
	userTokenLifetime    = 8 * time.Hour
	refreshTokenLifetime = 15897600 * time.Second // GitHub's refresh_token_expires_in, about six months
	oauthCodeLifetime    = 10 * time.Minute       // GitHub: codes expire after ten minutes

	docsUserToken   = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-user-access-token-for-a-github-app"
	docsGetUser     = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
	docsUserInst    = "https://docs.github.com/rest/apps/installations#list-app-installations-accessible-to-the-user-access-token"
	docsUserRepos   = "https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-user-access-token"
	docsDeleteToken = "https://docs.github.com/rest/apps/oauth-applications#delete-an-app-token"
	docsRefresh     = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens"
	authUser        = "user"
)

// oauthState is the App's OAuth client and what the web flow handed out.
// Callers hold s.mu.
type oauthState struct {
	clientID, clientSecret string
	callbacks              []string
	codes                  map[string]*oauthCode
	userTokens             map[string]*userToken // access and refresh tokens, by value
	// neverExpire is an App with expiring user tokens turned off: a grant
	// has no expires_in and no refresh token (docsRefresh).
	neverExpire bool
	// refreshGrants counts the refresh tokens spent: each refresh that
	// reached the token endpoint and got new tokens.
	refreshGrants int
}

type oauthCode struct {
	login, redirectURI, challenge string
	expiresAt                     time.Time
}

// userToken is a user access token or a refresh token.
type userToken struct {
	value, login string
	refresh      bool
	pair         string // the other token of the same grant
	expiresAt    time.Time
	revoked      bool
}

func (s *Server) oauth() *oauthState {
	if s.oauthSt == nil {
		s.oauthSt = &oauthState{clientID: "Iv23li" + randomHex(7), clientSecret: randomHex(20),
			codes: map[string]*oauthCode{}, userTokens: map[string]*userToken{}}
	}
	return s.oauthSt
}

// OAuthClient is the App's client id and secret, for the server's config
// (web.client_id, web.client_secret).
func (s *Server) OAuthClient() (id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.oauth()
	return o.clientID, o.clientSecret
}

// SetOAuthCallbacks sets the App's callback URLs: a redirect_uri must be
// one of them, or a path under one (GitHub's rule for a redirect_uri with
// a registered callback URL).
func (s *Server) SetOAuthCallbacks(urls ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth().callbacks = append([]string(nil), urls...)
}

// RevokeUserAuthorization is the user revoking the App's authorization in
// their settings: every token of theirs stops working. (GitHub then sends
// github_app_authorization with action "revoked"; tests deliver it.)
func (s *Server) RevokeUserAuthorization(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.oauth().userTokens {
		if strings.EqualFold(t.login, login) {
			t.revoked = true
		}
	}
}

// SetUserTokensExpire turns the App's expiring user tokens on (the
// default) or off. Off, as GitHub documents it (docsRefresh), a grant
// carries neither expires_in nor a refresh token, and its access token
// works until it is revoked.
func (s *Server) SetUserTokensExpire(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth().neverExpire = !on
}

// RefreshGrants is how many refresh tokens were spent: refreshes that
// reached the token endpoint and got new tokens. GitHub makes the old
// pair stop working at each (docsRefresh).
func (s *Server) RefreshGrants() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauth().refreshGrants
}

// UserAccessToken grants login a user access token as the web flow would
// (a test that needs a signed-in user's token without a browser).
func (s *Server) UserAccessToken(login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[strings.ToLower(login)]
	if u == nil {
		panic(fmt.Sprintf("fakegithub: no user %q (AddUser first)", login))
	}
	return s.issueUserTokens(u.login)["access_token"].(string)
}

// UserTokens lists every user access and refresh token issued, for leak
// checks.
func (s *Server) UserTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for v := range s.oauth().userTokens {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func (s *Server) oauthRoutes() {
	s.mux.HandleFunc("GET /login/oauth/authorize", s.authorizePage)
	s.mux.HandleFunc("POST /login/oauth/authorize", s.authorize)
	s.mux.HandleFunc("POST /login/oauth/access_token", s.accessToken)
	s.handle("GET /user", docsGetUser, userOnly, s.getUser)
	s.handle("GET /user/installations", docsUserInst, userOnly, s.userInstallations)
	s.handle("GET /user/installations/{id}/repositories", docsUserRepos, userOnly, s.userInstallationRepos)
	s.handle("DELETE /applications/{client_id}/token", docsDeleteToken, nil, s.deleteAppToken)
}

// identifyUser checks a "ghu_" token. Callers hold s.mu.
func (s *Server) identifyUser(value string) credential {
	t, ok := s.oauth().userTokens[value]
	if !ok || t.refresh || t.revoked || !s.now().Before(t.expiresAt) {
		return refuse(authUser, "Bad credentials")
	}
	return credential{kind: authUser, userLogin: t.login}
}

func userOnly(s *Server, c *call) *response {
	if c.cred.kind != authUser {
		r := errResp(http.StatusForbidden, "You must authenticate with an access token authorized to a GitHub App in order to list installations", c.doc)
		if c.cred.kind == authInstallation {
			r = errResp(http.StatusForbidden, msgNotAccessible, c.doc)
		}
		return &r
	}
	return nil
}

var authorizeTmpl = template.Must(template.New("authorize").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Authorize {{.App}}</title></head>
<body><h1>Authorize {{.App}}</h1>
<form method="post" action="/login/oauth/authorize">
<label>Username or email address <input id="login" name="login" autocomplete="username"></label>
{{range $k, $v := .Params}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<button id="authorize" type="submit">Authorize {{.App}}</button>
</form></body></html>`))

// authorizePage is GitHub's sign-in and consent page for the App.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	msg := s.checkAuthorize(r.URL.Query())
	app := s.appName
	s.mu.Unlock()
	if msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	params := map[string]string{}
	for _, k := range []string{"client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method"} {
		params[k] = r.URL.Query().Get(k)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = authorizeTmpl.Execute(w, map[string]any{"App": app, "Params": params}) // a write to a gone browser
}

// checkAuthorize is GitHub's refusal of an authorize request, or "".
// Callers hold s.mu.
func (s *Server) checkAuthorize(q url.Values) string {
	o := s.oauth()
	if q.Get("client_id") != o.clientID {
		return "The client_id is not associated with a GitHub App."
	}
	if !s.callbackAllowed(q.Get("redirect_uri")) {
		return "The redirect_uri MUST match the registered callback URL for this application."
	}
	if m := q.Get("code_challenge_method"); q.Get("code_challenge") != "" && m != "S256" {
		return "code_challenge_method must be S256."
	}
	return ""
}

func (s *Server) callbackAllowed(redirect string) bool {
	for _, cb := range s.oauth().callbacks {
		if redirect == cb || strings.HasPrefix(redirect, strings.TrimSuffix(cb, "/")+"/") {
			return true
		}
	}
	return false
}

// authorize is the Authorize button: it sends the browser back to the
// redirect_uri with a code and the state.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	form, err := formOf(r)
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	msg := s.checkAuthorize(form)
	login := form.Get("login")
	u, known := s.users[strings.ToLower(login)]
	var code string
	if msg == "" && known && u.typ == "User" {
		code = randomHex(10)
		s.oauth().codes[code] = &oauthCode{login: u.login, redirectURI: form.Get("redirect_uri"),
			challenge: form.Get("code_challenge"), expiresAt: s.now().Add(oauthCodeLifetime)}
	}
	s.mu.Unlock()
	switch {
	case msg != "":
		http.Error(w, msg, http.StatusBadRequest)
		return
	case code == "":
		http.Error(w, "Incorrect username or password.", http.StatusUnauthorized)
		return
	}
	to, err := url.Parse(form.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	q := to.Query()
	q.Set("code", code)
	if st := form.Get("state"); st != "" {
		q.Set("state", st)
	}
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// accessToken exchanges a code, or a refresh token, for a user access
// token. Like GitHub it answers 200 with an "error" body to a bad grant,
// in JSON when asked (Accept: application/json), else form-encoded.
func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	f, err := formOf(r)
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	body := s.grant(f)
	s.mu.Unlock()
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(body) // a write to a gone client
		return
	}
	v := url.Values{}
	for k, x := range body {
		v.Set(k, fmt.Sprint(x))
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(v.Encode())) // as above
}

// grant is the token endpoint's answer. Callers hold s.mu.
func (s *Server) grant(f url.Values) map[string]any {
	o := s.oauth()
	fail := func(code, desc string) map[string]any {
		return map[string]any{"error": code, "error_description": desc, "error_uri": docsUserToken}
	}
	if f.Get("client_id") != o.clientID || subtle.ConstantTimeCompare([]byte(f.Get("client_secret")), []byte(o.clientSecret)) != 1 {
		return fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
	}
	var login string
	switch f.Get("grant_type") {
	case "", "authorization_code":
		c, ok := o.codes[f.Get("code")]
		if !ok || !s.now().Before(c.expiresAt) {
			return fail("bad_verification_code", "The code passed is incorrect or expired.")
		}
		delete(o.codes, f.Get("code")) // one use
		if ru := f.Get("redirect_uri"); ru != "" && ru != c.redirectURI {
			return fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		}
		if c.challenge != "" {
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
				return fail("bad_verification_code", "The code_verifier does not match the code_challenge.")
			}
		}
		login = c.login
	case "refresh_token":
		t, ok := o.userTokens[f.Get("refresh_token")]
		if !ok || !t.refresh || t.revoked || !s.now().Before(t.expiresAt) {
			return fail("bad_refresh_token", "The refresh token passed is incorrect or expired.")
		}
		t.revoked = true // one use: the refresh token and its access token stop working
		if a, ok := o.userTokens[t.pair]; ok {
			a.revoked = true
		}
		o.refreshGrants++
		login = t.login
	default:
		return fail("unsupported_grant_type", "The grant type is not supported.")
	}
	return s.issueUserTokens(login)
}

// issueUserTokens is a grant's answer for login: an access token and,
// while user tokens expire, a refresh token. Callers hold s.mu.
func (s *Server) issueUserTokens(login string) map[string]any {
	o := s.oauth()
	now := s.now()
	if o.neverExpire {
		access := &userToken{value: "ghu_" + randomHex(18), login: login, expiresAt: farFuture}
		o.userTokens[access.value] = access
		return map[string]any{"access_token": access.value, "token_type": "bearer", "scope": ""}
	}
	access := &userToken{value: "ghu_" + randomHex(18), login: login, expiresAt: now.Add(userTokenLifetime)}
	refresh := &userToken{value: "ghr_" + randomHex(18), login: login, refresh: true, expiresAt: now.Add(refreshTokenLifetime)}
	access.pair, refresh.pair = refresh.value, access.value
	o.userTokens[access.value], o.userTokens[refresh.value] = access, refresh
	return map[string]any{
		"access_token": access.value, "expires_in": int(userTokenLifetime.Seconds()),
		"refresh_token": refresh.value, "refresh_token_expires_in": int(refreshTokenLifetime.Seconds()),
		"token_type": "bearer", "scope": "",
	}
}

// farFuture is the expiry of a token that does not expire.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Server) getUser(c *call) response {
	u := s.users[strings.ToLower(c.cred.userLogin)]
	if u == nil {
		return notFound(c.doc)
	}
	// GitHub's public-user: the profile fields the stand-in does not
	// model are what a new account has.
	out := u.json(s)
	for k, v := range map[string]any{"user_view_type": "public", "name": nil, "company": nil, "blog": "", "location": nil,
		"email": nil, "hireable": nil, "bio": nil, "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"} {
		out[k] = v
	}
	return jsonResp(http.StatusOK, out)
}

// userCanRead reports whether login may read r: a role on it, or its
// owner's account. (A public repository is readable by anyone, but the
// user APIs list only what the user was given access to.)
func userCanRead(r *repoState, login string) bool {
	if strings.EqualFold(r.Owner, login) {
		return true
	}
	role, ok := r.roles[strings.ToLower(login)]
	return ok && role != "none"
}

// userRepos are the installation's repositories the user can read, by id.
func (s *Server) userRepos(instID int64, login string) []*repoState {
	var out []*repoState
	for _, r := range s.repos {
		if r.InstallationID == instID && userCanRead(r, login) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) userInstallations(c *call) response {
	var ids []int64
	for id := range s.installations {
		if len(s.userRepos(id, c.cred.userLogin)) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	items := make([]map[string]any, len(ids))
	for i, id := range ids {
		items[i] = s.installationJSON(s.installations[id])
	}
	return wrappedPage(c, "installations", items)
}

func (s *Server) userInstallationRepos(c *call) response {
	var id int64
	if _, err := fmt.Sscan(c.r.PathValue("id"), &id); err != nil || s.installations[id] == nil {
		return notFound(c.doc)
	}
	repos := s.userRepos(id, c.cred.userLogin)
	if len(repos) == 0 {
		return notFound(c.doc) // GitHub: 404 for an installation the user cannot reach
	}
	items := make([]map[string]any, len(repos))
	for i, r := range repos {
		items[i] = s.repoJSON(r)
	}
	return wrappedPage(c, "repositories", items)
}

// wrappedPage is one page of items under key, with total_count, as the
// installation listings answer, and the Link header of any page.
func wrappedPage(c *call, key string, items []map[string]any) response {
	p := page(c, items)
	p.body = map[string]any{"total_count": len(items), key: p.body}
	return p
}

// deleteAppToken revokes a user access token: Basic authentication with
// the App's client id and secret, the token in the body.
func (s *Server) deleteAppToken(c *call) response {
	o := s.oauth()
	id, secret, ok := c.r.BasicAuth()
	if !ok || id != o.clientID || c.r.PathValue("client_id") != o.clientID || subtle.ConstantTimeCompare([]byte(secret), []byte(o.clientSecret)) != 1 {
		return notFound(c.doc) // GitHub answers a wrong client with 404
	}
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(c.body, &body) != nil || body.AccessToken == "" {
		return validationFailed(c.doc, fieldError{Resource: "OauthAccess", Field: "access_token", Code: "missing_field"})
	}
	t, ok := o.userTokens[body.AccessToken]
	if !ok || t.refresh {
		return notFound(c.doc)
	}
	t.revoked = true
	if r, ok := o.userTokens[t.pair]; ok {
		r.revoked = true
	}
	return response{status: http.StatusNoContent}
}

// formOf is a form post's fields and the query's: ServeHTTP has read the
// body already (it records it), so it is parsed from the call.
func formOf(r *http.Request) (url.Values, error) {
	form := r.URL.Query()
	c, _ := r.Context().Value(callKey{}).(*call)
	if c == nil {
		return form, nil
	}
	posted, err := url.ParseQuery(string(c.body))
	if err != nil {
		return nil, err
	}
	for k, v := range posted {
		form[k] = v
	}
	return form, nil
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("fakegithub: random: %v", err)) // the OS's randomness failing is not a test's to handle
	}
	return hex.EncodeToString(b)
}
