package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// report turns an attempt's result into the session's end: a validated
// commit through the Git Data API, pushed where ARCHITECTURE.md step 5
// says, a pull request, a review request and, through the final sync, the
// concluded check run and the edited progress comment. Each GitHub write is
// recorded before the next, so a replay continues where it stopped.
//
// report only loads: the session, its attempt's spec and result, and the
// proxy's token counts; it revokes the attempt's read tokens. What happens
// next is decided by reportResult over the reportSteps interface, which
// serviceReport implements against GitHub and the store.
func (s *Service) report(ctx context.Context, w *store.Work) error {
	sess, err := s.store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	if sess.State() != session.Reporting {
		return nil
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Logger()
	ctx = log.WithContext(ctx)
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil {
		return err
	}
	var up contract.ResultUpload
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		return fmt.Errorf("stored result: %w", err)
	}
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		return fmt.Errorf("stored spec: %w", err)
	}
	s.revokeTokens(ctx, a.ID)
	// The model proxy's counts are the app's own, never the supervisor's
	// word: they replace whatever the upload says.
	if used, err := s.store.SessionUsage(ctx, a.ID); err == nil && used.Requests > 0 {
		up.Evidence.Usage = &contract.TokenUsage{Input: used.InputTokens, Output: used.OutputTokens, Total: used.TotalTokens, Requests: int(used.Requests)}
	} else {
		up.Evidence.Usage = nil
	}
	// Likewise the artifacts: what the store received, never the
	// supervisor's word.
	stored, err := s.store.Artifacts(ctx, a.ID)
	if err != nil {
		return err
	}
	up.Evidence.Artifacts = receivedArtifacts(up.Evidence.Artifacts, stored)
	return reportResult(ctx, &serviceReport{s: s}, sess, spec, up)
}

// receivedArtifacts is the evidence's artifact list as the app received
// the files: a collected entry takes the stored size, type and digest, or
// is refused when nothing arrived under its name; the supervisor's
// refusals stay as they are.
func receivedArtifacts(listed []contract.Artifact, stored []store.Artifact) []contract.Artifact {
	byName := make(map[string]store.Artifact, len(stored))
	for _, a := range stored {
		byName[a.Name] = a
	}
	out := make([]contract.Artifact, 0, len(listed))
	for _, l := range listed {
		if l.Refused == "" {
			got, ok := byName[l.Name]
			if !ok {
				l = contract.Artifact{Name: l.Name, Size: l.Size, Refused: "listed by the supervisor, never received"}
			} else {
				l = contract.Artifact{Name: l.Name, Size: got.Size, ContentType: got.ContentType, SHA256: got.SHA256}
			}
		}
		out = append(out, l)
	}
	return out
}

// reportSteps is what the report step does to the world, one verb per
// write, so that reportResult's decisions can be table-tested with a
// plain struct (report_test.go) while serviceReport does them for real.
type reportSteps interface {
	// RepoConfig is the config the session runs under (its protected
	// paths); a *config.RepoConfigError when the file does not parse.
	RepoConfig(ctx context.Context, sess store.Session) (config.Repo, error)
	// Commit makes the commit of the manifest on the pinned commit.
	Commit(ctx context.Context, sess store.Session, spec contract.Spec, m *contract.Manifest) (sha string, err error)
	// Push puts sess.CommitSHA where it belongs (decision 0009) and
	// returns the branch and pull request it is on.
	Push(ctx context.Context, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (branch string, pr int, err error)
	// CheckRun finds or creates the session's check run on sess.HeadSHA.
	CheckRun(ctx context.Context, sess store.Session) (int64, error)
	// AnnotateFailures puts the failing tests on the check run (best
	// effort: it returns nothing).
	AnnotateFailures(ctx context.Context, sess store.Session, ev contract.Evidence)
	// Record stores what a write made (see Service.record).
	Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error)
	// End ends the session with one reply (see Service.end).
	End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error
}

