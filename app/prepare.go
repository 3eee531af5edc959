package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghsync"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// prepare runs a queued session's preparation steps. Every step records its
// result before the next, and every GitHub write is found-or-created, so a
// replay (a crash, an expired lease) repeats nothing visible. A session that
// ends meanwhile (a cancel) stops the steps; anything already created on
// GitHub is then concluded by a sync queued with the record.
//
// Only what the decision and the spec need comes before admission, read
// side by side with the 👀 (decisionreads.go); the check run and the
// progress comment follow it (announce), while another worker dispatches
// the session (decision 0048).
func (s *Service) prepare(ctx context.Context, w *store.Work) error {
	sess, err := s.store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	if sess.State() == session.Done {
		return nil // ended meanwhile (a cancel); its sync tells GitHub
	}
	target := sess.Target() // a branch session has no thread (app/branch.go)
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("repo", sess.FullName()).Int("number", sess.Number).Logger()
	ctx = log.WithContext(ctx)
	replay := w.Attempts > 1
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return err
	}
	// Admitted by an earlier run of this step that did not live to finish
	// announcing it: the decision is made again (the pull request may have
	// closed since), and then only the announcing is left.
	admitted := sess.State() != session.Queued

	if !admitted && !sess.WaitingSince.IsZero() {
		// Queued for capacity: everything up to admission was decided when
		// it first waited, so a retry costs the queue no API calls but the
		// config, which the cache usually has (and what the first wait
		// did not live to announce).
		if err := s.announce(ctx, c, sess.ID, replay, ""); err != nil {
			return err
		}
		cfg, err := s.repoConfigs.ForSession(ctx, c, sess)
		var cfgErr *config.RepoConfigError
		if errors.As(err, &cfgErr) {
			return s.transitions.End(ctx, sess.ID, session.Errored, "config_invalid", render.ConfigErrorReply(sess, cfgErr))
		}
		if err != nil {
			return err
		}
		return s.admit(ctx, sess, policy.Narrow(s.cfg.PolicyLimits(), cfg.PolicyLimits()), sess.DefaultBranch, false)
	}

	var reactNow func(context.Context) error
	if !sess.Reacted {
		reactNow = func(ctx context.Context) error { return react(ctx, c, sess) }
	}
	reads, err := s.readForDecision(ctx, c, sess, reactNow)
	if err != nil {
		return err
	}
	if reactNow != nil {
		if sess, err = s.transitions.Record(ctx, sess.ID, func(x *store.Session) { x.Reacted = true }); err != nil || sess.State() == session.Done {
			return err
		}
	}
	repo, repoCfg := reads.repo, reads.cfg
	var cfgErr *config.RepoConfigError
	if errors.As(reads.cfgErr, &cfgErr) {
		return s.endDecided(ctx, sess.ID, admitted, session.Errored, "config_invalid", render.ConfigErrorReply(sess, cfgErr))
	}
	if reads.cfgErr != nil {
		return reads.cfgErr
	}
	if err := s.snapshots.Schedule(ctx, sess.InstallationID, sess.RepoID, repo.GetFullName(), repoCfg); err != nil {
		return err
	}

	if sess.TriggerKind == session.KindLabel && !strings.EqualFold(sess.Info().Label, repoCfg.TriggerLabel()) {
		// Accepted on a cache miss; the fresh config names another label.
		// Nobody asked Inspect anything, so nothing is said.
		log.Info().Msg("label is not this repo's trigger; session dropped")
		return s.endDecided(ctx, sess.ID, admitted, session.Refused, reasonNotATrigger, "")
	}

	facts := policy.Facts{
		SenderLogin:  sess.RequesterLogin,
		SenderType:   sess.RequesterType,
		AllowedBots:  s.cfg.Policy.AllowedBots,
		ServerPaused: s.cfg.Paused,
		RepoPaused:   !repoCfg.IsEnabled(),
		RepoArchived: repo.GetArchived(),
		ForkOptIn:    s.cfg.ForkPRAllowed(sess.FullName()),
		Subcommand:   policy.Run,
		Target:       reads.target,
		SenderRole:   reads.role,
	}
	read := reads.read
	headSHA := read.headSHA
	if sess.TriggerKind == session.KindLabel && !read.hasLabel(repoCfg.TriggerLabel()) {
		// The label is no longer on the issue: a late delivery, or a signed
		// body replayed under a new delivery id. Nobody is asking now, so
		// nothing starts and nothing is said, before any refusal could
		// speak: a replay must not make Inspect post either.
		log.Info().Msg("label is no longer on the issue; session dropped")
		return s.endDecided(ctx, sess.ID, admitted, session.Refused, reasonLabelRemoved, "")
	}
	if d := policy.Authorize(facts); !d.Allowed {
		log.Info().Str("reason", string(d.Reason)).Msg("session refused")
		return s.endDecided(ctx, sess.ID, admitted, session.Refused, string(d.Reason), render.RefusalDetail(sess.TriggerKind == session.KindRepair, render.Refusal(d)))
	}
	if target.IsBranch() && headSHA == "" {
		// Checked when the form was posted, deleted since: said on the
		// session's page, the branch session's one reply.
		log.Info().Msg("the session's branch is gone; session ended")
		return s.endDecided(ctx, sess.ID, admitted, session.Errored, reasonBranchMissing, render.BranchMissingReply(sess.RequesterLogin))
	}
	limits := policy.Narrow(s.cfg.PolicyLimits(), repoCfg.PolicyLimits())

	// A branch session's check run is on the branch's head, pinned here as
	// a pull request's is. The head is pinned before anything is created
	// or dispatched: the spec runs on it, and a replay must look for the
	// check run on the commit it was created on, even if the PR has moved
	// since.
	if target.HasHeadAtOnce() && sess.HeadSHA == "" {
		if sess, err = s.transitions.Record(ctx, sess.ID, func(x *store.Session) {
			if x.HeadSHA == "" {
				x.HeadSHA = headSHA
			}
		}); err != nil || sess.State() == session.Done {
			return err
		}
	}
	if !target.HasThread() {
		// No thread: nothing to wait behind (each branch run opens its own
		// pull request) and no comment to post; the page and the check run
		// tell its progress.
		if admitted {
			return s.announce(ctx, c, sess.ID, replay, "")
		}
		return s.admitThenAnnounce(ctx, c, sess, limits, repo.GetDefaultBranch(), replay)
	}
	if admitted {
		return s.announce(ctx, c, sess.ID, replay, "") // past any session it waited behind
	}
	// One active session per PR or issue: a later request waits for the
	// earlier ones, and its progress comment says so.
	blocker, err := s.store.ActiveSessionBefore(ctx, sess)
	if err != nil {
		return err
	}
	if blocker != "" {
		if err := s.announce(ctx, c, sess.ID, replay, blocker); err != nil {
			return err
		}
		return &postponed{after: s.cfg.Workers.PollInterval * 5, why: "waiting for session " + blocker}
	}
	return s.admitThenAnnounce(ctx, c, sess, limits, repo.GetDefaultBranch(), replay)
}

