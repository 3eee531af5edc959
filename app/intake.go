package app

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/repoconfig"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Intake: turning what the webhook handlers hand over (a Trigger, a failing
// check, a config push) into stored work, inside the webhook request and
// from local state only: the pause and label filters read the cached repo
// config, and nothing calls GitHub. Everything is synced to disk before
// the request is answered (decision 0001).

func replyWork(t session.Trigger, marker, body string) store.NewWork {
	p := replyPayload{
		Owner: t.Repo.Owner, Repo: t.Repo.Name, InstallationID: t.InstallationID, Number: t.Number,
		Marker: marker, Body: body,
	}
	if t.Kind == session.KindReviewComment && t.Review != nil {
		p.ReviewThread = t.Review.ThreadRoot(t.CommentID)
	}
	return store.NewWork{Kind: store.PostReply, Payload: mustJSON(p)}
}

// AcceptTrigger implements handlers.Sink. It decides from local state only
// (server config, the repo-config cache, the trigger) and returns after the
// decision is on disk.
func (s *Service) AcceptTrigger(ctx context.Context, t session.Trigger) error {
	now := s.clock.Now()
	a := store.Acceptance{DeliveryID: t.DeliveryID, Event: t.Event, At: now}
	switch t.Kind {
	case session.KindComment:
		a.CommentID = t.CommentID
	case session.KindReviewComment:
		// Review comments number apart from issue comments.
		a.ClaimKey = fmt.Sprintf("review-comment:%d", t.CommentID)
	case session.KindDashboard:
		// No comment to claim: the form post's own id dedupes a retried post.
		a.ClaimKey = "dashboard:" + t.DeliveryID
	case session.KindLabel, session.KindUnlabel:
		ok, err := s.isTriggerLabel(ctx, t.Repo.ID, t.Label)
		if err != nil {
			return &handlers.StoreError{Err: err}
		}
		if !ok {
			zerolog.Ctx(ctx).Debug().Str("label", t.Label).Msg("label ignored: not this repo's trigger label")
			return nil
		}
		if t.Kind == session.KindLabel {
			t.Command.Instructions = render.LabelInstructions(t.Number, t.IssueTitle)
		}
	}
	switch {
	case t.Command.Kind == policy.Reply:
		body := render.WithIgnoredNote(render.HelpReply(t.Command.Problem, s.cfg.CommandWord), t.Command.Ignored, s.cfg.CommandWord)
		// Help is for everyone but bots off the allowlist: they get the
		// refusal instead, so no bot can make us talk without being trusted.
		if d := policy.Authorize(policy.Facts{SenderLogin: t.Sender.Login, SenderType: t.Sender.Type,
			AllowedBots: s.cfg.Policy.AllowedBots, Subcommand: policy.Help}); !d.Allowed {
			body = render.Refusal(d)
		}
		a.Work = []store.NewWork{replyWork(t, render.ReplyMarker(t), body)}
	case t.Command.Sub == policy.Stop:
		// Stop is for the thread's running session: its turn (decision
		// 0071), decided in a worker with the sender's role.
		a.Work = []store.NewWork{{Kind: store.AdmitTurn, Payload: mustJSON(t)}}
	case t.Kind == session.KindDashboard && t.SessionID != "":
		// A message from the session's page: a turn of that session
		// (decision 0071), admitted in a worker.
		a.Work = []store.NewWork{{Kind: store.AdmitTurn, Payload: mustJSON(t)}}
	case t.Command.Sub == policy.Run && steers(ctx, s.store, s.repoConfigs, t):
		// A session runs on this thread: the request is a turn of it, not
		// a session that waits (decision 0071).
		a.Work = []store.NewWork{{Kind: store.AdmitTurn, Payload: mustJSON(t)}}
	case t.Command.Sub == policy.Run:
		sess := sessionFromTrigger(t)
		paused, err := s.pausedLocally(ctx, t)
		if err != nil {
			return &handlers.StoreError{Err: err}
		}
		if paused.Allowed {
			a.Work = []store.NewWork{{Kind: store.PrepareSession}}
		} else {
			// Refused from local state: no network, no 👀; the sync posts
			// the one reply.
			if err := sess.End(session.Refused, string(paused.Reason), render.Refusal(paused)); err != nil {
				return err // a new session is queued, which End is taken from
			}
			a.Work = []store.NewWork{{Kind: store.SyncSession}}
		}
		a.Session = sess
	default:
		t.AcceptedAt = now
		a.Work = []store.NewWork{{Kind: store.RunCommand, Payload: mustJSON(t)}}
	}
	res, err := s.store.Accept(ctx, a)
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	ev := zerolog.Ctx(ctx).Info().Str("result", res.String()).Str("trigger", cmp.Or(string(t.Kind), "comment"))
	if a.Session != nil && res == store.Accepted {
		ev = ev.Str("session_id", a.Session.ID).Str("state", string(a.Session.State()))
	}
	ev.Msg("trigger accepted")
	s.wakeWorkers()
	return nil
}