// reportResult decides, from the session as stored and its attempt's
// result, what the report step does, and does it through do:
//   - a run that timed out, was cancelled or failed ends as such;
//   - no change ends no_change with the agent's answer;
//   - an unreadable repo config (it holds the protected paths) or a change
//     policy refuses ends change_refused, and nothing is written;
//   - otherwise: commit, push, (issue sessions) a check run on the commit,
//     (failed verification) annotations, and the end: changed or
//     verification_failed.
//
// Each write is recorded before the next, and a step already recorded
// (a replay) is not done again; a session that ended meanwhile stops here.
func reportResult(ctx context.Context, do reportSteps, sess store.Session, spec contract.Spec, up contract.ResultUpload) error {
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
	verified := verificationPassed(ev)
	if sess.CommitSHA == "" {
		sha, err := do.Commit(ctx, sess, spec, up.Manifest)
		if err != nil {
			return err
		}
		if sess, err = do.Record(ctx, sess.ID, func(x *store.Session) { x.CommitSHA = sha }); err != nil || sess.State() == session.Done {
			return err
		}
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
	if !sess.Target().IsPullRequest() && sess.CheckRunID == 0 {
		// An issue session's check run lives on the commit Inspect made.
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
	if !verified && sess.CheckRunID != 0 {
		do.AnnotateFailures(ctx, sess, ev)
	}
	outcome, reason := session.Changed, "changed"
	if !verified {
		outcome, reason = session.VerificationFailed, "verification_failed"
	}
	return do.End(ctx, sess.ID, outcome, reason, render.ChangeReply(sess, verified, ev))
}

// serviceReport does the report step's writes for real: GitHub through the
// session's installation client (made once, on the first write), the store
// through the Service's transitions.
type serviceReport struct {
	s *Service
	c *github.Client
}

func (r *serviceReport) client(ctx context.Context, sess store.Session) (*github.Client, error) {
	if r.c == nil {
		c, err := r.s.gh.Installation(ctx, sess.InstallationID)
		if err != nil {
			return nil, err
		}
		r.c = c
	}
	return r.c, nil
}

func (r *serviceReport) RepoConfig(ctx context.Context, sess store.Session) (config.Repo, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return config.Repo{}, err
	}
	return r.s.sessionRepoConfig(ctx, c, sess)
}

func (r *serviceReport) Commit(ctx context.Context, sess store.Session, spec contract.Spec, m *contract.Manifest) (string, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return "", err
	}
	return r.s.createCommit(ctx, c, sess, spec, m)
}

func (r *serviceReport) Push(ctx context.Context, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (string, int, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return "", 0, err
	}
	return r.s.push(ctx, c, sess, spec, verified, sum, ev)
}

func (r *serviceReport) CheckRun(ctx context.Context, sess store.Session) (int64, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return 0, err
	}
	// Always search first: a drained attempt's replay is not counted,
	// so the attempt number cannot tell a replay here.
	return r.s.ensureCheckRun(ctx, c, sess, true)
}

func (r *serviceReport) AnnotateFailures(ctx context.Context, sess store.Session, ev contract.Evidence) {
	c, err := r.client(ctx, sess)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("annotating the check run failed")
		return
	}
	r.s.annotateFailures(ctx, c, sess, ev)
}

func (r *serviceReport) Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return r.s.transitions.Record(ctx, id, fn)
}

func (r *serviceReport) End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error {
	return r.s.transitions.End(ctx, id, outcome, reason, reply)
}

func verificationPassed(ev contract.Evidence) bool {
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseVerify && !c.Succeeded() {
			return false
		}
	}
	return true
}

// createCommit builds one tree from the manifest on top of the pinned
// commit's and commits it with no author, so GitHub signs it as the App's
// bot; the requester is credited in a trailer.
func (s *Service) createCommit(ctx context.Context, c *github.Client, sess store.Session, spec contract.Spec, m *contract.Manifest) (string, error) {
	return ghwrite.CommitManifest(ctx, c.Git, sess.RepoOwner, sess.RepoName, spec.PinnedSHA, render.CommitMessage(sess), m.Files)
}

