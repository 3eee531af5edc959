// Package turns is the admit_turn work's handler: a message for a running
// session (a `/inspect <message>` or `/inspect stop` comment on the thread
// it answers on, or a message from its dashboard page) becomes a turn of
// it, a refusal, or, when nothing runs that it could steer, a session of
// its own (decisions 0071 and 0072). The engine (package app) wires a
// Handler with what it needs and nothing more (decision 0049).
package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Handler runs admit_turn work. Its fields are all it reaches of the
// engine.
type Handler struct {
	Store Store
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// ThreadFacts reads what policy needs about the trigger's target (a
	// pull request, an issue or a branch) and the sender's role on the repo.
	ThreadFacts func(ctx context.Context, c *github.Client, t session.Trigger) (policy.Target, policy.Role, error)
	// RepoConfig is the session's repo config, read fresh.
	RepoConfig func(ctx context.Context, c *github.Client, sess store.Session) (config.Repo, error)
	// NewSession is the session a request starts (as the webhook makes
	// it): what a message becomes when it steers nothing.
	NewSession func(t session.Trigger) *store.Session
	// BotLogin is the App's bot's login, whose replies the thread finds.
	BotLogin func() string
	// Wake wakes the workers for a new session's preparation.
	Wake func()
	// Now is the clock.
	Now func() time.Time
	// ForkPRAllowed says whether the repository opted in to forks' pull
	// requests (server config).
	ForkPRAllowed func(repoFullName string) bool
	// CommandWord is what a comment starts with to talk to Inspect.
	CommandWord string
	// AllowedBots are the bot logins that may trigger.
	AllowedBots []string
	// Paused is server.paused.
	Paused bool
}

// Store is what the handler reads and writes of the store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	ActiveSessionOn(ctx context.Context, repoID int64, number int) (string, error)
	AddTurn(ctx context.Context, t session.Turn, sourceKey string, max int, now time.Time) (session.Turn, bool, error)
	CreateSessionOnce(ctx context.Context, claimKeys []string, sess *store.Session, work []store.NewWork, now time.Time) (bool, error)
}