// sessionFromTrigger is the session a run request starts, queued: from a
// comment, a review comment, a label, the dashboard's form, or a message
// that found nothing running to steer (app/turns).
func sessionFromTrigger(t session.Trigger) *store.Session {
	target := t.Target()
	sess := &store.Session{
		ID: newID(), RepoID: t.Repo.ID, RepoOwner: t.Repo.Owner, RepoName: t.Repo.Name,
		InstallationID: t.InstallationID, Number: target.Number(), IsPR: target.IsPullRequest(), TriggerKind: session.KindComment,
		DeliveryID: t.DeliveryID, RequesterLogin: t.Sender.Login,
		RequesterID: t.Sender.ID, RequesterType: t.Sender.Type, Instructions: t.Command.Instructions,
		Truncated: t.Command.Truncated, IgnoredCommands: t.Command.Ignored,
	}
	switch t.Kind {
	case session.KindComment:
		sess.CommentID = t.CommentID
	case session.KindReviewComment:
		sess.TriggerKind = session.KindReviewComment
		r := t.Review
		if r == nil {
			r = &session.ReviewComment{}
		}
		sess.TriggerInfo = store.TriggerInfo{Review: &store.ReviewInfo{CommentID: t.CommentID, ReviewComment: *r}}.Encode()
	case session.KindLabel:
		sess.TriggerKind = session.KindLabel
		sess.TriggerInfo = store.TriggerInfo{Label: t.Label}.Encode()
	case session.KindDashboard:
		sess.TriggerKind = session.KindDashboard
		// A branch run has no thread (Number 0); the branch is what it
		// works on (app/branch.go).
		sess.TriggerInfo = store.TriggerInfo{Branch: target.BranchName()}.Encode()
	}
	return sess
}

// steers reports whether a run request on a thread is for the thread's
// running session (a turn, decision 0071) rather than a session of its
// own: from the store and the cached config only, as everything here. A
// cache miss errs on the side of a turn; the worker reads the config
// again, and a repo with steer: off gets its session there.
func steers(ctx context.Context, st *store.Store, configs *repoconfig.Configs, t session.Trigger) bool {
	if t.Kind != session.KindComment && t.Kind != session.KindReviewComment {
		return false
	}
	id, err := st.ActiveSessionOn(ctx, t.Repo.ID, t.Number)
	if err != nil || id == "" {
		// A store that cannot read now: the request is a session, which
		// waits for the thread's running one as before turns.
		return false
	}
	cfg, known, err := configs.Cached(ctx, t.Repo.ID)
	return err != nil || !known || cfg.SteerMode() != session.SteerOff
}

