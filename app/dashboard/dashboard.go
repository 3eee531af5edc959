// Package dashboard is the web dashboard (app/web) as the engine uses it:
// built once, when web.public_url is set, and asked for the session's
// page, the requester's own PR opener and the sign-in hint. Without
// web.public_url every answer is "none", so callers need not ask whether
// there is a dashboard.
//
// It must not import package app: the engine builds one Dashboard in
// NewService, handing it the intake the dashboard's buttons and forms go
// through (web.Commands), and hands it to whoever links to a session.
package dashboard

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/web"
	"github.com/inspecthq/inspect/config"
)

// Options are a Dashboard's parts.
type Options struct {
	// Config is the server's; web.* and github.* are read.
	Config config.Server
	// Store is what the pages read, and the users' sealed tokens
	// (*store.Store).
	Store web.Store
	// Commands is the engine's intake (Service.AcceptTrigger).
	Commands web.Commands
	// AsUser is a client presenting a signed-in user's token, within that
	// user's outbound budget (ghclient.GitHubClients.AsUser).
	AsUser func(ctx context.Context, userID int64, token string) (*github.Client, error)
	// Installation is the installation's client, which asks whether a
	// repository is public (ScreenshotLinks); nil: none is.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// Now is the engine's clock.
	Now func() time.Time
	Log zerolog.Logger
}

// Dashboard is the replica's one dashboard, built on first use: its
// permission cache and its token refreshes are the replica's.
type Dashboard struct {
	o    Options
	once sync.Once
	srv  *web.Server
	err  error
}

// New is a Dashboard over o; nothing is built or read until it is used.
func New(o Options) *Dashboard { return &Dashboard{o: o} }

// Server is the dashboard, nil (without an error) when web.public_url is
// not set.
func (d *Dashboard) Server() (*web.Server, error) {
	d.once.Do(func() { d.srv, d.err = d.build() })
	return d.srv, d.err
}

func (d *Dashboard) build() (*web.Server, error) {
	cfg := d.o.Config
	if !cfg.WebEnabled() {
		return nil, nil
	}
	key, err := cfg.WebKey()
	if err != nil {
		return nil, err
	}
	secret, err := cfg.WebClientSecret()
	if err != nil {
		return nil, err
	}
	return web.New(web.Options{
		Store: d.o.Store, Commands: d.o.Commands, PublicURL: cfg.Web.PublicURL, WebURL: cfg.GitHub.WebURL, APIURL: cfg.GitHub.APIURL,
		ClientID: cfg.Web.ClientID, ClientSecret: secret, Key: key,
		PermissionCache: cfg.Web.PermissionCache, SessionLifetime: cfg.Web.SessionLifetime, Cost: cfg.ModelCost, TokenBudget: cfg.Agents.TokenBudget,
		MaxLiveStreams: cfg.Web.MaxLiveStreams, PublicScreenshots: cfg.Web.PublicScreenshotThumbnails, Now: d.o.Now, Log: d.o.Log.With().Str("component", "dashboard").Logger(),
		// The pages' reads as the user go under that user's outbound
		// discipline, like the PRs opened as them.
		AsUser: d.o.AsUser,
	})
}

// Check reads what the dashboard needs (its key, the client secret), so
// that `inspect serve` fails at start, not at the first page.
func (d *Dashboard) Check() error {
	_, err := d.Server()
	return err
}

// Routes adds the dashboard's routes. `inspect serve` stops at start when
// it cannot be built (Check); one routed without that check (an embedder,
// a test) answers the pages 503 and logs why, rather than 404 as if there
// were no dashboard.
func (d *Dashboard) Routes(mux *http.ServeMux) {
	srv, err := d.Server()
	switch {
	case err != nil:
		d.o.Log.Error().Err(err).Msg("the dashboard is not available")
		mux.HandleFunc("/sessions", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the dashboard is not available", http.StatusServiceUnavailable)
		})
	case srv != nil:
		srv.Routes(mux)
	}
}

// SessionURL is the session's page on the dashboard, for the check run's
// details_url and the PR body; nil without web.public_url, so no link is
// sent.
func (d *Dashboard) SessionURL(id string) *string {
	srv, err := d.Server()
	if srv == nil || err != nil {
		return nil
	}
	u := srv.SessionURL(id)
	return &u
}

// RequesterPRs is how the session's pull request is opened as its
// requester (issue 22): with their own user access token when they signed
// in to the dashboard, refreshed if need be, so the PR is theirs (its
// author, needing someone else's approval). ok is false when they have not
// signed in, or their token is gone; the PR is then the App's.
func (d *Dashboard) RequesterPRs(ctx context.Context, sess store.Session) (ghwrite.PullRequestOpener, bool) {
	srv, err := d.Server()
	if srv == nil || err != nil || sess.RequesterType != "User" || sess.RequesterID == 0 {
		return nil, false
	}
	token, ok, err := srv.UserToken(ctx, sess.RequesterID)
	if err != nil || !ok {
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("reading the requester's dashboard token failed; the App opens the PR")
		}
		return nil, false
	}
	c, err := d.o.AsUser(ctx, sess.RequesterID, token)
	if err != nil {
		return nil, false
	}
	return c.PullRequests, true
}

// SignInHint is the dashboard's sign-in link for a requester who has not
// signed in, for the progress comment; "" otherwise.
func (d *Dashboard) SignInHint(ctx context.Context, sess store.Session) string {
	srv, err := d.Server()
	if srv == nil || err != nil || sess.RequesterType != "User" || sess.RequesterID == 0 {
		return ""
	}
	if _, err := d.o.Store.GetWebUser(ctx, sess.RequesterID); errors.Is(err, store.ErrNotFound) {
		return srv.SignInURL()
	}
	return ""
}

// ForgetUser implements handlers.UserForgetter: a user who revoked the
// App's authorization has their sealed tokens and sign-ins deleted.
func (d *Dashboard) ForgetUser(ctx context.Context, userID int64) error {
	if err := d.o.Store.ForgetWebUser(ctx, userID); err != nil {
		return err
	}
	d.o.Log.Info().Int64("user_id", userID).Msg("the user revoked the App's authorization; their dashboard tokens are forgotten")
	return nil
}
