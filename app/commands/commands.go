// Package commands is the run_command work's handler: `status`, `cancel`
// and `retry`, from a comment, a label taken off, or a button on
// Inspect's check run (the dashboard's buttons are such buttons). The
// engine (package app) wires a Handler with what it needs and nothing
// more (decision 0049).
package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/transition"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Handler runs run_command work. Its fields are all it reaches of the
// engine.
type Handler struct {
	// Store reads the thread's sessions, ends the cancelled ones and
	// creates a retry's.
	Store Store
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// ThreadFacts reads what policy needs about the trigger's target (a
	// pull request, an issue or a branch) and the sender's role on the repo.
	ThreadFacts func(ctx context.Context, c *github.Client, t session.Trigger) (policy.Target, policy.Role, error)
	// StopAttempt stops a cancelled session's run and revokes its tokens.
	StopAttempt func(ctx context.Context, attemptID string)
	// BotLogin is the App's bot's login, whose replies the thread finds.
	BotLogin func() string
	// NewID is a new session's id.
	NewID func() string
	// Wake wakes the workers for a retry's preparation.
	Wake func()
	// Now is the clock.
	Now func() time.Time
	// ForkPRAllowed says whether the repository opted in to forks' pull
	// requests (server config).
	ForkPRAllowed func(repoFullName string) bool
	// CommandWord is what a comment starts with to talk to Inspect.
	CommandWord string
	// AllowedBots are the bot logins that may trigger (policy.allowed_bots).
	AllowedBots []string
	// Paused is server.paused.
	Paused bool
	// UnaskedReasons are the reasons of sessions nobody asked for (a label
	// the fresh config does not name, or one no longer on the issue),
	// which status leaves out.
	UnaskedReasons []string
}

// Store is what the handler reads and writes of the store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	SessionsForTarget(ctx context.Context, repoID int64, number int, limit int) ([]store.Session, error)
	MutateSession(ctx context.Context, id string, now time.Time, fn func(*store.Session) error, then ...store.NewWork) (store.Session, error)
	CreateSessionOnce(ctx context.Context, claimKeys []string, sess *store.Session, work []store.NewWork, now time.Time) (bool, error)
}

// Handle handles `status`, `cancel` and `retry`, from a comment, a
// label taken off, or a button on Inspect's check run.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	var t session.Trigger
	if err := json.Unmarshal([]byte(w.Payload), &t); err != nil {
		return fmt.Errorf("decoding command payload: %w", err)
	}
	log := zerolog.Ctx(ctx).With().Str("subcommand", string(t.Command.Sub)).Int64("comment_id", t.CommentID).Str("trigger", string(t.Kind)).Logger()
	ctx = log.WithContext(ctx)
	if t.Kind == session.KindCheckAction {
		// The button's session says which thread this is about.
		sess, err := h.Store.GetSession(ctx, t.SessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sess.RepoID != t.Repo.ID) {
			log.Warn().Str("session_id", t.SessionID).Msg("check-run button for a session this server does not know; ignored")
			return nil
		}
		if err != nil {
			return err
		}
		t.SetTarget(sess.Target())
	}
	c, err := h.Installation(ctx, t.InstallationID)
	if err != nil {
		return err
	}
	replay := w.Attempts > 1
	th := ghwrite.NewThread(c, t.Repo.Owner, t.Repo.Name, t.Number, h.BotLogin())
	if t.Kind == session.KindReviewComment && t.Review != nil {
		th.Review = t.Review.ThreadRoot(t.CommentID)
	}
	reply := func(body string) error {
		if !t.Target().HasThread() {
			// A branch session's button: there is no thread to answer on;
			// what it did shows on the session's page (decision 0009).
			log.Info().Str("session_id", t.SessionID).Msg("branch session's command answered on its page only")
			return nil
		}
		_, err := th.PostOnce(ctx, render.ReplyMarker(t), render.WithIgnoredNote(body, t.Command.Ignored, h.CommandWord), replay)
		return err
	}
	if t.Kind == session.KindUnlabel {
		// Taking the label off says "stop" only while its session runs
		// (Inspect takes it off itself when a session ends; that event is
		// our own and never gets here).
		sessions, err := h.cancellable(ctx, t)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(sessions, store.Session.Active) {
			return nil // nothing of its runs (a refusal, or it ended): nothing to say
		}
	}
	facts, err := h.commandFacts(ctx, c, t)
	if err != nil {
		return err
	}
	if d := policy.Authorize(facts); !d.Allowed {
		return reply(render.Refusal(d))
	}
	switch t.Command.Sub {
	case policy.Status:
		return h.status(ctx, t, reply)
	case policy.Cancel:
		return h.cancel(ctx, t, reply)
	case policy.Retry:
		return h.retry(ctx, t, reply)
	}
	return reply(render.HelpText(h.CommandWord))
}