// Handle admits one message.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	var t session.Trigger
	if err := json.Unmarshal([]byte(w.Payload), &t); err != nil {
		return fmt.Errorf("decoding turn payload: %w", err)
	}
	stop := t.Command.Sub == policy.Stop
	log := zerolog.Ctx(ctx).With().Int64("comment_id", t.CommentID).Str("sender", t.Sender.Login).Bool("stop", stop).Logger()
	ctx = log.WithContext(ctx)
	c, err := h.Installation(ctx, t.InstallationID)
	if err != nil {
		return err
	}
	replay := w.Attempts > 1
	th := ghwrite.NewThread(c, t.Repo.Owner, t.Repo.Name, t.Number, h.BotLogin())
	if t.Kind == session.KindReviewComment && t.Review != nil {
		th.Review = t.Review.ThreadRoot(t.CommentID)
	}
	// One reply at most, found by its marker on a replay: a reader's
	// message is refused once.
	reply := func(body string) error {
		if !t.Target().HasThread() {
			log.Info().Msg("a message from the dashboard answered on its page only")
			return nil
		}
		_, err := th.PostOnce(ctx, render.ReplyMarker(t), body, replay)
		return err
	}

	var sess store.Session
	switch {
	case t.SessionID != "":
		// From the session's page: that session, whatever else runs.
		if sess, err = h.Store.GetSession(ctx, t.SessionID); err != nil {
			return err
		}
		t.SetTarget(sess.Target())
	default:
		id, err := h.Store.ActiveSessionOn(ctx, t.Repo.ID, t.Number)
		if err != nil {
			return err
		}
		if id != "" {
			if sess, err = h.Store.GetSession(ctx, id); err != nil {
				return err
			}
		}
	}

	var cfg config.Repo
	if sess.ID != "" {
		var cfgErr *config.RepoConfigError
		switch cfg, err = h.RepoConfig(ctx, c, sess); {
		case errors.As(err, &cfgErr):
			// The running session has its config; this one is unreadable
			// now. The message keeps the rule before turns.
			log.Info().Err(err).Msg("repo config unreadable; the message starts a session of its own")
			cfg = config.Repo{Steer: string(session.SteerOff)}
		case err != nil:
			return err
		}
	}
	facts := policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type, AllowedBots: h.AllowedBots,
		ServerPaused: h.Paused, RepoPaused: sess.ID != "" && !cfg.IsEnabled(),
		ForkOptIn: h.ForkPRAllowed(t.Repo.FullName()), Subcommand: t.Command.Sub,
	}
	if facts.Target, facts.SenderRole, err = h.ThreadFacts(ctx, c, t); err != nil {
		return err
	}
	if d := policy.Authorize(facts); !d.Allowed {
		log.Info().Str("reason", string(d.Reason)).Msg("message refused")
		if sess.ID == "" {
			return reply(render.Refusal(d)) // it would have started a session
		}
		return reply(render.SteerRefusal(d))
	}

	if sess.ID != "" && stop && cfg.SteerMode() == session.SteerOff {
		// The running session takes no messages: a stop would wait for
		// nothing. cancel still ends it.
		return reply(render.SteeringOffReply(h.CommandWord))
	}
	if sess.ID == "" || (!stop && cfg.SteerMode() == session.SteerOff) {
		return h.elsewhere(ctx, t, stop, reply)
	}
	turn := session.Turn{SessionID: sess.ID, AuthorLogin: t.Sender.Login, AuthorID: t.Sender.ID, Source: sourceOf(t),
		CommentID: t.CommentID, Message: t.Command.Instructions, Stop: stop}
	if t.Kind == session.KindReviewComment {
		turn.Review = t.Review
	}
	added, fresh, err := h.Store.AddTurn(ctx, turn, sourceKey(t), session.MaxTurnsPerSession, h.Now())
	switch {
	case errors.Is(err, store.ErrSessionEnded):
		// It ended between the look and the turn: what it would have been
		// told starts a session of its own (decision 0072).
		return h.elsewhere(ctx, t, stop, reply)
	case errors.Is(err, store.ErrTooManyTurns):
		return reply(render.TooManyTurnsReply(sess, session.MaxTurnsPerSession, h.CommandWord))
	case err != nil:
		return err
	}
	log.Info().Str("session_id", sess.ID).Int("turn", added.Seq).Bool("new", fresh).Msg("message is a turn of the running session")
	return h.ack(ctx, c, t)
}

// elsewhere is what a message that steers nothing becomes: a stop says
// nothing runs; a request starts a session of its own, which waits for
// the thread's running one as requests did before turns, or continues the
// conversation of the one that ended (decision 0072).
func (h *Handler) elsewhere(ctx context.Context, t session.Trigger, stop bool, reply func(string) error) error {
	if stop {
		return reply(render.NothingToStopReply())
	}
	sess := h.NewSession(t)
	created, err := h.Store.CreateSessionOnce(ctx, []string{"turn:" + t.DeliveryID}, sess, []store.NewWork{{Kind: store.PrepareSession}}, h.Now())
	if err != nil || !created {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("session_id", sess.ID).Msg("message starts a session of its own")
	h.Wake()
	return nil
}

// ack puts render.TurnReaction on the comment that became a turn (the
// page shows the turn from the store).
func (h *Handler) ack(ctx context.Context, c *github.Client, t session.Trigger) error {
	if t.CommentID == 0 {
		return nil
	}
	return ghwrite.ReactWith(ctx, c.Reactions, t.Repo.Owner, t.Repo.Name, t.CommentID, t.Kind == session.KindReviewComment, render.TurnReaction)
}

// sourceOf is where the message came from.
func sourceOf(t session.Trigger) session.TurnSource {
	switch t.Kind {
	case session.KindReviewComment:
		return session.TurnFromReviewComment
	case session.KindDashboard:
		return session.TurnFromDashboard
	}
	return session.TurnFromComment
}

// sourceKey names the message once: its comment (review comments number
// apart from issue comments), or the dashboard post.
func sourceKey(t session.Trigger) string {
	switch t.Kind {
	case session.KindReviewComment:
		return fmt.Sprintf("review-comment:%d", t.CommentID)
	case session.KindDashboard:
		return "dashboard:" + t.DeliveryID
	}
	return fmt.Sprintf("comment:%d", t.CommentID)
}

// ContinueStore is what Continue reads and writes of the store.
type ContinueStore interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	UndeliveredTurns(ctx context.Context, sessionID string) ([]session.Turn, error)
	CreateSessionOnce(ctx context.Context, claimKeys []string, sess *store.Session, work []store.NewWork, now time.Time) (bool, error)
}

