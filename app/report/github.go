package report

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/gather"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// githubSteps does the report step's writes for real: GitHub through the
// session's installation client (made once, on the first write), the store
// through the Handler's transitions.
type githubSteps struct {
	h *Handler
	c *github.Client
}

func (r *githubSteps) client(ctx context.Context, sess store.Session) (*github.Client, error) {
	if r.c == nil {
		c, err := r.h.Installation(ctx, sess.InstallationID)
		if err != nil {
			return nil, err
		}
		r.c = c
	}
	return r.c, nil
}

func (r *githubSteps) RepoConfig(ctx context.Context, sess store.Session) (config.Repo, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return config.Repo{}, err
	}
	return r.h.RepoConfig(ctx, c, sess)
}

func (r *githubSteps) Commit(ctx context.Context, sess store.Session, spec contract.Spec, m *contract.Manifest) (string, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return "", err
	}
	return r.h.createCommit(ctx, c, sess, spec, m)
}

func (r *githubSteps) Push(ctx context.Context, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (string, int, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return "", 0, err
	}
	return r.h.push(ctx, c, sess, spec, verified, sum, ev)
}

func (r *githubSteps) Attest(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) error {
	if r.h.Attest == nil {
		return nil
	}
	return r.h.Attest(ctx, sess, spec, ev)
}

func (r *githubSteps) CheckRun(ctx context.Context, sess store.Session) (int64, error) {
	c, err := r.client(ctx, sess)
	if err != nil {
		return 0, err
	}
	// Always search first: a drained attempt's replay is not counted,
	// so the attempt number cannot tell a replay here.
	return r.h.EnsureCheckRun(ctx, c, sess, true)
}

func (r *githubSteps) AnnotateFailures(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) {
	c, err := r.client(ctx, sess)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("annotating the check run failed")
		return
	}
	r.h.annotateFailures(ctx, c, sess, spec, ev)
}

func (r *githubSteps) Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error) {
	return r.h.Transitions.Record(ctx, id, fn)
}

func (r *githubSteps) End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error {
	return r.h.Transitions.End(ctx, id, outcome, reason, reply)
}

// createCommit builds one tree from the manifest on top of the pinned
// commit's and commits it with no author, so GitHub signs it as the App's
// bot; the requester is credited in a trailer.
func (h *Handler) createCommit(ctx context.Context, c *github.Client, sess store.Session, spec contract.Spec, m *contract.Manifest) (string, error) {
	// Everyone who asked the conversation for something is credited
	// (decision 0071).
	turns, err := h.Store.ConversationTurns(ctx, sess)
	if err != nil {
		return "", err
	}
	return ghwrite.CommitManifest(ctx, c.Git, sess.RepoOwner, sess.RepoName, spec.PinnedSHA, render.CommitMessageWith(sess, turns), m.Files)
}