// cancellable lists the sessions a cancel trigger may stop: a button's
// own session, a removed label's sessions, or every session on the thread.
func (h *Handler) cancellable(ctx context.Context, t session.Trigger) ([]store.Session, error) {
	sessions, err := h.sessionsForTarget(ctx, t, 50)
	if err != nil {
		return nil, err
	}
	var out []store.Session
	for _, sess := range sessions {
		switch t.Kind {
		case session.KindCheckAction:
			if sess.ID != t.SessionID {
				continue
			}
		case session.KindUnlabel:
			// Only what the label started before it was taken off: a
			// session from the label put back since is not this removal's.
			if !strings.EqualFold(sess.Info().Label, t.Label) || (!t.AcceptedAt.IsZero() && sess.CreatedAt.After(t.AcceptedAt)) {
				continue
			}
		}
		out = append(out, sess)
	}
	return out, nil
}

// sessionsForTarget lists the newest sessions on the trigger's issue or
// pull request, or on its branch: branch sessions all have Number 0, so
// only those on the same branch count.
func (h *Handler) sessionsForTarget(ctx context.Context, t session.Trigger, limit int) ([]store.Session, error) {
	sessions, err := h.Store.SessionsForTarget(ctx, t.Repo.ID, t.Number, limit)
	if err != nil {
		return nil, err
	}
	branch := t.Target().BranchName()
	return slices.DeleteFunc(sessions, func(sess store.Session) bool { return sess.Target().BranchName() != branch }), nil
}

// commandFacts gathers what policy needs. Status needs no role (anyone who
// can read the thread may ask), so it costs no permission lookup.
func (h *Handler) commandFacts(ctx context.Context, c *github.Client, t session.Trigger) (policy.Facts, error) {
	f := policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type, AllowedBots: h.AllowedBots,
		ServerPaused: h.Paused, ForkOptIn: h.ForkPRAllowed(t.Repo.FullName()), Subcommand: t.Command.Sub,
	}
	if t.Command.Sub == policy.Status {
		return f, nil
	}
	// On a branch, whether it still exists does not matter to a cancel or
	// a retry: the retry's preparation reads it again.
	var err error
	f.Target, f.SenderRole, err = h.ThreadFacts(ctx, c, t)
	return f, err
}

func (h *Handler) status(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := h.sessionsForTarget(ctx, t, 10)
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		return reply(render.NoSessionsReply(h.CommandWord))
	}
	var rows []render.StatusRow
	for _, sess := range sessions {
		if slices.Contains(h.UnaskedReasons, sess.Reason) {
			continue // nobody asked: a label the fresh config does not name, or one no longer on the issue
		}
		row := render.StatusRow{Session: sess}
		if sess.Active() && sess.AttemptID != "" {
			// The supervisor's latest progress report, so a long run shows
			// where it is.
			if a, err := h.Store.GetAttempt(ctx, sess.AttemptID); err == nil {
				row.Progress = a.Progress
			}
		}
		rows = append(rows, row)
	}
	return reply(render.StatusListing(rows))
}

