package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// Sign-in is GitHub's web flow for the App's user authorization: the
// browser goes to GitHub with a state and a PKCE challenge, comes back to
// /auth/callback with a code, and the code and the challenge's verifier
// are exchanged for the user's tokens. The state and the verifier travel
// in a short-lived cookie sealed with the server's key, so any replica
// can finish a flow that another began.

const (
	flowCookie   = "inspect_oauth"
	flowLifetime = 10 * time.Minute // GitHub's codes live ten minutes too
	callbackPath = "/auth/callback"
)

// flowState is what the flow's cookie carries.
type flowState struct {
	State    string    `json:"state"`
	Verifier string    `json:"verifier"`
	Next     string    `json:"next"`
	Expires  time.Time `json:"expires"`
}

func random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("web: the system's randomness failed: %v", err)) // nothing sound can go on without it
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) cookie(name, value, path string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode}
	if maxAge < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(maxAge.Seconds())
	}
	return c
}

// localPath keeps next to a path on this server: never another host,
// never a scheme-relative "//host".
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/sessions"
	}
	return next
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	st := flowState{State: random(24), Verifier: random(32), Next: localPath(r.URL.Query().Get("next")), Expires: s.now().Add(flowLifetime)}
	data, err := json.Marshal(st)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Inspect could not start the sign-in.")
		return
	}
	sealed, err := s.seal.seal(flowCookie, data)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "Inspect could not start the sign-in.")
		return
	}
	http.SetCookie(w, s.cookie(flowCookie, sealed, "/auth", flowLifetime))
	sum := sha256.Sum256([]byte(st.Verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	http.Redirect(w, r, s.gh.authorizeURL(s.publicURL.String()+callbackPath, st.State, challenge), http.StatusFound)
}

func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := r.Cookie(flowCookie)
	var st flowState
	if err == nil {
		var plain []byte
		if plain, err = s.seal.open(flowCookie, c.Value); err == nil {
			err = json.Unmarshal(plain, &st)
		}
	}
	q := r.URL.Query()
	switch {
	case err != nil || !s.now().Before(st.Expires):
		s.fail(w, http.StatusBadRequest, "This sign-in has expired or was started in another browser. Sign in again.")
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1:
		s.fail(w, http.StatusBadRequest, "This sign-in's state does not match the one Inspect sent. Sign in again.")
		return
	case q.Get("error") != "":
		s.fail(w, http.StatusForbidden, "GitHub did not authorize the sign-in.")
		return
	}
	http.SetCookie(w, s.cookie(flowCookie, "", "/auth", -1))
	g, err := s.gh.exchange(ctx, url.Values{"code": {q.Get("code")}, "code_verifier": {st.Verifier}, "redirect_uri": {s.publicURL.String() + callbackPath}})
	if err != nil {
		s.log.Warn().Err(err).Msg("dashboard: the sign-in's code exchange failed")
		s.fail(w, http.StatusBadGateway, "GitHub did not complete the sign-in. Sign in again.")
		return
	}
	me, err := s.gh.me(ctx, g.AccessToken)
	if err != nil || me.GetID() == 0 {
		s.log.Warn().Err(err).Msg("dashboard: reading the signed-in user failed")
		s.fail(w, http.StatusBadGateway, "GitHub did not say who signed in. Sign in again.")
		return
	}
	if err := s.keepTokens(ctx, me.GetID(), me.GetLogin(), g); err != nil {
		s.log.Error().Err(err).Msg("dashboard: keeping the user's tokens failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not keep your sign-in. Try again.")
		return
	}
	secret := random(32)
	now := s.now()
	if err := s.st.CreateWebLogin(ctx, store.WebLogin{IDHash: loginHash(secret), UserID: me.GetID(), CSRF: random(24),
		CreatedAt: now, ExpiresAt: now.Add(s.lifetime)}); err != nil {
		s.log.Error().Err(err).Msg("dashboard: storing the sign-in failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not keep your sign-in. Try again.")
		return
	}
	s.forgetPermissions(me.GetID())
	http.SetCookie(w, s.cookie(loginCookie, secret, "/", s.lifetime))
	s.log.Info().Str("login", me.GetLogin()).Int64("user_id", me.GetID()).Msg("dashboard: signed in")
	http.Redirect(w, r, localPath(st.Next), http.StatusFound)
}

