// Package web is the dashboard that `inspect serve` serves when
// web.public_url is set: sign-in with GitHub (the App's user
// authorization, the OAuth web flow with state and PKCE), the sessions a
// signed-in user's own token can read, each session's page, and its
// Cancel and Retry buttons, which go through the same policy as the
// comment commands (decision 0037).
//
// Files: web.go the server, its routes and who is signed in; oauth.go
// sign-in and sign-out; github.go what is asked of GitHub for a user;
// seal.go the key that seals tokens; pages.go the sessions pages;
// snapshots.go the snapshots page, drift.go its default branches' drift;
// screenshots.go the screenshots, base and change (decision 0083);
// start.go the start form; actions.go
// the buttons; templates/ the HTML.
package web

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// Store is what the dashboard reads and writes in the app's store.
type Store interface {
	PutWebUser(ctx context.Context, u store.WebUser) error
	GetWebUser(ctx context.Context, userID int64) (store.WebUser, error)
	ForgetWebUser(ctx context.Context, userID int64) error
	// The refresh of a user's token, once across the fleet (decision 0054).
	ClaimWebUserRefresh(ctx context.Context, userID, version int64, now time.Time, lease time.Duration) (bool, error)
	RefreshedWebUser(ctx context.Context, u store.WebUser, fromVersion int64) (bool, error)
	ReleaseWebUserRefresh(ctx context.Context, userID, version int64) error
	ForgetWebUserVersion(ctx context.Context, userID, version int64) (bool, error)
	CreateWebLogin(ctx context.Context, l store.WebLogin) error
	GetWebLogin(ctx context.Context, idHash string, now time.Time) (store.WebLogin, error)
	DeleteWebLogin(ctx context.Context, idHash string) error
	ListSessions(ctx context.Context, f store.SessionFilter, limit int) ([]store.Session, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	SnapshotRepos(ctx context.Context, ids []int64) ([]store.SnapshotRepo, error)
	ArtifactContent(ctx context.Context, attemptID, name string) (store.Artifact, error)
	// Artifacts and PublicScreenshot are the screenshots' (decision 0083).
	Artifacts(ctx context.Context, attemptID string) ([]store.Artifact, error)
	PublicScreenshot(ctx context.Context, sha256 string) (store.Artifact, error)
	PublishScreenshot(ctx context.Context, sha256, attemptID, name string, now time.Time) error
	OutputAfter(ctx context.Context, sessionID string, afterID int64, limit int) ([]store.OutputChunk, error)
	AttemptDiff(ctx context.Context, attemptID string) (store.Diff, error)
	SessionUsage(ctx context.Context, attemptID string) (store.Usage, error)
	OutcomeGroups(ctx context.Context, by outcomes.Dimension, f store.OutcomeFilter) ([]store.OutcomeGroup, error)
	// SessionTurns and Recorder are the session page's turns and flight
	// recorder (decision 0071).
	SessionTurns(ctx context.Context, sessionID string) ([]session.Turn, error)
	Recorder(ctx context.Context, attemptID string) (string, error)
	GetAttestation(ctx context.Context, attemptID string) (store.Attestation, error)
}

// Commands takes a button's request as the webhook handlers hand over a
// check-run button's: the app's intake (Service.AcceptTrigger), whose
// worker then applies the comment commands' policy.
type Commands interface {
	AcceptTrigger(ctx context.Context, t session.Trigger) error
}

// Options are a Server's parts and settings.
type Options struct {
	Store    Store
	Commands Commands
	// PublicURL is web.public_url; WebURL and APIURL are GitHub's
	// (github.web_url, github.api_url).
	PublicURL, WebURL, APIURL string
	ClientID, ClientSecret    string
	// Key is web.key_path's 32 bytes.
	Key             []byte
	PermissionCache time.Duration
	SessionLifetime time.Duration
	// HTTP is the client for GitHub; nil is http.DefaultClient's
	// transport with a 30 s timeout.
	HTTP *http.Client
	// AsUser makes the REST client for a signed-in user's requests (the
	// server's ghclient.AsUser: the user's own outbound budget, rate-limit
	// holds and conditional-request cache, as for PRs opened as them);
	// nil makes plain clients over HTTP.
	AsUser func(ctx context.Context, userID int64, token string) (*github.Client, error)
	// Cost prices a session's tokens of a model (config.Server.ModelCost);
	// nil shows no cost.
	Cost func(model string, u contract.TokenUsage) (float64, bool)
	// TokenBudget is a session's model token budget (agents.token_budget;
	// 0: none), which the page shows the usage against.
	TokenBudget int64
	Now         func() time.Time
	Log         zerolog.Logger
	Title       string
	// RefreshPoll is how often a request waiting on another replica's
	// refresh of a user's token reads the store again (0: 50 ms).
	RefreshPoll time.Duration
	// MaxLiveStreams is web.max_live_streams: the live streams one user
	// may hold open on this replica (0: defaultMaxLiveStreams).
	MaxLiveStreams int
	// LivePoll is how often a live stream reads the store (0: 200 ms).
	LivePoll time.Duration
	// PublicScreenshots is web.public_screenshot_thumbnails: serve the
	// screenshots published at their digest without sign-in (decision
	// 0083).
	PublicScreenshots bool
}

// defaultMaxLiveStreams is web.max_live_streams's default.
const defaultMaxLiveStreams = 10

// Server is the dashboard.
type Server struct {
	st        Store
	commands  Commands
	gh        userAPI
	seal      *sealer
	publicURL *url.URL
	secure    bool // cookies are Secure: the public URL is https
	permTTL   time.Duration
	lifetime  time.Duration
	now       func() time.Time
	cost      func(model string, u contract.TokenUsage) (float64, bool)
	budget    int64
	log       zerolog.Logger
	pages     *template.Template

	mu       sync.Mutex
	perms    map[int64]cachedRepos // by user id
	liveOpen map[int64]int         // live streams held, by user id (live.go)

	maxLive  int           // web.max_live_streams
	livePoll time.Duration // how often a live stream reads the store

	// refreshPoll is how often a request waiting on another's refresh of
	// a user's token reads the store again (oauth.go).
	refreshPoll time.Duration
	// testHookWaitingForRefresh, when set, is called when a request
	// starts waiting on another's refresh, so tests can line replicas up
	// without sleeping.
	testHookWaitingForRefresh func()

	// driftCache keeps the snapshots page's drift briefly (drift.go).
	driftCache driftCache

	// publicShots serves published screenshots (screenshots.go).
	publicShots bool
}

type cachedRepos struct {
	repos map[int64]repoRef
	until time.Time
}

//go:embed templates/*.html
var templateFiles embed.FS

// New wires a Server.
func New(o Options) (*Server, error) {
	pub, err := url.Parse(strings.TrimSuffix(o.PublicURL, "/"))
	if err != nil || pub.Host == "" {
		return nil, errors.New("web: the public URL is not a URL with a host")
	}
	seal, err := newSealer(o.Key)
	if err != nil {
		return nil, err
	}
	pages, err := template.New("").Funcs(templateFuncs).ParseFS(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	client := o.HTTP
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Server{
		st: o.Store, commands: o.Commands, seal: seal, publicURL: pub, secure: pub.Scheme == "https",
		gh:      userAPI{webURL: o.WebURL, apiURL: o.APIURL, clientID: o.ClientID, clientSecret: o.ClientSecret, http: client, asUser: o.AsUser},
		permTTL: o.PermissionCache, lifetime: o.SessionLifetime, now: now, cost: o.Cost, budget: o.TokenBudget, log: o.Log, pages: pages,
		perms: map[int64]cachedRepos{}, refreshPoll: cmp.Or(o.RefreshPoll, defaultRefreshPoll),
		liveOpen: map[int64]int{}, maxLive: cmp.Or(o.MaxLiveStreams, defaultMaxLiveStreams), livePoll: cmp.Or(o.LivePoll, livePoll),
		publicShots: o.PublicScreenshots,
	}, nil
}

// Routes adds the dashboard's routes to mux.
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/sessions", http.StatusFound)
	})
	mux.HandleFunc("GET /auth/login", s.login)
	mux.HandleFunc("GET /auth/callback", s.callback)
	mux.HandleFunc("POST /auth/logout", s.signedIn(s.logout))
	mux.HandleFunc("GET /sessions", s.signedIn(s.sessionsPage))
	mux.HandleFunc("GET /sessions/new", s.signedIn(s.startForm))
	mux.HandleFunc("POST /sessions/new", s.signedIn(s.start))
	mux.HandleFunc("GET /sessions/{id}", s.signedIn(s.sessionPage))
	s.liveRoutes(mux)
	mux.HandleFunc("POST /sessions/{id}/cancel", s.signedIn(s.button(actionCancel)))
	mux.HandleFunc("POST /sessions/{id}/message", s.signedIn(s.message))
	mux.HandleFunc("POST /sessions/{id}/retry", s.signedIn(s.button(actionRetry)))
	mux.HandleFunc("GET /snapshots", s.signedIn(s.snapshotsPage))
	mux.HandleFunc("GET /outcomes", s.signedIn(s.outcomesPage))
	mux.HandleFunc("GET /sessions/{id}/artifacts/{name...}", s.signedIn(s.artifact))
	mux.HandleFunc("GET /sessions/{id}/base/artifacts/{name...}", s.signedIn(s.baseArtifact))
	if s.publicShots {
		mux.HandleFunc("GET /screenshots/{file}", s.publicScreenshot)
	}
	mux.HandleFunc("GET /sessions/{id}/attempts/{attempt}/provenance", s.signedIn(s.attestation))
}