// pausedLocally checks the two pause switches from local state. A cache miss
// errs on the side of accepting; the worker re-checks with the fresh config.
func (s *Service) pausedLocally(ctx context.Context, t session.Trigger) (policy.Decision, error) {
	// A cached pause is trusted only while fresh (repoconfig.Configs.Cached): were
	// the push that lifted it lost, an old entry would otherwise refuse
	// forever without looking. Past repo_config_max_age the trigger is
	// accepted and the worker reads the config again.
	cfg, known, err := s.repoConfigs.Cached(ctx, t.Repo.ID)
	if err != nil {
		return policy.Decision{}, err
	}
	repoPaused := known && !cfg.IsEnabled()
	if !s.cfg.Paused && !repoPaused {
		return policy.Decision{Allowed: true}, nil
	}
	// Authorize checks pauses first, so with pause facts set its decision is
	// the pause refusal whatever the other facts are.
	return policy.Authorize(policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type,
		ServerPaused: s.cfg.Paused, RepoPaused: repoPaused, Subcommand: policy.Run,
	}), nil
}

// AcceptConfigPush implements handlers.Sink: it queues a cache refresh.
func (s *Service) AcceptConfigPush(ctx context.Context, p session.ConfigPush) error {
	now := s.clock.Now()
	res, err := s.store.Accept(ctx, store.Acceptance{
		DeliveryID: p.DeliveryID, Event: "push", At: now,
		Work: []store.NewWork{{Kind: store.RefreshRepoConfig, Payload: mustJSON(p)}},
	})
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	zerolog.Ctx(ctx).Info().Str("result", res.String()).Str("repo", p.Repo.FullName()).Bool("org_wide", p.OrgWide).Msg("config refresh queued")
	s.wakeWorkers()
	return nil
}

// DefaultBranchMoved implements handlers.Sink: a repo that wants snapshots
// gets its next build within snapshotPushDebounce. A failure only delays
// the rebuild to the regular refresh, so it is logged, not answered 503.
func (s *Service) DefaultBranchMoved(ctx context.Context, repo session.Repo) {
	if s.cfg.Snapshots.Store == "" {
		return
	}
	if err := s.store.SnapshotSoon(ctx, repo.ID, s.clock.Now().Add(snapshotPushDebounce)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("repo", repo.FullName()).Msg("bringing the snapshot rebuild forward failed")
	}
}

// isTriggerLabel says whether label starts (or, removed, cancels)
// sessions in the repo, as far as the cache knows. A true cache miss errs
// on the side of accepting: the worker reads the config, drops the
// session silently if the label is not the trigger (reasonNotATrigger),
// and the cache then filters the repo's next label events here.
func (s *Service) isTriggerLabel(ctx context.Context, repoID int64, label string) (bool, error) {
	cfg, known, err := s.repoConfigs.Cached(ctx, repoID)
	if err != nil || !known {
		return !known, err
	}
	return strings.EqualFold(label, cfg.TriggerLabel()), nil
}

// AcceptCheckFailure implements handlers.Sink: a failing check that the
// cached config asks to repair is queued for the worker, which decides
// after repair.debounce so that checks failing on one commit meet in one
// session. Everything else stores nothing.
func (s *Service) AcceptCheckFailure(ctx context.Context, f session.CheckFailure) error {
	log := zerolog.Ctx(ctx)
	cfg, known, err := s.repoConfigs.Cached(ctx, f.Repo.ID)
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	if known && (!cfg.RepairEnabled() || (f.Name != "" && !cfg.RepairsCheck(f.Name))) {
		log.Debug().Str("check", f.Name).Msg("check failure ignored: the repo does not repair it")
		return nil
	}
	if policy.AllForks(f.PullRequests, func(p session.PullRef) (int64, int64) { return p.HeadRepoID, p.BaseRepoID }) {
		log.Debug().Str("check", f.Name).Msg("check failure ignored: fork pull requests are never repaired")
		return nil
	}
	now := s.clock.Now()
	res, err := s.store.Accept(ctx, store.Acceptance{
		DeliveryID: f.DeliveryID, Event: f.Event, At: now,
		Work: []store.NewWork{{Kind: store.ConsiderRepair, Payload: mustJSON(f), RunAfter: now.Add(s.cfg.Repair.Debounce)}},
	})
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	log.Info().Str("result", res.String()).Str("check", f.Name).Str("sha", f.HeadSHA).Msg("check failure queued for repair")
	s.wakeWorkers()
	return nil
}
