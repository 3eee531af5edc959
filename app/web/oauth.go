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
	"unicode"
	"unicode/utf8"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/retryafter"
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

// localPath is next when it is a path on this site, else "/sessions"
// (decision 0060). The class it closes is the open redirect: a next that
// a browser reads as another origin once it has stripped or decoded
// something. WHATWG URL parsing drops ASCII tab and newline anywhere and
// reads a backslash as "/", so "/<tab>/evil.example" is "//evil.example" to a
// browser; a proxy or a later decoding may undo an escape. So next must
// parse as a path (no scheme, no host, no user), and neither it nor any
// decoding of it may start with "//" or hold a control, space, format
// character or backslash.
func localPath(next string) string {
	if !isLocalPath(next) {
		return "/sessions"
	}
	return next
}

// maxNextDecodings bounds the decodings of next that are checked; a next
// still encoded after them is no page of this site.
const maxNextDecodings = 4

func isLocalPath(next string) bool {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	for range maxNextDecodings {
		if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || !plainPathText(next) {
			return false
		}
		decoded, err := url.PathUnescape(next)
		if err != nil {
			return false
		}
		if decoded == next {
			return true
		}
		next = decoded
	}
	return false
}

// plainPathText reports whether s is valid UTF-8 with no control, space or
// format character (zero-width, bidi override) and no backslash.
func plainPathText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\\' || unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
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

// keepTokens seals a sign-in's grant into the store, as the user's tokens
// from now on.
func (s *Server) keepTokens(ctx context.Context, userID int64, login string, g grant) error {
	u, err := s.sealGrant(userID, login, g)
	if err != nil {
		return err
	}
	return s.st.PutWebUser(ctx, u)
}

// sealGrant is a grant's tokens as the store keeps them. A grant without
// expires_in is of an App whose user tokens do not expire: its token is
// kept with no expiry, and there is no refresh token.
func (s *Server) sealGrant(userID int64, login string, g grant) (store.WebUser, error) {
	access, err := s.seal.seal(fmt.Sprintf("token:%d", userID), []byte(g.AccessToken))
	if err != nil {
		return store.WebUser{}, err
	}
	refresh, err := s.seal.seal(fmt.Sprintf("refresh:%d", userID), []byte(g.RefreshToken))
	if err != nil {
		return store.WebUser{}, err
	}
	now := s.now()
	return store.WebUser{UserID: userID, Login: login, TokenSealed: access, RefreshSealed: refresh,
		ExpiresAt: expiry(now, g.ExpiresIn), RefreshExpiresAt: expiry(now, g.RefreshTokenExpiresIn), UpdatedAt: now}, nil
}

// Refreshing a user's token across replicas (decision 0054).
const (
	// refreshLease is how long a claim on a user's refresh lasts: longer
	// than the token endpoint may take (the client's 30 s timeout), so a
	// claim never lapses while its refresh is in flight; a replica that
	// died holding one delays the user's next refresh by at most this.
	refreshLease = 2 * time.Minute
	// defaultRefreshPoll is how often a request waiting on another's
	// refresh reads the store again.
	defaultRefreshPoll = 50 * time.Millisecond
)

// errSignedOut is a user whose tokens GitHub will no longer refresh: their
// refresh token was refused (spent elsewhere long ago, expired, or the
// authorization revoked) or has expired. They have been forgotten.
var errSignedOut = errors.New("the user's GitHub authorization can no longer be refreshed")

// userToken is u's access token, refreshed first when it has expired
// (user access tokens last eight hours; each refresh token is good once,
// and once it is used the old pair stops working).
//
// Every replica may serve the user at once (a page, its live stream, a
// report opening a PR), so the refresh is claimed in the store: one
// request refreshes, the others wait for its tokens. Only a definitive
// refusal forgets the user (errSignedOut); GitHub not answering, or
// answering 5xx, leaves their tokens for the next request to refresh.
func (s *Server) userToken(ctx context.Context, u store.WebUser) (string, error) {
	waited := false
	for {
		now := s.now()
		if u.ExpiresAt.IsZero() || now.Before(u.ExpiresAt) {
			return s.openToken(u)
		}
		refresh, err := s.seal.open(fmt.Sprintf("refresh:%d", u.UserID), u.RefreshSealed)
		if err != nil {
			return "", err
		}
		if len(refresh) == 0 {
			// A token of an App whose user tokens do not expire, kept
			// before its missing expiry was read as "never": it works
			// until it is revoked.
			return s.openToken(u)
		}
		if !u.RefreshExpiresAt.IsZero() && !now.Before(u.RefreshExpiresAt) {
			if again, err := s.forget(ctx, u, "its refresh token has expired"); again || err != nil {
				if u, err = s.reread(ctx, u.UserID, err); err != nil {
					return "", err
				}
				continue
			}
			return "", errSignedOut
		}
		claimed, err := s.st.ClaimWebUserRefresh(ctx, u.UserID, u.Version, now, refreshLease)
		if err != nil {
			return "", err
		}
		if !claimed {
			fresh, err := s.reread(ctx, u.UserID, nil)
			if err != nil {
				return "", err
			}
			if fresh.Version == u.Version {
				// Another request, here or on another replica, is
				// refreshing them: wait for its tokens.
				if !waited && s.testHookWaitingForRefresh != nil {
					s.testHookWaitingForRefresh()
				}
				waited = true
				if err := retryafter.Sleep(ctx, s.refreshPoll); err != nil {
					return "", err
				}
				if fresh, err = s.reread(ctx, u.UserID, nil); err != nil {
					return "", err
				}
			}
			u = fresh
			continue
		}
		token, again, err := s.refresh(ctx, u, string(refresh))
		if !again {
			return token, err
		}
		if u, err = s.reread(ctx, u.UserID, nil); err != nil {
			return "", err
		}
	}
}

