package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
)

// runCommand handles `status`, `cancel` and `retry`.
func (s *Service) runCommand(ctx context.Context, w *store.Work) error {
	var t handlers.Trigger
	if err := json.Unmarshal([]byte(w.Payload), &t); err != nil {
		return fmt.Errorf("decoding command payload: %w", err)
	}
	ctx = zerolog.Ctx(ctx).With().Str("subcommand", string(t.Command.Sub)).Int64("comment_id", t.CommentID).Logger().WithContext(ctx)
	c, err := s.gh.Installation(ctx, t.InstallationID)
	if err != nil {
		return err
	}
	replay := w.Attempts > 1
	th := thread{c: c, owner: t.Repo.Owner, repo: t.Repo.Name, number: t.Number, bot: s.botLogin()}
	reply := func(body string) error {
		_, err := th.postOnce(ctx, commentMarker(t.CommentID), withIgnoredNote(body, t.Command.Ignored, s.cfg.CommandWord), replay)
		return err
	}
	facts, err := s.commandFacts(ctx, c, t)
	if err != nil {
		return err
	}
	if d := policy.Authorize(facts); !d.Allowed {
		return reply(d.Reply)
	}
	switch t.Command.Sub {
	case policy.Status:
		return s.status(ctx, t, reply)
	case policy.Cancel:
		return s.cancel(ctx, c, t, reply)
	case policy.Retry:
		return s.retry(ctx, t, reply)
	}
	return reply(policy.HelpText(s.cfg.CommandWord))
}

// commandFacts gathers what policy needs. Status needs no role (anyone who
// can read the thread may ask), so it costs no permission lookup.
func (s *Service) commandFacts(ctx context.Context, c *github.Client, t handlers.Trigger) (policy.Facts, error) {
	f := policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type, AllowedBots: s.cfg.Policy.AllowedBots,
		ServerPaused: s.cfg.Paused, ForkOptIn: s.cfg.ForkPRAllowed(t.Repo.FullName()), Subcommand: t.Command.Sub,
	}
	if t.Command.Sub == policy.Status {
		return f, nil
	}
	var err error
	f.Target, f.SenderRole, _, err = targetFacts(ctx, c, t.Repo.Owner, t.Repo.Name, t.Number, t.IsPR, t.Sender.Login, t.Sender.Type)
	return f, err
}

// targetFacts reads what policy needs about a PR or issue, and the
// sender's role on the repo (none for a bot, whose permission is the
// allowlist's to decide), plus a PR's head commit.
func targetFacts(ctx context.Context, c *github.Client, owner, name string, number int, isPR bool, login, senderType string) (policy.Target, policy.Role, string, error) {
	var target policy.Target
	headSHA := ""
	if isPR {
		pr, _, err := c.PullRequests.Get(ctx, owner, name, number)
		if err != nil {
			return target, "", "", fmt.Errorf("reading the pull request: %w", err)
		}
		headSHA = pr.GetHead().GetSHA()
		target = policy.Target{IsPR: true, State: pr.GetState(), Merged: pr.GetMerged(), Locked: pr.GetLocked(),
			HeadRepoFullName: pr.GetHead().GetRepo().GetFullName(), BaseRepoFullName: pr.GetBase().GetRepo().GetFullName()}
	} else {
		issue, _, err := c.Issues.Get(ctx, owner, name, number)
		if err != nil {
			return target, "", "", fmt.Errorf("reading the issue: %w", err)
		}
		target = policy.Target{State: issue.GetState(), Locked: issue.GetLocked()}
	}
	if policy.IsBotSender(login, senderType) {
		return target, "", headSHA, nil
	}
	role, err := roleName(ctx, c, owner, name, login)
	if err != nil {
		return target, "", "", err
	}
	return target, policy.Role(role), headSHA, nil
}

