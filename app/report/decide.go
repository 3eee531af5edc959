package report

import (
	"context"
	"errors"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// steps is what the report step does to the world, one verb per
// write, so that decide's decisions can be table-tested with a
// plain struct (report_test.go) while githubSteps does them for real.
type steps interface {
	// RepoConfig is the config the session runs under (its protected
	// paths); a *config.RepoConfigError when the file does not parse.
	RepoConfig(ctx context.Context, sess store.Session) (config.Repo, error)
	// Commit makes the commit of the manifest on the pinned commit.
	Commit(ctx context.Context, sess store.Session, spec contract.Spec, m *contract.Manifest) (sha string, err error)
	// Push puts sess.CommitSHA where it belongs (decision 0009) and
	// returns the branch and pull request it is on.
	Push(ctx context.Context, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (branch string, pr int, err error)
	// Attest signs and keeps the attempt's provenance, its subject
	// sess.CommitSHA (decision 0078); nothing without provenance keys.
	Attest(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) error
	// CheckRun finds or creates the session's check run on sess.HeadSHA.
	CheckRun(ctx context.Context, sess store.Session) (int64, error)
	// AnnotateFailures puts the failing tests on the check run (best
	// effort: it returns nothing).
	AnnotateFailures(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence)
	// Record stores what a write made (Transitions.Record).
	Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error)
	// End ends the session with one reply (Transitions.End).
	End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error
}

// decide decides, from the session as stored and its attempt's
// result, what the report step does, and does it through do:
//   - a run that timed out, was cancelled or failed ends as such;
//   - no change ends no_change with the agent's answer;
//   - an unreadable repo config (it holds the protected paths) or a change
//     policy refuses ends change_refused, and nothing is written;
//   - otherwise: commit, attest (with provenance keys), push (a draft
//     unless the verdict says ready), (issue sessions) a check run on the
//     commit, (failed verification) annotations, and the end the verdict
//     over the evidence gives (verdict.Of: changed or verification_failed,
//     with its reason; decision 0081).
//
// Each write is recorded before the next, and a step already recorded
// (a replay) is not done again; a session that ended meanwhile stops here.
func decide(ctx context.Context, do steps, sess store.Session, spec contract.Spec, up contract.ResultUpload) error {
	ev := up.Evidence
	switch ev.Outcome {
	case contract.OutcomeTimedOut:
		return do.End(ctx, sess.ID, session.TimedOut, "timed_out", render.TimedOutReply(sess.RequesterLogin))
	case contract.OutcomeCancelled:
		return do.End(ctx, sess.ID, session.Cancelled, "cancelled", render.RunCancelledReply())
	case contract.OutcomeLimitExceeded:
		return do.End(ctx, sess.ID, session.Errored, string(contract.OutcomeLimitExceeded), render.LimitExceededReply(sess, ev))
	case contract.OutcomeError, contract.OutcomeAgentFailed:
		if svc := ev.FailedService(); svc != nil {
			return do.End(ctx, sess.ID, session.Errored, string(ev.Outcome), render.ServiceFailedReply(sess, *svc))
		}
		return do.End(ctx, sess.ID, session.Errored, string(ev.Outcome), render.AgentFailedReply(sess, ev))
	}
	if up.Manifest == nil || len(up.Manifest.Files) == 0 {
		return do.End(ctx, sess.ID, session.NoChange, "no_change", render.NoChangeReply(sess, ev))
	}
	repoCfg, err := do.RepoConfig(ctx, sess)
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		// The repo's protected paths are in that file: fail closed.
		return do.End(ctx, sess.ID, session.ChangeRefused, "config_invalid", render.ConfigUnparsableRefusal(sess.RequesterLogin))
	}
	if err != nil {
		return err
	}
	// The same check as `inspect run`'s (config.Repo.CheckChange); the
	// owner's .github repository protects the org-wide config too.
	decision, summary := repoCfg.CheckChange(up.Manifest, spec.Limits, sess.RepoName)
	if !decision.Allowed {
		zerolog.Ctx(ctx).Info().Str("reason", string(decision.Reason)).Msg("change refused")
		return do.End(ctx, sess.ID, session.ChangeRefused, string(decision.Reason), render.ChangeRefusedReply(decision))
	}
	// The verdict over the evidence and its comparison with the base
	// (decision 0081): the outcome, its reason, and whether the pull
	// request is ready or a draft.
	v := verdict.Of(ev)
	verified := v.Ready
	if sess.CommitSHA == "" {
		sha, err := do.Commit(ctx, sess, spec, up.Manifest)
		if err != nil {
			return err
		}
		if sess, err = do.Record(ctx, sess.ID, func(x *store.Session) { x.CommitSHA = sha }); err != nil || sess.State() == session.Done {
			return err
		}
	}
	// Before the push, so that every surface after it can link it; a
	// replay signs again only what was not kept.
	if err := do.Attest(ctx, sess, spec, ev); err != nil {
		return err
	}
	if sess.Branch == "" {
		branch, prNumber, err := do.Push(ctx, sess, spec, verified, summary, ev)
		if err != nil {
			return err
		}
		if sess, err = do.Record(ctx, sess.ID, func(x *store.Session) { x.Branch, x.PRNumber = branch, prNumber }); err != nil || sess.State() == session.Done {
			return err
		}
	}
	if !sess.Target().HasHeadAtOnce() && sess.CheckRunID == 0 {
		// An issue session's check run lives on the commit Inspect made. A
		// pull request's or a branch's is on the pinned head, created when
		// the session is announced (decision 0048): one still in flight is
		// concluded by the sync its record queues.
		if sess, err = do.Record(ctx, sess.ID, func(x *store.Session) { x.HeadSHA = x.CommitSHA }); err != nil {
			return err
		}
		id, err := do.CheckRun(ctx, sess)
		if err != nil {
			return err
		}
		if sess, err = do.Record(ctx, sess.ID, func(x *store.Session) { x.CheckRunID = id }); err != nil || sess.State() == session.Done {
			return err
		}
	}
	if v.Outcome == session.VerificationFailed && sess.CheckRunID != 0 {
		do.AnnotateFailures(ctx, sess, spec, ev)
	}
	return do.End(ctx, sess.ID, v.Outcome, v.Reason, render.ChangeReply(sess, verified, ev))
}
