package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/transition"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// runCommand handles `status`, `cancel` and `retry`, from a comment, a
// label taken off, or a button on Inspect's check run.
func (s *Service) runCommand(ctx context.Context, w *store.Work) error {
	var t session.Trigger
	if err := json.Unmarshal([]byte(w.Payload), &t); err != nil {
		return fmt.Errorf("decoding command payload: %w", err)
	}
	log := zerolog.Ctx(ctx).With().Str("subcommand", string(t.Command.Sub)).Int64("comment_id", t.CommentID).Str("trigger", string(t.Kind)).Logger()
	ctx = log.WithContext(ctx)
	if t.Kind == session.KindCheckAction {
		// The button's session says which thread this is about.
		sess, err := s.store.GetSession(ctx, t.SessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sess.RepoID != t.Repo.ID) {
			log.Warn().Str("session_id", t.SessionID).Msg("check-run button for a session this server does not know; ignored")
			return nil
		}
		if err != nil {
			return err
		}
		t.SetTarget(sess.Target())
	}
	c, err := s.gh.Installation(ctx, t.InstallationID)
	if err != nil {
		return err
	}
	replay := w.Attempts > 1
	th := ghwrite.NewThread(c, t.Repo.Owner, t.Repo.Name, t.Number, s.botLogin())
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
		_, err := th.PostOnce(ctx, render.ReplyMarker(t), render.WithIgnoredNote(body, t.Command.Ignored, s.cfg.CommandWord), replay)
		return err
	}
	if t.Kind == session.KindUnlabel {
		// Taking the label off says "stop" only while its session runs
		// (Inspect takes it off itself when a session ends; that event is
		// our own and never gets here).
		sessions, err := s.cancellable(ctx, t)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(sessions, store.Session.Active) {
			return nil // nothing of its runs (a refusal, or it ended): nothing to say
		}
	}
	facts, err := s.commandFacts(ctx, c, t)
	if err != nil {
		return err
	}
	if d := policy.Authorize(facts); !d.Allowed {
		return reply(render.Refusal(d))
	}
	switch t.Command.Sub {
	case policy.Status:
		return s.status(ctx, t, reply)
	case policy.Cancel:
		return s.cancel(ctx, t, reply)
	case policy.Retry:
		return s.retry(ctx, t, reply)
	}
	return reply(render.HelpText(s.cfg.CommandWord))
}

// cancellable lists the sessions a cancel trigger may stop: a button's
// own session, a removed label's sessions, or every session on the thread.
func (s *Service) cancellable(ctx context.Context, t session.Trigger) ([]store.Session, error) {
	sessions, err := s.sessionsForTarget(ctx, t, 50)
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
func (s *Service) sessionsForTarget(ctx context.Context, t session.Trigger, limit int) ([]store.Session, error) {
	sessions, err := s.store.SessionsForTarget(ctx, t.Repo.ID, t.Number, limit)
	if err != nil {
		return nil, err
	}
	branch := t.Target().BranchName()
	return slices.DeleteFunc(sessions, func(sess store.Session) bool { return sess.Target().BranchName() != branch }), nil
}

// commandFacts gathers what policy needs. Status needs no role (anyone who
// can read the thread may ask), so it costs no permission lookup.
func (s *Service) commandFacts(ctx context.Context, c *github.Client, t session.Trigger) (policy.Facts, error) {
	f := policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type, AllowedBots: s.cfg.Policy.AllowedBots,
		ServerPaused: s.cfg.Paused, ForkOptIn: s.cfg.ForkPRAllowed(t.Repo.FullName()), Subcommand: t.Command.Sub,
	}
	if t.Command.Sub == policy.Status {
		return f, nil
	}
	var err error
	if tg := t.Target(); tg.IsBranch() {
		// Whether the branch still exists does not matter to a cancel or
		// a retry: the retry's preparation reads it again.
		f.Target, f.SenderRole, _, err = branchFacts(ctx, c, t.Repo.Owner, t.Repo.Name, tg.BranchName(), t.Sender.Login, t.Sender.Type)
		return f, err
	}
	f.Target, f.SenderRole, _, err = targetFacts(ctx, c, t.Repo.Owner, t.Repo.Name, t.Target(), t.Sender.Login, t.Sender.Type)
	return f, err
}

// targetRead is what targetFacts read of a PR or issue besides policy's
// facts.
type targetRead struct {
	headSHA string   // a pull request's head commit
	labels  []string // an issue's labels, by name, as GitHub has them now
}

