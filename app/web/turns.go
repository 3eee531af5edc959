package web

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// maxMessageForm caps a message post's body (the text's own cap is
// policy.MaxInstructionBytes, applied as a comment's is).
const maxMessageForm = 64 << 10

// message takes a message for a session from its page (decision 0071): a
// dashboard trigger naming the session, which the app's intake queues as
// a turn and its worker admits as it does a comment's (the sender's role,
// the target, the pauses). The page then lists it.
func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	sess, ref, ok := s.viewableSession(w, r, v)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxMessageForm)
	parsed := policy.ParseRequest(r.PostFormValue("message"))
	if parsed.Kind != policy.Command || !sess.Active() {
		http.Redirect(w, r, "/sessions/"+url.PathEscape(sess.ID), http.StatusSeeOther)
		return
	}
	t := session.Trigger{
		DeliveryID: "web-" + random(12), Event: "dashboard", Kind: session.KindDashboard,
		Repo:           session.Repo{ID: sess.RepoID, Owner: ref.Owner, Name: ref.Name},
		InstallationID: sess.InstallationID,
		Sender:         session.Sender{Login: v.Login, ID: v.UserID, Type: "User"},
		Command:        parsed,
		SessionID:      sess.ID,
	}
	t.SetTarget(sess.Target())
	log := s.log.With().Str("session_id", sess.ID).Str("delivery_id", t.DeliveryID).Str("login", v.Login).Logger()
	if err := s.commands.AcceptTrigger(log.WithContext(r.Context()), t); err != nil {
		log.Error().Err(err).Msg("dashboard: accepting a message failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not take the message. Try again.")
		return
	}
	log.Info().Msg("dashboard: message accepted")
	http.Redirect(w, r, "/sessions/"+url.PathEscape(sess.ID)+"?asked=message", http.StatusSeeOther)
}

// turnView is one turn as the page lists it.
type turnView struct {
	session.Turn
	// Outcome says what came of it, in words.
	Outcome string
}

// recorderView is the flight recorder as the page shows it.
type recorderView struct {
	contract.Recorder
}

// turnsView adds the session's turns and its attempt's flight recorder
// to view, best effort: the rest of the page is worth showing without.
func (s *Server) turnsView(r *http.Request, view *sessionView) {
	turns, err := s.st.SessionTurns(r.Context(), view.ID)
	if err != nil {
		s.log.Warn().Err(err).Str("session_id", view.ID).Msg("dashboard: reading the turns failed")
	}
	view.Turns = append(view.Turns, turnView{Turn: session.RequestTurn(view.ID, view.RequesterLogin, view.RequesterID, view.CommentID, view.Instructions, view.CreatedAt),
		Outcome: string(view.Outcome)})
	for _, t := range turns {
		view.Turns = append(view.Turns, turnView{Turn: t, Outcome: turnOutcome(t)})
	}
	if view.AttemptID == "" {
		return
	}
	raw, err := s.st.Recorder(r.Context(), view.AttemptID)
	if err != nil || raw == "" {
		return
	}
	var rec contract.Recorder
	if json.Unmarshal([]byte(raw), &rec) == nil {
		view.Recorder = &recorderView{Recorder: rec}
	}
}

// turnOutcome says what came of a turn (render.TurnOutcome's words, kept
// here: the page does not reach app/render).
func turnOutcome(t session.Turn) string {
	switch t.State {
	case session.TurnPending:
		return "waiting for the agent"
	case session.TurnDelivered:
		return "with the agent"
	}
	if t.Outcome == store.TurnUndelivered {
		return "not delivered: it runs as a session of its own"
	}
	return t.Outcome
}
