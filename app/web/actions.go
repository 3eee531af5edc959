package web

import (
	"net/http"
	"net/url"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// The buttons on a session's page. Each becomes the trigger a check run's
// button would (session.KindCheckAction, the session's own), with the
// signed-in user as its sender: the worker reads their permission on the
// repository and applies the comment commands' policy (app/commands),
// and the reply goes to the session's thread, as for a comment.
const (
	actionCancel = "cancel"
	actionRetry  = "retry"
)

func (s *Server) button(action string) http.HandlerFunc {
	sub := policy.Cancel
	if action == actionRetry {
		sub = policy.Retry
	}
	return func(w http.ResponseWriter, r *http.Request) {
		v := viewerOf(r)
		sess, ref, ok := s.viewableSession(w, r, v)
		if !ok {
			return
		}
		t := session.Trigger{
			DeliveryID: "web-" + random(12), Event: "dashboard", Kind: session.KindCheckAction,
			Repo:           session.Repo{ID: sess.RepoID, Owner: ref.Owner, Name: ref.Name},
			InstallationID: sess.InstallationID,
			Sender:         session.Sender{Login: v.Login, ID: v.UserID, Type: "User"},
			Command:        policy.Parsed{Kind: policy.Command, Sub: sub},
			SessionID:      sess.ID,
		}
		t.SetTarget(sess.Target())
		log := s.log.With().Str("session_id", sess.ID).Str("delivery_id", t.DeliveryID).Str("login", v.Login).Str("action", action).Logger()
		if err := s.commands.AcceptTrigger(log.WithContext(r.Context()), t); err != nil {
			log.Error().Err(err).Msg("dashboard: accepting a button failed")
			s.fail(w, http.StatusServiceUnavailable, "Inspect could not take the request. Try again.")
			return
		}
		zerolog.Ctx(log.WithContext(r.Context())).Info().Msg("dashboard: button accepted")
		http.Redirect(w, r, "/sessions/"+url.PathEscape(sess.ID)+"?asked="+action, http.StatusSeeOther)
	}
}