// SessionURL is a session's page, for links from GitHub (the check run's
// details_url, the PR body).
func (s *Server) SessionURL(id string) string {
	return s.publicURL.String() + "/sessions/" + url.PathEscape(id)
}

const loginCookie = "inspect_login"

// viewer is the signed-in user of a request.
type viewer struct {
	UserID   int64
	Login    string
	CSRF     string
	idHash   string
	token    string
	readable map[int64]repoRef
}

type viewerKey struct{}

func viewerOf(r *http.Request) *viewer { v, _ := r.Context().Value(viewerKey{}).(*viewer); return v }

// signedIn runs h for a signed-in user, whose token is refreshed first if
// it is about to expire; anyone else is sent to sign in (a GET) or
// refused (a POST). A POST must carry the sign-in's CSRF token.
func (s *Server) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.currentViewer(r)
		if err != nil {
			s.log.Error().Err(err).Msg("dashboard: reading the sign-in failed")
			s.fail(w, http.StatusServiceUnavailable, "Inspect could not read your sign-in. Try again.")
			return
		}
		if v == nil {
			if r.Method != http.MethodGet {
				s.fail(w, http.StatusUnauthorized, "Sign in first.")
				return
			}
			http.Redirect(w, r, "/auth/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusFound)
			return
		}
		if r.Method == http.MethodPost {
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(v.CSRF)) != 1 {
				s.fail(w, http.StatusForbidden, "This form has expired or did not come from Inspect's page. Reload the page and try again.")
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	}
}