// endDecided ends a session as the decision says (end), and when an earlier
// run had admitted it, stops the attempt it may have been dispatched to.
func (s *Service) endDecided(ctx context.Context, id string, admitted bool, outcome session.Outcome, reason, reply string) error {
	if !admitted {
		return s.transitions.End(ctx, id, outcome, reason, reply)
	}
	// Admitted by an earlier run: end it only while its run has not
	// reported; a session reporting is past what this decision guards.
	ended, err := s.transitions.EndIf(ctx, id, func(x *store.Session) bool {
		st := x.State()
		return st == session.Preparing || st == session.Dispatched || st == session.Running
	}, outcome, reason, reply)
	if err != nil || !ended {
		return err
	}
	sess, err := s.store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	s.stopAttempt(ctx, sess.AttemptID)
	return nil
}

// admitThenAnnounce admits the session, which queues its dispatch for
// another worker, and then creates its check run and posts its progress
// comment while it is dispatched. A session held for capacity is
// announced too, and then waits.
func (s *Service) admitThenAnnounce(ctx context.Context, c *github.Client, sess store.Session, limits policy.Limits, defaultBranch string, replay bool) error {
	// The progress comment about to be posted says "preparing" itself;
	// one posted earlier is brought up to date by admit's sync.
	postingNow := sess.Target().HasThread() && sess.ProgressCommentID == 0
	admitted := s.admit(ctx, sess, limits, defaultBranch, postingNow)
	var held *postponed
	if admitted != nil && !errors.As(admitted, &held) {
		return admitted
	}
	if err := s.announce(ctx, c, sess.ID, replay, ""); err != nil {
		return err
	}
	return admitted
}