// push puts the commit where it belongs (policy.DecideDestination):
//   - a verified change on a same-repo PR whose head has not moved: onto the
//     PR branch (a fast-forward), as is a follow-up's on Inspect's own PR;
//   - a failed verification, or a moved head: a new draft PR targeting the
//     PR branch (a fork's: the PR's base);
//   - an issue: a new branch and a PR that fixes it;
//   - a branch from the dashboard: a new branch and a PR into that branch,
//     never a push onto it.
func (s *Service) push(ctx context.Context, c *github.Client, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (string, int, error) {
	owner, repo := sess.RepoOwner, sess.RepoName
	target := sess.Target()
	facts := policy.DestinationFacts{IsPR: target.IsPullRequest(), Verified: verified, OnBranch: target.IsBranch()}
	var pr *github.PullRequest
	if target.IsPullRequest() {
		var err error
		if pr, _, err = c.PullRequests.Get(ctx, owner, repo, sess.Number); err != nil {
			return "", 0, fmt.Errorf("reading the pull request: %w", err)
		}
		facts.SameRepo = !policy.IsFork(pr.GetHead().GetRepo().GetFullName(), sess.FullName())
		facts.AlreadyPushed = pr.GetHead().GetSHA() == sess.CommitSHA
		facts.HeadMoved = pr.GetHead().GetSHA() != spec.PinnedSHA
		facts.FollowUp = s.openedByInspect(pr)
	}
	d := policy.DecideDestination(facts)
	switch d.Kind {
	case policy.AlreadyOnPRBranch:
		// An earlier run pushed it and died before recording that.
		return spec.Target.HeadBranch, sess.Number, nil
	case policy.OntoPRBranch:
		ok, err := ghwrite.FastForward(ctx, c.Git, owner, repo, spec.Target.HeadBranch, sess.CommitSHA)
		if err != nil {
			return "", 0, fmt.Errorf("updating the PR branch: %w", err)
		}
		if ok {
			return spec.Target.HeadBranch, sess.Number, nil
		}
		// Not a fast-forward: the head moved after our check.
		facts.HeadMoved = true
		d = policy.DecideDestination(facts)
	}
	base := spec.Target.BaseBranch // the default branch, or a branch session's own (BaseSessionBranch)
	switch d.Base {
	case policy.BasePRBranch:
		base = spec.Target.HeadBranch
	case policy.BasePRBase:
		base = pr.GetBase().GetRef()
	}
	// The id's random tail, not its time-ordered head: two sessions on one
	// thread in the same instant must not share a branch. A branch
	// session's has no number, and never the branch's own name in it.
	branch := fmt.Sprintf("inspect/%d-%s", sess.Number, sess.ID[len(sess.ID)-8:])
	if facts.OnBranch {
		branch = "inspect/branch-" + sess.ID[len(sess.ID)-8:]
	}
	if err := ghwrite.EnsureBranch(ctx, c.Git, owner, repo, branch, sess.CommitSHA); err != nil {
		return "", 0, err
	}
	body := render.PRBody(sess, spec, verified, sum, ev)
	if u := s.sessionURL(sess.ID); u != nil {
		body += "\n\nThe session, live and in full: " + *u
	}
	// As the requester when they signed in to the dashboard, so the PR is
	// theirs; else, or when GitHub refuses their token, as the App.
	prs, asRequester := s.requesterPRs(ctx, sess)
	if !asRequester {
		prs = c.PullRequests
	}
	number, err := s.ensurePR(ctx, prs, sess, branch, base, d, body)
	if errors.Is(err, ghwrite.ErrDraftsNotSupported) {
		// The repository's visibility and its owner's plan allow no
		// drafts: a ready pull request instead, saying what the draft
		// state would have (decision 0009).
		facts.DraftsRefused = true
		d = policy.DecideDestination(facts)
		number, err = s.ensurePR(ctx, prs, sess, branch, base, d, body)
	}
	if err != nil && asRequester && ghwrite.IsAuthRefusal(err) {
		zerolog.Ctx(ctx).Info().Err(err).Msg("GitHub refused the requester's token; the App opens the PR")
		asRequester = false
		number, err = s.ensurePR(ctx, c.PullRequests, sess, branch, base, d, body)
	}
	if err != nil {
		return "", 0, err
	}
	if d.Unverified {
		if err := s.markUnverified(ctx, c, sess, number); err != nil {
			return "", 0, err
		}
	}
	if !asRequester {
		// A PR of the requester's own needs no review request to its
		// author (GitHub refuses one); CODEOWNERS applies to it as to any.
		s.requestReview(ctx, c, sess, number)
	}
	return branch, number, nil
}

// ensurePR opens the session's pull request from head into base as d
// says, or finds the one an earlier try opened (ghwrite.EnsurePR).
func (s *Service) ensurePR(ctx context.Context, prs ghwrite.PullRequestOpener, sess store.Session, head, base string, d policy.Destination, body string) (int, error) {
	title := render.PRTitle(sess)
	if d.Unverified {
		title, body = render.UnverifiedPRTitle(sess), render.UnverifiedPRNote(config.UnverifiedLabel)+body
	}
	return ghwrite.EnsurePR(ctx, prs, sess.RepoOwner, sess.RepoName, &github.NewPullRequest{
		Title: github.String(title), Head: github.String(head), Base: github.String(base),
		Body: github.String(body), Draft: github.Bool(d.Draft),
	})
}

// markUnverified puts the unverified label on pull request number, making
// the label first when the repository lacks it. Both are idempotent.
func (s *Service) markUnverified(ctx context.Context, c *github.Client, sess store.Session, number int) error {
	if err := ghwrite.EnsureLabel(ctx, c.Issues, sess.RepoOwner, sess.RepoName, config.UnverifiedLabel, unverifiedLabelColor,
		"Inspect's change failed verification; not a draft only because the repository takes none"); err != nil {
		return err
	}
	if _, _, err := (ghwrite.DocumentedLabels{Client: c}).AddLabelsToIssue(ctx, sess.RepoOwner, sess.RepoName, number, []string{config.UnverifiedLabel}); err != nil {
		return fmt.Errorf("adding the %s label: %w", config.UnverifiedLabel, err)
	}
	return nil
}

// unverifiedLabelColor is the unverified label's color: GitHub's red.
const unverifiedLabelColor = "d73a4a"

// requestReview asks the requester to review. GitHub refuses a review
// request to a PR's own author (422); the PR body already @-mentions them.
func (s *Service) requestReview(ctx context.Context, c *github.Client, sess store.Session, number int) {
	if err := ghwrite.RequestReview(ctx, c.PullRequests, sess.RepoOwner, sess.RepoName, number, sess.RequesterLogin); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("requesting a review failed")
	}
}

// annotateFailures puts one annotation per failing test (with a file and a
// line) on the check run, so a reviewer sees them in the diff; ghwrite
// sends them in GitHub's batches and cuts each to its limits. Best effort:
// the outcome does not depend on it.
func (s *Service) annotateFailures(ctx context.Context, c *github.Client, sess store.Session, ev contract.Evidence) {
	if ev.Tests == nil {
		return
	}
	var anns []*github.CheckRunAnnotation
	for _, f := range ev.Tests.Failures {
		if f.File == "" || f.Line <= 0 {
			continue
		}
		title, msg := render.FailureAnnotation(f)
		anns = append(anns, &github.CheckRunAnnotation{
			Path: github.String(f.File), StartLine: github.Int(f.Line), EndLine: github.Int(f.Line),
			AnnotationLevel: github.String("failure"), Title: github.String(title), Message: github.String(msg),
		})
	}
	if len(anns) == 0 {
		return
	}
	title, summary := render.FailedTestsCheckRun(*ev.Tests, ev.Egress)
	if err := ghwrite.AnnotateCheckRun(ctx, c.Checks, sess.RepoOwner, sess.RepoName, sess.CheckRunID, CheckRunName, title, summary, anns); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("annotating the check run failed")
	}
}