// keepTokens seals a grant's tokens into the store.
func (s *Server) keepTokens(ctx context.Context, userID int64, login string, g grant) error {
	access, err := s.seal.seal(fmt.Sprintf("token:%d", userID), []byte(g.AccessToken))
	if err != nil {
		return err
	}
	refresh, err := s.seal.seal(fmt.Sprintf("refresh:%d", userID), []byte(g.RefreshToken))
	if err != nil {
		return err
	}
	now := s.now()
	rexp := expiry(now, g.RefreshTokenExpiresIn)
	if g.RefreshToken == "" {
		rexp = now // an App with expiring tokens turned off: nothing to refresh with
	}
	return s.st.PutWebUser(ctx, store.WebUser{UserID: userID, Login: login, TokenSealed: access, RefreshSealed: refresh,
		ExpiresAt: expiry(now, g.ExpiresIn), RefreshExpiresAt: rexp, UpdatedAt: now})
}

// userToken is u's access token, refreshed first when it has expired
// (user access tokens last eight hours; each refresh token is good once).
func (s *Server) userToken(ctx context.Context, u store.WebUser) (string, error) {
	now := s.now()
	if now.Before(u.ExpiresAt) {
		plain, err := s.seal.open(fmt.Sprintf("token:%d", u.UserID), u.TokenSealed)
		return string(plain), err
	}
	// A refresh token is good once: two requests of one user (a page and
	// its live stream) must not both spend it, or the second signs the
	// user out. One refresh at a time in this process, and the store read
	// again under the lock, where another may have just refreshed.
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if fresh, err := s.st.GetWebUser(ctx, u.UserID); err == nil {
		if now.Before(fresh.ExpiresAt) {
			plain, err := s.seal.open(fmt.Sprintf("token:%d", u.UserID), fresh.TokenSealed)
			return string(plain), err
		}
		u = fresh
	}
	if !now.Before(u.RefreshExpiresAt) {
		return "", fmt.Errorf("the refresh token has expired")
	}
	refresh, err := s.seal.open(fmt.Sprintf("refresh:%d", u.UserID), u.RefreshSealed)
	if err != nil {
		return "", err
	}
	g, err := s.gh.exchange(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {string(refresh)}})
	if err != nil {
		return "", err
	}
	if err := s.keepTokens(ctx, u.UserID, u.Login, g); err != nil {
		return "", err
	}
	return g.AccessToken, nil
}

// UserToken is the signed-in user's access token, refreshed when it has
// expired, for acting as them on GitHub (opening a session's PR); ok is
// false when they have not signed in, or their token could no longer be
// refreshed (they are then forgotten, and signed out).
func (s *Server) UserToken(ctx context.Context, userID int64) (token string, ok bool, err error) {
	_, token, ok, err = s.signedInUser(ctx, userID)
	return token, ok, err
}

// signedInUser is the user's row and access token, refreshed when it has
// expired; ok is false when they have none, or when it could not be
// refreshed, in which case they are forgotten.
func (s *Server) signedInUser(ctx context.Context, userID int64) (u store.WebUser, token string, ok bool, err error) {
	u, err = s.st.GetWebUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return store.WebUser{}, "", false, nil // signed out, or the authorization was revoked
	}
	if err != nil {
		return store.WebUser{}, "", false, err
	}
	token, err = s.userToken(ctx, u)
	if err != nil {
		s.log.Info().Err(err).Str("login", u.Login).Msg("dashboard: the user's token could not be refreshed; signed out")
		return store.WebUser{}, "", false, s.st.ForgetWebUser(ctx, u.UserID)
	}
	return u, token, true, nil
}

// SignInURL is where a requester signs in.
func (s *Server) SignInURL() string { return s.publicURL.String() + "/auth/login" }

// logout ends every sign-in of the user and deletes their token at GitHub,
// so that nothing Inspect held for them still works.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	ctx := r.Context()
	if err := s.gh.revoke(ctx, v.token); err != nil {
		// The token is forgotten here all the same; it expires within
		// eight hours at GitHub.
		s.log.Warn().Err(err).Str("login", v.Login).Msg("dashboard: deleting the user's token at GitHub failed")
	}
	if err := s.st.ForgetWebUser(ctx, v.UserID); err != nil {
		s.log.Error().Err(err).Msg("dashboard: forgetting the user failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not sign you out. Try again.")
		return
	}
	s.forgetPermissions(v.UserID)
	http.SetCookie(w, s.cookie(loginCookie, "", "/", -1))
	s.log.Info().Str("login", v.Login).Msg("dashboard: signed out")
	s.render(w, http.StatusOK, "error.html", map[string]any{"Status": http.StatusOK, "Message": "You are signed out."})
}