// hasLabel reports whether the issue carries the label; GitHub's label
// names ignore case.
func (r targetRead) hasLabel(label string) bool {
	return slices.ContainsFunc(r.labels, func(l string) bool { return strings.EqualFold(l, label) })
}

// targetFacts reads what policy needs about a PR or issue, and the
// sender's role on the repo (none for a bot, whose permission is the
// allowlist's to decide), plus a PR's head commit and an issue's labels.
func targetFacts(ctx context.Context, c *github.Client, owner, name string, tg session.Target, login, senderType string) (policy.Target, policy.Role, targetRead, error) {
	var target policy.Target
	var read targetRead
	var role string
	// The target and the role side by side: neither needs the other.
	err := sideBySide(ctx, func(ctx context.Context) error {
		if tg.IsPullRequest() {
			pr, _, err := c.PullRequests.Get(ctx, owner, name, tg.Number())
			if err != nil {
				return fmt.Errorf("reading the pull request: %w", err)
			}
			read.headSHA = pr.GetHead().GetSHA()
			target = policy.Target{IsPR: true, State: pr.GetState(), Merged: pr.GetMerged(), Locked: pr.GetLocked(),
				HeadRepoFullName: pr.GetHead().GetRepo().GetFullName(), BaseRepoFullName: pr.GetBase().GetRepo().GetFullName()}
			return nil
		}
		issue, _, err := c.Issues.Get(ctx, owner, name, tg.Number())
		if err != nil {
			return fmt.Errorf("reading the issue: %w", err)
		}
		target = policy.Target{State: issue.GetState(), Locked: issue.GetLocked()}
		// The issue carries all its labels (GitHub allows 100); no page
		// of its labels endpoint is needed.
		for _, l := range issue.Labels {
			read.labels = append(read.labels, l.GetName())
		}
		return nil
	}, senderRole(c, owner, name, login, senderType, &role))
	if err != nil {
		return policy.Target{}, "", targetRead{}, err
	}
	return target, policy.Role(role), read, nil
}

// senderRole reads login's role into role, beside another read; nil (no
// read) for a bot, whose role is never asked (policy.IsBotSender).
func senderRole(c *github.Client, owner, name, login, senderType string, role *string) func(context.Context) error {
	if policy.IsBotSender(login, senderType) {
		return nil
	}
	return func(ctx context.Context) error {
		var err error
		*role, err = ghclient.RoleName(ctx, c, owner, name, login)
		return err
	}
}

func (s *Service) status(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := s.sessionsForTarget(ctx, t, 10)
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		return reply(render.NoSessionsReply(s.cfg.CommandWord))
	}
	var rows []render.StatusRow
	for _, sess := range sessions {
		if sess.Reason == reasonNotATrigger || sess.Reason == reasonLabelRemoved {
			continue // nobody asked: a label the fresh config does not name, or one no longer on the issue
		}
		row := render.StatusRow{Session: sess}
		if sess.Active() && sess.AttemptID != "" {
			// The supervisor's latest progress report, so a long run shows
			// where it is.
			if a, err := s.store.GetAttempt(ctx, sess.AttemptID); err == nil {
				row.Progress = a.Progress
			}
		}
		rows = append(rows, row)
	}
	return reply(render.StatusListing(rows))
}

func (s *Service) cancel(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := s.cancellable(ctx, t)
	if err != nil {
		return err
	}
	var cancelled []string
	for _, sess := range sessions {
		if !sess.Active() {
			continue
		}
		ended, err := s.store.MutateSession(ctx, sess.ID, s.clock.Now(), func(x *store.Session) error {
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
		s.stopAttempt(ctx, ended.AttemptID) // as of the ending, not of the earlier read
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

func (s *Service) retry(ctx context.Context, t session.Trigger, reply func(string) error) error {
	sessions, err := s.sessionsForTarget(ctx, t, 50)
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
			return reply(render.StillActiveReply(sess, s.cfg.CommandWord))
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
		return reply(render.NothingToRetryReply(s.cfg.CommandWord))
	}
	info, target := last.Info(), last.Target()
	next := &store.Session{
		ID: newID(), RepoID: t.Repo.ID, RepoOwner: t.Repo.Owner, RepoName: t.Repo.Name, InstallationID: t.InstallationID,
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
	created, err := s.store.CreateSessionOnce(ctx, []string{"retry:" + t.DeliveryID}, next, []store.NewWork{{Kind: store.PrepareSession}}, s.clock.Now())
	if err != nil || !created {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("session_id", next.ID).Str("retry_of", last.ID).Msg("retry queued")
	s.wakeWorkers()
	return nil
}
