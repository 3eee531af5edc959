package app

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/inspecthq/inspect/app/web"
)

// dashboard is the web dashboard (app/web) over this Service's store and
// intake, when web.public_url is set; nil when it is not.
func (s *Service) dashboard() (*web.Server, error) {
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
		PermissionCache: s.cfg.Web.PermissionCache, SessionLifetime: s.cfg.Web.SessionLifetime,
		Now: s.clock.Now, Log: s.log.With().Str("component", "dashboard").Logger(),
	})
}

// sessionURL is the session's page on the dashboard, for the check run's
// details_url and the PR body; nil without web.public_url, so no link is
// sent.
func (s *Service) sessionURL(id string) *string {
	if !s.cfg.WebEnabled() {
		return nil
	}
	u := strings.TrimSuffix(s.cfg.Web.PublicURL, "/") + "/sessions/" + url.PathEscape(id)
	return &u
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

// dashboardRoutes adds the dashboard's routes, or, when its files cannot be
// read (CheckDashboard passed at start), answers its pages 503.
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
