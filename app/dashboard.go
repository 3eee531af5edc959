package app

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/store"

	"github.com/inspecthq/inspect/app/web"
)

// dashboard is the web dashboard (app/web) over this Service's store and
// intake, when web.public_url is set; nil when it is not. It is built once:
// its permission cache and its token refreshes are the replica's.
func (s *Service) dashboard() (*web.Server, error) {
	s.web.once.Do(func() { s.web.srv, s.web.err = s.newDashboard() })
	return s.web.srv, s.web.err
}

// dashboardOnce holds the Service's one dashboard.
type dashboardOnce struct {
	once sync.Once
	srv  *web.Server
	err  error
}

func (s *Service) newDashboard() (*web.Server, error) {
	if !s.cfg.WebEnabled() {
		return nil, nil
	}
	key, err := s.cfg.WebKey()
	if err != nil {
		return nil, err
	}
	secret, err := s.cfg.WebClientSecret()
	if err != nil {
		return nil, err
	}
	return web.New(web.Options{
		Store: s.store, Commands: s, PublicURL: s.cfg.Web.PublicURL, WebURL: s.cfg.GitHub.WebURL, APIURL: s.cfg.GitHub.APIURL,
		ClientID: s.cfg.Web.ClientID, ClientSecret: secret, Key: key,
		PermissionCache: s.cfg.Web.PermissionCache, SessionLifetime: s.cfg.Web.SessionLifetime, Cost: s.cfg.ModelCost,
		Now: s.clock.Now, Log: s.log.With().Str("component", "dashboard").Logger(),
		// The pages' reads as the user go under that user's outbound
		// discipline, like the PRs opened as them.
		AsUser: s.gh.AsUser,
	})
}

// sessionURL is the session's page on the dashboard, for the check run's
// details_url and the PR body; nil without web.public_url, so no link is
// sent.
func (s *Service) sessionURL(id string) *string {
	d, err := s.dashboard()
	if d == nil || err != nil {
		return nil
	}
	u := d.SessionURL(id)
	return &u
}

// requesterPRs is how the session's pull request is opened as its
// requester (issue 22): with their own user access token when they signed
// in to the dashboard, refreshed if need be, so the PR is theirs (its
// author, needing someone else's approval). ok is false when they have not
// signed in, or their token is gone; the PR is then the App's.
func (s *Service) requesterPRs(ctx context.Context, sess store.Session) (ghwrite.PullRequestOpener, bool) {
	d, err := s.dashboard()
	if d == nil || err != nil || sess.RequesterType != "User" || sess.RequesterID == 0 {
		return nil, false
	}
	token, ok, err := d.UserToken(ctx, sess.RequesterID)
	if err != nil || !ok {
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("reading the requester's dashboard token failed; the App opens the PR")
		}
		return nil, false
	}
	c, err := s.gh.AsUser(ctx, sess.RequesterID, token)
	if err != nil {
		return nil, false
	}
	return c.PullRequests, true
}

// signInHint is the dashboard's sign-in link for a requester who has not
// signed in, for the progress comment; "" otherwise.
func (s *Service) signInHint(ctx context.Context, sess store.Session) string {
	d, err := s.dashboard()
	if d == nil || err != nil || sess.RequesterType != "User" || sess.RequesterID == 0 {
		return ""
	}
	if _, err := s.store.GetWebUser(ctx, sess.RequesterID); errors.Is(err, store.ErrNotFound) {
		return d.SignInURL()
	}
	return ""
}

// ForgetUser implements handlers.UserForgetter: a user who revoked the
// App's authorization has their sealed tokens and sign-ins deleted.
func (s *Service) ForgetUser(ctx context.Context, userID int64) error {
	if err := s.store.ForgetWebUser(ctx, userID); err != nil {
		return err
	}
	s.log.Info().Int64("user_id", userID).Msg("the user revoked the App's authorization; their dashboard tokens are forgotten")
	return nil
}

// CheckDashboard reads what the dashboard needs (its key, the client
// secret), so that `inspect serve` fails at start, not at the first page.
func (s *Service) CheckDashboard() error {
	_, err := s.dashboard()
	return err
}

// dashboardRoutes adds the dashboard's routes. The dashboard is built once,
// and `inspect serve` stops at start when it cannot be (CheckDashboard);
// a Service routed without that check (an embedder, a test) answers the
// pages 503 and logs why, rather than 404 as if there were no dashboard.
func (s *Service) dashboardRoutes(mux *http.ServeMux) {
	d, err := s.dashboard()
	switch {
	case err != nil:
		s.log.Error().Err(err).Msg("the dashboard is not available")
		mux.HandleFunc("/sessions", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the dashboard is not available", http.StatusServiceUnavailable)
		})
	case d != nil:
		d.Routes(mux)
	}
}