func (s *Service) status(ctx context.Context, t handlers.Trigger, reply func(string) error) error {
	sessions, err := s.store.SessionsForTarget(ctx, t.Repo.ID, t.Number, 10)
	if err != nil {
		return err
	}
	if len(sessions) == 0 {
		return reply(fmt.Sprintf("No Inspect sessions on this thread yet. Start one with `%s <instructions>`.", s.cfg.CommandWord))
	}
	var b strings.Builder
	b.WriteString("**Inspect sessions on this thread** (newest first)\n\n| Session | Requested by | Status | Started |\n|---|---|---|---|\n")
	for _, sess := range sessions {
		// Logins without "@": anyone may ask for status, and it must not
		// become a way to make the bot ping people.
		status := statusWord(sess)
		if sess.Active() && sess.AttemptID != "" {
			// The supervisor's latest progress report (fixed phrases and
			// names, cleaned on arrival), so a long run shows where it is.
			if a, err := s.store.GetAttempt(ctx, sess.AttemptID); err == nil && a.Progress != "" {
				status += ": " + a.Progress
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", sess.ID, sess.RequesterLogin, cell(status), sess.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return reply(b.String())
}

func (s *Service) cancel(ctx context.Context, c *github.Client, t handlers.Trigger, reply func(string) error) error {
	sessions, err := s.store.SessionsForTarget(ctx, t.Repo.ID, t.Number, 50)
	if err != nil {
		return err
	}
	var cancelled []string
	for _, sess := range sessions {
		if !sess.Active() {
			continue
		}
		ended, err := s.store.MutateSession(ctx, sess.ID, s.clock.Now(), func(x *store.Session) error {
			if x.State == store.Done {
				return errAlreadyDone
			}
			x.State, x.Outcome, x.Reason = store.Done, store.Cancelled, "cancelled"
			x.Detail = cancelDetail(t)
			return nil
		}, store.NewWork{Kind: store.SyncSession})
		if errors.Is(err, errAlreadyDone) {
			continue // ended meanwhile (or by an earlier run of this command)
		}
		if err != nil {
			return err
		}
		s.stopAttempt(ctx, ended.AttemptID) // as of the ending, not of the earlier read
		cancelled = append(cancelled, "`"+sess.ID+"`")
	}
	if len(cancelled) == 0 {
		// An earlier run of this command may have cancelled them and then
		// failed to reply; its marker in Detail says which.
		for _, sess := range sessions {
			if sess.Detail == cancelDetail(t) {
				cancelled = append(cancelled, "`"+sess.ID+"`")
			}
		}
	}
	if len(cancelled) == 0 {
		return reply("Nothing to cancel: no Inspect session is active on this thread.")
	}
	return reply(fmt.Sprintf("Cancelled %s, as @%s asked.", strings.Join(cancelled, ", "), t.Sender.Login))
}

// cancelDetail is what a cancelled session records; the hidden marker ties
// it to the cancelling comment, so a replayed command can find its work.
func cancelDetail(t handlers.Trigger) string {
	return fmt.Sprintf("Cancelled by @%s.<!-- inspect:cancel=%d -->", t.Sender.Login, t.CommentID)
}

// syncSession brings GitHub in line with a session's stored state: the check
// run, and the progress comment, or one final reply when there is none.
func (s *Service) syncSession(ctx context.Context, w *store.Work) error {
	sess, err := s.store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return err
	}
	if sess.CheckRunID != 0 && sess.State == store.Running {
		_, _, err := c.Checks.UpdateCheckRun(ctx, sess.RepoOwner, sess.RepoName, sess.CheckRunID, github.UpdateCheckRunOptions{
			Name:   CheckRunName,
			Status: github.String("in_progress"),
			Output: &github.CheckRunOutput{Title: github.String("Running"), Summary: github.String(fmt.Sprintf("Session `%s` is running.", sess.ID))},
		})
		if err != nil {
			return fmt.Errorf("marking the check run in progress: %w", err)
		}
	}
	if sess.CheckRunID != 0 && sess.State == store.Done {
		_, _, err := c.Checks.UpdateCheckRun(ctx, sess.RepoOwner, sess.RepoName, sess.CheckRunID, github.UpdateCheckRunOptions{
			Name:        CheckRunName,
			Status:      github.String("completed"),
			Conclusion:  github.String(checkConclusion(sess.Outcome)),
			CompletedAt: &github.Timestamp{Time: s.clock.Now()},
			Output: &github.CheckRunOutput{
				Title:   github.String(statusWord(sess)),
				Summary: github.String(sess.Detail),
			},
		})
		if err != nil {
			return fmt.Errorf("concluding the check run: %w", err)
		}
	}
	if sess.State == store.Done {
		s.annotateRun(ctx, sess)
	}
	run := s.runOf(ctx, sess)
	th := s.thread(c, sess)
	progressID := sess.ProgressCommentID
	if progressID == 0 {
		// An attempt may have posted it and died before recording it.
		if progressID, err = th.find(ctx, sessionMarker(sess.ID)); err != nil {
			return err
		}
	}
	if progressID != 0 {
		return th.edit(ctx, progressID, sessionMarker(sess.ID), progressBody(sess, s.cfg.CommandWord, run))
	}
	if sess.State == store.Done && sess.Detail != "" && sess.Outcome != store.Cancelled {
		// A cancelled session's news is the cancel command's own reply.
		_, err = th.postOnce(ctx, finalMarker(sess.ID), sess.Detail, true)
		return err
	}
	return nil
}

// checkConclusion maps an outcome to a check-run conclusion (ARCHITECTURE.md).
func checkConclusion(o store.Outcome) string {
	switch o {
	case store.Changed:
		return "success"
	case store.NoChange:
		return "neutral"
	case store.ChangeRefused:
		return "action_required"
	case store.TimedOut:
		return "timed_out"
	case store.Cancelled:
		return "cancelled"
	case store.Refused:
		// Refused sessions get no check run; one exists only when an earlier
		// attempt created it before the refusal (say, the PR was closed).
		return "neutral"
	}
	return "failure"
}

func (s *Service) retry(ctx context.Context, t handlers.Trigger, reply func(string) error) error {
	sessions, err := s.store.SessionsForTarget(ctx, t.Repo.ID, t.Number, 50)
	if err != nil {
		return err
	}
	var last *store.Session
	for i := range sessions {
		sess := sessions[i]
		if sess.CommentID == t.CommentID {
			return nil // this retry already created its session (a replay)
		}
		if sess.Active() {
			return reply(fmt.Sprintf("Session `%s` is still %s. Use `%s cancel` first if you want to start over.", sess.ID, sess.State, s.cfg.CommandWord))
		}
		// A refused session's instructions came from someone who may not
		// run Inspect; retrying them would lend them the retrier's authority.
		if last == nil && sess.Instructions != "" && sess.Outcome != store.Refused {
			last = &sess
		}
	}
	if last == nil {
		return reply(fmt.Sprintf("Nothing to retry on this thread. Start a session with `%s <instructions>`.", s.cfg.CommandWord))
	}
	next := &store.Session{
		ID: newID(), RepoID: t.Repo.ID, RepoOwner: t.Repo.Owner, RepoName: t.Repo.Name, InstallationID: t.InstallationID,
		Number: t.Number, IsPR: t.IsPR, TriggerKind: "retry", CommentID: t.CommentID, DeliveryID: t.DeliveryID,
		RequesterLogin: t.Sender.Login, RequesterID: t.Sender.ID, RequesterType: t.Sender.Type,
		Instructions: last.Instructions, RetryOf: last.ID, State: store.Queued,
	}
	if err := s.store.CreateSession(ctx, next, []store.NewWork{{Kind: store.PrepareSession}}, s.clock.Now()); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("session_id", next.ID).Str("retry_of", last.ID).Msg("retry queued")
	s.wakeWorkers()
	return nil
}