// announce shows a session on GitHub, in this order: its check run (on the
// pinned head, for a target that has one at once) and its progress comment
// (for a thread), each recorded before the next. blocker, when set, is the
// session it waits behind, which the comment names. A session that ended
// gets neither: its sync says what became of it. One that moved on while
// this ran (dispatched, running, queued for capacity) gets a sync queued
// with the record, so what was just created catches up with it.
func (s *Service) announce(ctx context.Context, c *github.Client, id string, replay bool, blocker string) error {
	sess, err := s.store.GetSession(ctx, id)
	if err != nil || sess.State() == session.Done {
		return err
	}
	target := sess.Target()
	if target.HasHeadAtOnce() && sess.CheckRunID == 0 {
		runID, err := s.ensureCheckRun(ctx, c, sess, replay)
		if err != nil {
			return err
		}
		if sess, err = s.recordAnnounced(ctx, sess.ID, func(x *store.Session) { x.CheckRunID = runID }, blocker != ""); err != nil || sess.State() == session.Done {
			return err
		}
	}
	if !target.HasThread() || sess.ProgressCommentID != 0 {
		return nil
	}
	// The comment says what the session is once admitted: one held for
	// capacity is still queued here, and its sync (queued with the record
	// below) says so.
	next := sess
	if next.State() == session.Queued {
		if err := next.Move(session.Admit); err != nil {
			return err
		}
	}
	origin := render.OriginOf(next)
	origin.SignIn = s.dash.SignInHint(ctx, next)
	body := render.ProgressBody(next, origin, s.cfg.CommandWord, render.RunLink{})
	if blocker != "" {
		body = render.WaitingBody(sess, blocker, s.cfg.CommandWord)
	}
	commentID, err := threadOf(c, sess, s.botLogin()).PostOnce(ctx, render.SessionMarker(sess.ID), body, replay)
	if err != nil {
		return err
	}
	_, err = s.recordAnnounced(ctx, sess.ID, func(x *store.Session) { x.ProgressCommentID = commentID }, blocker != "")
	return err
}

// recordAnnounced is record for what announce created, which also queues a
// sync when the session has moved past what was just written: a check run
// is created queued and a progress comment posted as "preparing", while
// the session may meanwhile have been dispatched, claimed, ended or held
// for capacity (its own sync then ran before there was anything to bring
// in line). waiting says the comment names the session it waits behind,
// which a sync would not keep.
func (s *Service) recordAnnounced(ctx context.Context, id string, fn func(*store.Session), waiting bool) (store.Session, error) {
	return s.store.MutateSessionThen(ctx, id, s.clock.Now(), func(x *store.Session) ([]store.NewWork, error) {
		fn(x)
		movedOn := x.State() != session.Queued && x.State() != session.Preparing
		held := !waiting && !x.WaitingSince.IsZero()
		if movedOn || held {
			return []store.NewWork{{Kind: store.SyncSession}}, nil
		}
		return nil, nil
	})
}

// admit moves a prepared session past the caps (policy.Admit), or queues
// it first come, first served, with the queue's line shown once by a sync
// queued with the wait. postedNow says the progress comment was just
// posted as "preparing", so only a queued one needs the sync.
func (s *Service) admit(ctx context.Context, sess store.Session, limits policy.Limits, defaultBranch string, postedNow bool) error {
	held := false
	var refused policy.Decision
	// The money budgets weigh the day's spend, read before the admission's
	// lock: it grows as sessions run, never by an admission (decision 0077).
	var spends []policy.Spend
	if limits.DailyMoneyPerRepo > 0 || limits.DailyMoneyPerInstallation > 0 {
		rows, err := s.store.DaySpend(ctx, sess.InstallationID, s.clock.Now().Add(-25*time.Hour))
		if err != nil {
			return err
		}
		spends = store.PricedSpends(rows, s.cfg.ModelCost)
	}
	_, err := s.store.Admit(ctx, sess.ID, s.clock.Now, func(x *store.Session, load policy.Load, now time.Time) ([]store.NewWork, error) {
		if x.State() != session.Queued {
			return nil, nil
		}
		x.DefaultBranch = defaultBranch
		if x.WaitingSince.IsZero() {
			// The daily budget counts starts and places in the queue, under
			// the same lock as the caps; a session that holds a place was
			// counted when it took it.
			if d := policy.DailyBudget(limits, load.StartedRepo, load.OldestStart, now, x.RequesterLogin); !d.Allowed {
				refused = d
				return []store.NewWork{{Kind: store.SyncSession}}, x.End(session.Refused, string(d.Reason), render.RefusalDetail(x.TriggerKind == session.KindRepair, render.Refusal(d)))
			}
		}
		// A session waiting in a queue is weighed again when its turn comes.
		if d := policy.MoneyBudget(limits, x.RepoID, spends, now, x.RequesterLogin); !d.Allowed {
			refused = d
			return []store.NewWork{{Kind: store.SyncSession}}, x.End(session.Refused, string(d.Reason), render.RefusalDetail(x.TriggerKind == session.KindRepair, render.Refusal(d)))
		}
		if a := policy.Admit(limits, load); !a.Admit {
			held = true
			x.WaitingScope = string(a.Scope) // the cap that holds it now
			if !x.WaitingSince.IsZero() {
				return nil, nil // it says so already; not at every move
			}
			x.WaitingSince = now
			ti := x.Info()
			ti.QueuedFor = render.QueueText(a)
			x.TriggerInfo = ti.Encode()
			return []store.NewWork{{Kind: store.SyncSession}}, nil
		}
		if err := x.Move(session.Admit); err != nil {
			return nil, err
		}
		x.AdmittedAt, x.WaitingScope = now, ""
		var then []store.NewWork
		if !postedNow || !x.WaitingSince.IsZero() {
			// The comment said "waiting" or "queued" (or came from an
			// earlier attempt): bring it up to date.
			then = append(then, store.NewWork{Kind: store.SyncSession})
		}
		if s.executor != nil {
			then = append(then, store.NewWork{Kind: store.DispatchSession})
		}
		return then, nil // without an executor, the control plane alone: sessions stop here
	})
	if err != nil {
		return err
	}
	s.wakeWorkers() // the sync that shows the queue or the refusal, or the dispatch
	if refused.Reason != "" {
		zerolog.Ctx(ctx).Info().Str("reason", string(refused.Reason)).Msg("session refused")
		return nil
	}
	if held {
		return &postponed{after: s.cfg.Workers.PollInterval * 5, why: "waiting for capacity"}
	}
	zerolog.Ctx(ctx).Info().Msg("session preparing")
	return nil
}