// Continuer runs continue_turns work: each request a session ended
// without delivering (it came as the agent finished, or the agent's
// conversation could not be continued) starts a session of its own,
// continuing the conversation (decision 0072), in the order they came; on
// one thread they run one after another, as requests that waited did
// before turns.
type Continuer struct {
	Store ContinueStore
	Wake  func()
	Now   func() time.Time
}

// Handle starts the sessions.
func (h *Continuer) Handle(ctx context.Context, w *store.Work) error {
	ended, err := h.Store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	turns, err := h.Store.UndeliveredTurns(ctx, ended.ID)
	if err != nil {
		return err
	}
	for i, t := range turns {
		next := continuation(ended, t, h.Now().Add(time.Duration(i)*time.Millisecond))
		created, err := h.Store.CreateSessionOnce(ctx, []string{fmt.Sprintf("turn-session:%s:%d", ended.ID, t.Seq)}, next,
			[]store.NewWork{{Kind: store.PrepareSession}}, h.Now())
		if err != nil {
			return err
		}
		if created {
			zerolog.Ctx(ctx).Info().Str("session_id", next.ID).Str("continues", ended.ID).Int("turn", t.Seq).Msg("an undelivered message starts a session of its own")
		}
	}
	h.Wake()
	return nil
}

// continuation is the session an undelivered turn t of ended starts: its
// author's request on the same thread, continuing ended's conversation.
// Its id is the turn's, so a replay makes the same one.
func continuation(ended store.Session, t session.Turn, at time.Time) *store.Session {
	target := ended.Target()
	next := &store.Session{
		ID:     fmt.Sprintf("%s-t%d", ended.ID, t.Seq),
		RepoID: ended.RepoID, RepoOwner: ended.RepoOwner, RepoName: ended.RepoName, InstallationID: ended.InstallationID,
		Number: target.Number(), IsPR: target.IsPullRequest(), TriggerKind: session.KindComment,
		DeliveryID:     fmt.Sprintf("turn:%s:%d", ended.ID, t.Seq),
		RequesterLogin: t.AuthorLogin, RequesterID: t.AuthorID, RequesterType: "User",
		Instructions: t.Message, CreatedAt: at,
		TriggerInfo: store.TriggerInfo{Continues: ended.ID, Branch: target.BranchName()}.Encode(),
	}
	switch {
	case target.IsBranch():
		next.TriggerKind = session.KindDashboard // a branch is only ever asked from the dashboard
	case t.Source == session.TurnFromComment:
		// The comment's 👀 and replies.
		next.CommentID = t.CommentID
	case t.Source == session.TurnFromReviewComment && t.Review != nil:
		// A review comment's session: it answers in the comment's review
		// thread, as one asked there does (sessionFromTrigger). A turn
		// stored before its place was (Review nil) answers on the
		// conversation.
		next.TriggerKind = session.KindReviewComment
		info := next.Info()
		info.Review = &store.ReviewInfo{CommentID: t.CommentID, ReviewComment: *t.Review}
		next.TriggerInfo = info.Encode()
	}
	return next
}