// currentViewer is the request's signed-in user, or nil.
func (s *Server) currentViewer(r *http.Request) (*viewer, error) {
	c, err := r.Cookie(loginCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	ctx := r.Context()
	hash := loginHash(c.Value)
	l, err := s.st.GetWebLogin(ctx, hash, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, token, ok, err := s.signedInUser(ctx, l.UserID)
	if !ok || err != nil {
		return nil, err
	}
	return &viewer{UserID: u.UserID, Login: u.Login, CSRF: l.CSRF, idHash: hash, token: token}, nil
}

// loginHash is what the store keeps of a sign-in's cookie.
func loginHash(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// readable is the repositories v's own token can read, asked of GitHub at
// failUnreadable answers a page whose viewer's readable repositories
// GitHub did not give (err): every page lists only those, so none can be
// drawn without them.
func (s *Server) failUnreadable(w http.ResponseWriter, v *viewer, err error) {
	s.log.Warn().Err(err).Str("login", v.Login).Msg("dashboard: listing the user's repositories failed")
	s.fail(w, http.StatusBadGateway, "GitHub did not say which repositories you can read. Try again.")
}

// most once per web.permission_cache.
func (s *Server) readable(ctx context.Context, v *viewer) (map[int64]repoRef, error) {
	if v.readable != nil {
		return v.readable, nil
	}
	s.mu.Lock()
	c, ok := s.perms[v.UserID]
	s.mu.Unlock()
	if ok && s.now().Before(c.until) {
		v.readable = c.repos
		return c.repos, nil
	}
	repos, err := s.gh.readableRepos(ctx, v.UserID, v.token)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.perms[v.UserID] = cachedRepos{repos: repos, until: s.now().Add(s.permTTL)}
	s.mu.Unlock()
	v.readable = repos
	return repos, nil
}

// permissionsCached reports whether this replica holds the user's
// repositories, asked less than web.permission_cache before now. A
// sign-out here drops them.
func (s *Server) permissionsCached(userID int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.perms[userID]
	return ok && now.Before(c.until)
}

// forgetPermissions drops a user's cached repositories (sign-out).
func (s *Server) forgetPermissions(userID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.perms, userID)
}

// fail answers a page that says what went wrong, and nothing more.
func (s *Server) fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, status, "error.html", map[string]any{"Status": status, "Message": msg})
}

// render writes a page from its template.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	if err := s.pages.ExecuteTemplate(w, name, data); err != nil {
		s.log.Error().Err(err).Str("template", name).Msg("dashboard: rendering a page failed")
	}
}
