package fates

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Batch bounds the PRs one reconcile pass asks GitHub about: at most four
// requests each (the PR, its reviews, its review comments, its thread; a
// fifth, the issue, for who closed one unmerged), all through the
// outbound limiter. The rest wait for the next pass, oldest checked first.
const Batch = 25

// Stale is how long an open PR's fate goes unchecked before reconcile asks
// GitHub again: webhooks keep it current while a replica is up.
const Stale = 6 * time.Hour

// Reconcile asks GitHub about the fates due a check (open ones not checked
// within Stale, and every one a backfill marked), at most Batch of them:
// what happened while no replica was up. One PR's trouble is logged and
// does not hold up the others; it is tried again on a later pass.
func (r *Recorder) Reconcile(ctx context.Context) error {
	now := r.Now()
	due, err := r.Store.FatesToCheck(ctx, now.Add(-Stale), Batch)
	if err != nil {
		return err
	}
	for _, f := range due {
		log := zerolog.Ctx(ctx).With().Str("repo", f.Repo).Int("pr", f.Number).Str("session_id", f.SessionID).Logger()
		if err := r.reconcileOne(ctx, f); err != nil {
			log.Warn().Err(err).Msg("reconciling the PR's fate failed; trying again on a later pass")
			continue
		}
		if err := r.Store.MarkFateChecked(ctx, f.RepoID, f.Number, now); err != nil {
			return err
		}
	}
	return nil
}

func (r *Recorder) reconcileOne(ctx context.Context, f outcomes.Fate) error {
	gh, err := r.Installation(ctx, f.InstallationID)
	if err != nil {
		return err
	}
	owner, name := splitRepo(f.Repo)
	pr, _, err := gh.PullRequests.Get(ctx, owner, name, f.Number)
	if err != nil {
		return fmt.Errorf("reading the PR: %w", err)
	}
	if created := pr.GetCreatedAt().Time; !created.IsZero() && created.Before(f.OpenedAt) {
		// A backfilled fate took its session's end for its opening.
		if err := r.Store.SetFateOpenedAt(ctx, f.RepoID, f.Number, created.UTC(), r.Now()); err != nil {
			return err
		}
	}
	reviews, _, err := gh.PullRequests.ListReviews(ctx, owner, name, f.Number, &github.ListOptions{PerPage: 100})
	if err != nil {
		return fmt.Errorf("listing reviews: %w", err)
	}
	for _, rv := range reviews {
		ev := outcomes.Event{Kind: outcomes.EventReview, At: rv.GetSubmittedAt().Time, ReviewState: lower(rv.GetState()),
			Actor: r.userActor(rv.GetUser())}
		if _, _, err := r.apply(ctx, f.RepoID, f.Number, fmt.Sprintf("review:%d", rv.GetID()), ev); err != nil {
			return err
		}
	}
	rcs, _, err := gh.PullRequests.ListComments(ctx, owner, name, f.Number, &github.PullRequestListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return fmt.Errorf("listing review comments: %w", err)
	}
	for _, c := range rcs {
		ev := outcomes.Event{Kind: outcomes.EventReviewComment, At: c.GetCreatedAt().Time, Actor: r.userActor(c.GetUser())}
		if _, _, err := r.apply(ctx, f.RepoID, f.Number, fmt.Sprintf("rc:%d", c.GetID()), ev); err != nil {
			return err
		}
	}
	ics, _, err := gh.Issues.ListComments(ctx, owner, name, f.Number, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil {
		return fmt.Errorf("listing comments: %w", err)
	}
	for _, c := range ics {
		ev := outcomes.Event{Kind: outcomes.EventThreadComment, At: c.GetCreatedAt().Time, Actor: r.userActor(c.GetUser())}
		if _, _, err := r.apply(ctx, f.RepoID, f.Number, fmt.Sprintf("ic:%d", c.GetID()), ev); err != nil {
			return err
		}
	}
	switch {
	case pr.GetMerged():
		ev := outcomes.Event{Kind: outcomes.EventClosed, Merged: true, MergeSHA: pr.GetMergeCommitSHA(), At: pr.GetMergedAt().Time,
			Actor: r.userActor(pr.GetMergedBy())}
		_, _, err = r.apply(ctx, f.RepoID, f.Number, "", ev)
	case pr.GetState() == "closed":
		if f.State == outcomes.Closed {
			return nil
		}
		// Who closed it is the issue's closed_by (the PR lacks it).
		issue, _, ierr := gh.Issues.Get(ctx, owner, name, f.Number)
		if ierr != nil {
			return fmt.Errorf("reading who closed the PR: %w", ierr)
		}
		ev := outcomes.Event{Kind: outcomes.EventClosed, At: pr.GetClosedAt().Time, Actor: r.userActor(issue.GetClosedBy())}
		_, _, err = r.apply(ctx, f.RepoID, f.Number, "", ev)
	case f.State == outcomes.Closed:
		_, _, err = r.apply(ctx, f.RepoID, f.Number, "", outcomes.Event{Kind: outcomes.EventReopened, At: pr.GetUpdatedAt().Time})
	}
	return err
}

func (r *Recorder) userActor(u *github.User) outcomes.Actor {
	s := session.Sender{Login: u.GetLogin(), Type: u.GetType()}
	slug := ""
	if r.AppSlug != nil {
		slug = r.AppSlug()
	}
	return actor(s, slug != "" && policy.IsOwnApp(s.Login, s.Type, slug))
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func splitRepo(full string) (string, string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[:i], full[i+1:]
		}
	}
	return full, ""
}