// push puts the commit where it belongs (policy.DecideDestination):
//   - a verified change on a same-repo PR whose head has not moved: onto the
//     PR branch (a fast-forward), as is a follow-up's on Inspect's own PR;
//   - a failed verification, or a moved head: a new draft PR targeting the
//     PR branch (a fork's: the PR's base);
//   - an issue: a new branch and a PR that fixes it;
//   - a branch from the dashboard: a new branch and a PR into that branch,
//     never a push onto it.
func (h *Handler) push(ctx context.Context, c *github.Client, sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence) (string, int, error) {
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
		facts.FollowUp = gather.OpenedByInspect(pr, h.BotLogin())
	}
	d := policy.DecideDestination(facts)
	switch d.Kind {
	case policy.AlreadyOnPRBranch:
		// An earlier run pushed it and died before recording that.
		if facts.FollowUp {
			h.refreshTurns(ctx, c, sess, pr)
		}
		return spec.Target.HeadBranch, sess.Number, nil
	case policy.OntoPRBranch:
		ok, err := ghwrite.FastForward(ctx, c.Git, owner, repo, spec.Target.HeadBranch, sess.CommitSHA)
		if err != nil {
			return "", 0, fmt.Errorf("updating the PR branch: %w", err)
		}
		if ok {
			if facts.FollowUp {
				h.refreshTurns(ctx, c, sess, pr)
			}
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
	body := render.PRBody(sess, spec, verified, sum, ev, h.extras(ctx, sess, spec, ev))
	turns, err := h.Store.ConversationTurns(ctx, sess)
	if err != nil {
		return "", 0, err
	}
	if t := render.TurnsSection(turns); t != "" {
		body += "\n\n" + t
	}
	// As the requester when they signed in to the dashboard, so the PR is
	// theirs; else, or when GitHub refuses their token, as the App.
	prs, asRequester := h.RequesterPRs(ctx, sess)
	if !asRequester {
		prs = c.PullRequests
	}
	number, err := h.ensurePR(ctx, prs, sess, branch, base, d, body, ev)
	if errors.Is(err, ghwrite.ErrDraftsNotSupported) {
		// The repository's visibility and its owner's plan allow no
		// drafts: a ready pull request instead, saying what the draft
		// state would have (decision 0009).
		facts.DraftsRefused = true
		d = policy.DecideDestination(facts)
		number, err = h.ensurePR(ctx, prs, sess, branch, base, d, body, ev)
	}
	if err != nil && asRequester && ghwrite.IsUserTokenRefusal(err) {
		// Revoked, not allowed to write, or (404) unable to see the
		// private repository: the App opens it in this same report, and
		// its body says whose it is and why.
		zerolog.Ctx(ctx).Info().Err(err).Msg("GitHub refused the requester's token; the App opens the PR")
		asRequester = false
		body += render.OpenedByTheAppNote(sess.RequesterLogin)
		number, err = h.ensurePR(ctx, c.PullRequests, sess, branch, base, d, body, ev)
	}
	if err != nil {
		return "", 0, err
	}
	if d.Unverified {
		if err := h.markUnverified(ctx, c, sess, number); err != nil {
			return "", 0, err
		}
	}
	if !asRequester {
		// A PR of the requester's own needs no review request to its
		// author (GitHub refuses one); CODEOWNERS applies to it as to any.
		h.requestReview(ctx, c, sess, number)
	}
	return branch, number, nil
}

// refreshTurns rewrites the turns list in the body of pr, a pull request
// an earlier session of the conversation opened, now that sess pushed onto
// it: the list is the whole conversation's again (decision 0072). Only
// Inspect's own pull requests: a person's body is theirs. Best effort: the
// push is done, and the session's page lists the turns anyway.
func (h *Handler) refreshTurns(ctx context.Context, c *github.Client, sess store.Session, pr *github.PullRequest) {
	turns, err := h.Store.ConversationTurns(ctx, sess)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("reading the conversation's turns for the PR body failed")
		return
	}
	body := render.WithTurns(pr.GetBody(), render.TurnsSection(turns))
	if body == pr.GetBody() {
		return
	}
	if _, _, err := c.PullRequests.Edit(ctx, sess.RepoOwner, sess.RepoName, pr.GetNumber(), &github.PullRequest{Body: github.String(body)}); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("pr", pr.GetNumber()).Msg("rewriting the PR body's turns failed")
	}
}

// ensurePR opens the session's pull request from head into base as d
// says, or finds the one an earlier try opened (ghwrite.EnsurePR). An
// unverified one's title and note say why, by the verdict over ev.
func (h *Handler) ensurePR(ctx context.Context, prs ghwrite.PullRequestOpener, sess store.Session, head, base string, d policy.Destination, body string, ev contract.Evidence) (int, error) {
	title := render.PRTitle(sess)
	if d.Unverified {
		reason := verdict.Of(ev).Reason
		title, body = render.UnverifiedPRTitle(sess, reason), render.UnverifiedPRNote(config.UnverifiedLabel, reason)+body
	}
	return ghwrite.EnsurePR(ctx, prs, sess.RepoOwner, sess.RepoName, &github.NewPullRequest{
		Title: github.String(title), Head: github.String(head), Base: github.String(base),
		Body: github.String(body), Draft: github.Bool(d.Draft),
	})
}

// markUnverified puts the unverified label on pull request number, making
// the label first when the repository lacks it. Both are idempotent.
func (h *Handler) markUnverified(ctx context.Context, c *github.Client, sess store.Session, number int) error {
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
func (h *Handler) requestReview(ctx context.Context, c *github.Client, sess store.Session, number int) {
	if err := ghwrite.RequestReview(ctx, c.PullRequests, sess.RepoOwner, sess.RepoName, number, sess.RequesterLogin); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("requesting a review failed")
	}
}

// annotateFailures puts one annotation per failing test (with a file and a
// line) on the check run, so a reviewer sees them in the diff; ghwrite
// sends them in GitHub's batches and cuts each to its limits. Best effort:
// the outcome does not depend on it.
func (h *Handler) annotateFailures(ctx context.Context, c *github.Client, sess store.Session, spec contract.Spec, ev contract.Evidence) {
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
	title, summary := render.FailedTestsCheckRun(ev, h.extras(ctx, sess, spec, ev))
	if err := ghwrite.AnnotateCheckRun(ctx, c.Checks, sess.RepoOwner, sess.RepoName, sess.CheckRunID, h.CheckRunName, title, summary, anns); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("annotating the check run failed")
	}
}