func (h *Handler) cancel(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := h.cancellable(ctx, t)
	if err != nil {
		return err
	}
	var cancelled []string
	for _, sess := range sessions {
		if !sess.Active() {
			continue
		}
		ended, err := h.Store.MutateSession(ctx, sess.ID, h.Now(), func(x *store.Session) error {
			if x.State() == session.Done {
				return transition.ErrAlreadyDone
			}
			return x.End(session.Cancelled, "cancelled", render.CancelDetail(t))
		}, store.NewWork{Kind: store.SyncSession})
		if errors.Is(err, transition.ErrAlreadyDone) {
			continue // ended meanwhile (or by an earlier run of this command)
		}
		if err != nil {
			return err
		}
		h.StopAttempt(ctx, ended.AttemptID) // as of the ending, not of the earlier read
		cancelled = append(cancelled, sess.ID)
	}
	if len(cancelled) == 0 {
		// An earlier run of this command may have cancelled them and then
		// failed to reply; its marker in Detail says which.
		for _, sess := range sessions {
			if sess.Detail == render.CancelDetail(t) {
				cancelled = append(cancelled, sess.ID)
			}
		}
	}
	if len(cancelled) == 0 {
		if t.Kind == session.KindUnlabel {
			return nil // it ended on its own meanwhile; nothing to say
		}
		return reply(render.NothingToCancelReply())
	}
	if t.Kind == session.KindUnlabel {
		return reply(render.UnlabelCancelledReply(cancelled, t.Sender.Login, t.Label))
	}
	return reply(render.CancelledReply(cancelled, t.Sender.Login))
}

func (h *Handler) retry(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := h.sessionsForTarget(ctx, t, 50)
	if err != nil {
		return err
	}
	var last *store.Session
	for i := range sessions {
		sess := sessions[i]
		if sess.DeliveryID == t.DeliveryID || (t.Kind == session.KindComment && sess.CommentID == t.CommentID) {
			return nil // this retry already created its session (a replay)
		}
		if sess.Active() {
			// Whatever the trigger: a double-pressed Retry must not queue
			// a second run of the same request.
			return reply(render.StillActiveReply(sess, h.CommandWord))
		}
		if t.Kind == session.KindCheckAction && sess.ID != t.SessionID {
			continue // a button retries its own session
		}
		// A refused session's instructions came from someone who may not
		// run Inspect; retrying them would lend them the retrier's authority.
		if last == nil && sess.Instructions != "" && sess.Outcome != session.Refused {
			last = &sess
		}
	}
	if last == nil {
		return reply(render.NothingToRetryReply(h.CommandWord))
	}
	info, target := last.Info(), last.Target()
	next := &store.Session{
		ID: h.NewID(), RepoID: t.Repo.ID, RepoOwner: t.Repo.Owner, RepoName: t.Repo.Name, InstallationID: t.InstallationID,
		Number: target.Number(), IsPR: target.IsPullRequest(), TriggerKind: session.KindRetry, DeliveryID: t.DeliveryID,
		RequesterLogin: t.Sender.Login, RequesterID: t.Sender.ID, RequesterType: t.Sender.Type,
		Instructions: last.Instructions, RetryOf: last.ID,
		// What the way in added carries over (the review thread it answers,
		// the label it shows its end on, the checks it repairs, the branch
		// it works on), but not
		// the repair's place in the budget: a retry is a person's request.
		TriggerInfo: store.TriggerInfo{Review: info.Review, Label: info.Label, Checks: info.Checks, Branch: target.BranchName()}.Encode(),
	}
	if t.Kind == session.KindComment {
		next.CommentID = t.CommentID
	}
	created, err := h.Store.CreateSessionOnce(ctx, []string{"retry:" + t.DeliveryID}, next, []store.NewWork{{Kind: store.PrepareSession}}, h.Now())
	if err != nil || !created {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("session_id", next.ID).Str("retry_of", last.ID).Msg("retry queued")
	h.Wake()
	return nil
}