// reasonNotATrigger ends a session accepted on a cache miss that the fresh
// config says was no trigger at all.
const reasonNotATrigger = "not_a_trigger"

// reasonLabelRemoved ends a label session whose label was no longer on the
// issue when it was prepared (a replayed or late issues.labeled).
const reasonLabelRemoved = "label_removed"

// react puts 👀 on the comment that asked (ghwrite.React). Labels and
// repairs have no comment to react to.
func react(ctx context.Context, c *github.Client, sess store.Session) error {
	switch {
	case sess.CommentID != 0:
		return ghwrite.React(ctx, c.Reactions, sess.RepoOwner, sess.RepoName, sess.CommentID, false)
	case sess.Info().Review != nil:
		return ghwrite.React(ctx, c.Reactions, sess.RepoOwner, sess.RepoName, sess.Info().Review.CommentID, true)
	}
	return nil
}

// threadOf is the session's conversation, or the review thread it answers,
// where bot is our bot's login.
func threadOf(c *github.Client, sess store.Session, bot string) ghwrite.Thread {
	t := ghwrite.NewThread(c, sess.RepoOwner, sess.RepoName, sess.Number, bot)
	if r := sess.Info().Review; r != nil {
		t.Review = r.ThreadID()
	}
	return t
}

func (s *Service) botLogin() string { return s.Identity().AppSlug + "[bot]" }

// ensureCheckRun finds or creates the session's queued check run on its
// head SHA (ghwrite.EnsureCheckRun), its external id the session's.
func (s *Service) ensureCheckRun(ctx context.Context, c *github.Client, sess store.Session, replay bool) (int64, error) {
	title, summary := render.QueuedCheckRun(sess)
	return ghwrite.EnsureCheckRun(ctx, c.Checks, sess.RepoOwner, sess.RepoName, github.CreateCheckRunOptions{
		Name:       CheckRunName,
		HeadSHA:    sess.HeadSHA,
		Status:     github.String("queued"),
		ExternalID: github.String(sess.ID),
		DetailsURL: s.dash.SessionURL(sess.ID),
		Actions:    ghsync.CheckActions(sess),
		Output: &github.CheckRunOutput{
			Title:   github.String(title),
			Summary: github.String(summary),
		},
	}, replay)
}

func (s *Service) postReply(ctx context.Context, w *store.Work) error {
	var p replyPayload
	if err := json.Unmarshal([]byte(w.Payload), &p); err != nil {
		return fmt.Errorf("decoding reply payload: %w", err)
	}
	c, err := s.gh.Installation(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	t := ghwrite.NewThread(c, p.Owner, p.Repo, p.Number, s.botLogin())
	t.Review = p.ReviewThread
	_, err = t.PostOnce(ctx, p.Marker, p.Body, w.Attempts > 1)
	return err
}

// maxBackoff caps the wait between attempts.
const maxBackoff = 10 * time.Minute

// backoffFor doubles the wait with each failed attempt, up to maxBackoff.
func backoffFor(base time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}