// openToken is u's access token in the clear.
func (s *Server) openToken(u store.WebUser) (string, error) {
	plain, err := s.seal.open(fmt.Sprintf("token:%d", u.UserID), u.TokenSealed)
	return string(plain), err
}

// reread reads the user's tokens again (after err, when that is nil): a
// user who is gone meanwhile was signed out by someone else.
func (s *Server) reread(ctx context.Context, userID int64, err error) (store.WebUser, error) {
	if err != nil {
		return store.WebUser{}, err
	}
	u, err := s.st.GetWebUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return store.WebUser{}, errSignedOut
	}
	return u, err
}

// refresh spends u's refresh token, which this request has claimed.
// again is true when the user's tokens changed while it did (another
// replica refreshed them, or they signed in again): read them again.
func (s *Server) refresh(ctx context.Context, u store.WebUser, refreshToken string) (token string, again bool, err error) {
	g, err := s.gh.exchange(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
	switch {
	case isBadRefreshToken(err):
		// Another replica may have spent the token (a claim that lapsed)
		// and stored its pair: the user is forgotten only if the store
		// still holds the version this request read (one conditional
		// delete, the store read again and acted on at once).
		if err := s.forgetOr(ctx, u, err); err != nil {
			return "", false, err
		}
		return "", true, nil // changed meanwhile: read the new pair
	case err != nil:
		// GitHub did not answer, answered 5xx, or refused the App's own
		// credentials: nothing says the user's tokens are bad. They are
		// kept, and the claim let go, so the next request tries again.
		if rerr := s.st.ReleaseWebUserRefresh(ctx, u.UserID, u.Version); rerr != nil {
			s.log.Warn().Err(rerr).Int64("user_id", u.UserID).Msg("dashboard: letting go of a failed refresh's claim failed; it lapses on its own")
		}
		return "", false, fmt.Errorf("refreshing the user's token: %w", err)
	}
	fresh, err := s.sealGrant(u.UserID, u.Login, g)
	if err != nil {
		return "", false, err
	}
	written, err := s.st.RefreshedWebUser(ctx, fresh, u.Version)
	switch {
	case err != nil:
		// The old pair is spent at GitHub and the new one is not kept:
		// this request still has its token, and the next refresh will
		// be refused and sign the user out.
		s.log.Error().Err(err).Str("login", u.Login).Msg("dashboard: keeping the user's refreshed token failed")
	case !written:
		// Signed in again, or out, meanwhile: those tokens win; this
		// request's token works all the same.
		s.log.Info().Str("login", u.Login).Msg("dashboard: the user's tokens changed during a refresh; the refreshed pair is not kept")
	}
	return g.AccessToken, false, nil
}

// forgetOr forgets u after GitHub refused its refresh token (refusal),
// unless their tokens changed meanwhile; errSignedOut when forgotten.
func (s *Server) forgetOr(ctx context.Context, u store.WebUser, refusal error) error {
	again, err := s.forget(ctx, u, refusal.Error())
	switch {
	case err != nil:
		return err
	case again:
		return nil
	}
	return errSignedOut
}

// forget forgets the user whose tokens of u's version GitHub will no
// longer refresh (why), and every sign-in of theirs. again is true when
// their tokens changed meanwhile and nothing was forgotten.
func (s *Server) forget(ctx context.Context, u store.WebUser, why string) (again bool, err error) {
	forgot, err := s.st.ForgetWebUserVersion(ctx, u.UserID, u.Version)
	if err != nil {
		return false, err
	}
	if forgot {
		s.forgetPermissions(u.UserID)
		s.log.Info().Str("login", u.Login).Str("why", why).Msg("dashboard: the user's token can no longer be refreshed; signed out")
	}
	return !forgot, nil
}

// UserToken is the signed-in user's access token, refreshed when it has
// expired, for acting as them on GitHub (opening a session's PR); ok is
// false when they have not signed in, or their token could no longer be
// refreshed (they are then forgotten, and signed out). An error (GitHub
// or the store not answering) leaves them signed in.
func (s *Server) UserToken(ctx context.Context, userID int64) (token string, ok bool, err error) {
	_, token, ok, err = s.signedInUser(ctx, userID)
	return token, ok, err
}

// signedInUser is the user's row and access token, refreshed when it has
// expired; ok is false when they have none, or when GitHub refused to
// refresh it, in which case they have been forgotten.
func (s *Server) signedInUser(ctx context.Context, userID int64) (u store.WebUser, token string, ok bool, err error) {
	u, err = s.st.GetWebUser(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return store.WebUser{}, "", false, nil // signed out, or the authorization was revoked
	}
	if err != nil {
		return store.WebUser{}, "", false, err
	}
	token, err = s.userToken(ctx, u)
	switch {
	case errors.Is(err, errSignedOut):
		return store.WebUser{}, "", false, nil
	case err != nil:
		return store.WebUser{}, "", false, err
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
