// Package fates is the engine's side of what became of the PRs Inspect
// opened (issue 38, decision 0074): the webhooks' news applied to their
// fates (Recorder, the handlers' FateSink), and the bounded reconcile
// through the API for what happened while no replica was up, which is also
// how a backfill is done. The rules are app/outcomes'; the store keeps the
// fates and the rollup in one transaction (decision 0075).
package fates

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/session"
)

// Counter counts a fate's event by its kind and the PR's trigger, preset
// and model (the Prometheus counter; no per-user label).
type Counter func(kind, trigger, preset, model string)

// Recorder applies news to fates. It implements handlers.FateSink.
type Recorder struct {
	Store *store.Store
	Now   func() time.Time
	Count Counter
	// Installation is the installation's GitHub client (outbound-limited).
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// AppSlug is our App's, so its own closes read as Inspect's.
	AppSlug func() string
}

var _ handlers.FateSink = (*Recorder)(nil)

func (r *Recorder) count(kind string, f outcomes.Fate) {
	if r.Count != nil {
		r.Count(kind, f.Trigger, f.Preset, f.Model)
	}
}

// apply applies ev to the PR's fate once (seen), counting what changed. A
// PR Inspect did not open is no error.
func (r *Recorder) apply(ctx context.Context, repoID int64, number int, seen string, ev outcomes.Event) (outcomes.Fate, bool, error) {
	if ev.At.IsZero() {
		ev.At = r.Now()
	}
	// Most pull requests' news is of PRs Inspect did not open: a read
	// (SQLite's reader pool) says so without taking the writer, which the
	// webhooks' acknowledgements share.
	if _, err := r.Store.GetFate(ctx, repoID, number); errors.Is(err, store.ErrNotFound) {
		return outcomes.Fate{}, false, nil
	} else if err != nil {
		return outcomes.Fate{}, false, &handlers.StoreError{Err: err}
	}
	before, after, changed, err := r.Store.ApplyFateEvent(ctx, repoID, number, seen, ev, r.Now())
	if errors.Is(err, store.ErrNotFound) {
		return after, false, nil
	}
	if err != nil {
		return after, false, &handlers.StoreError{Err: err}
	}
	if changed {
		r.count(eventName(before, after, ev), after)
		zerolog.Ctx(ctx).Info().Str("repo", after.Repo).Int("pr", number).Str("session_id", after.SessionID).
			Str("event", string(ev.Kind)).Str("state", string(after.State)).Msg("PR fate changed")
	}
	return after, changed, nil
}

// eventName is the counter's kind for a change: a close by what it became.
func eventName(before, after outcomes.Fate, ev outcomes.Event) string {
	switch {
	case ev.Kind == outcomes.EventClosed && after.State == outcomes.Merged:
		return "merged"
	case ev.Kind == outcomes.EventClosed && after.Withdrawn:
		return "withdrawn"
	case ev.Kind == outcomes.EventReview && after.ReviewRounds > before.ReviewRounds:
		return "review_round"
	}
	return string(ev.Kind)
}

// actor is the news's actor as outcomes judge them.
func actor(s session.Sender, byInspect bool) outcomes.Actor {
	return outcomes.Actor{Login: s.Login, Bot: s.Type == "Bot", Inspect: byInspect}
}

// AcceptPullRequestNews implements handlers.FateSink.
func (r *Recorder) AcceptPullRequestNews(ctx context.Context, n session.PullRequestNews) error {
	ev := outcomes.Event{At: n.At, Actor: actor(n.Actor, n.ByInspect)}
	seen := ""
	switch n.Kind {
	case session.NewsClosed:
		ev.Kind, ev.Merged, ev.MergeSHA = outcomes.EventClosed, n.Merged, n.MergeSHA
	case session.NewsReopened:
		ev.Kind = outcomes.EventReopened
	case session.NewsReview:
		ev.Kind, ev.ReviewState, seen = outcomes.EventReview, n.ReviewState, fmt.Sprintf("review:%d", n.ItemID)
	case session.NewsReviewComment:
		ev.Kind, seen = outcomes.EventReviewComment, fmt.Sprintf("rc:%d", n.ItemID)
	case session.NewsThreadComment:
		ev.Kind, seen = outcomes.EventThreadComment, fmt.Sprintf("ic:%d", n.ItemID)
	default:
		return nil
	}
	if _, _, err := r.apply(ctx, n.Repo.ID, n.Number, seen, ev); err != nil {
		return err
	}
	if n.Kind != session.NewsClosed || !n.Merged {
		return nil
	}
	// A merged revert PR ("Reverts owner/repo#N", as GitHub's button
	// writes it) reverts N, whoever opened it.
	for _, reverted := range outcomes.RevertedPRs(n.Body, n.Repo.FullName()) {
		ev := outcomes.Event{Kind: outcomes.EventReverted, At: n.At, RevertedBy: fmt.Sprintf("pr:%s#%d", n.Repo.FullName(), n.Number)}
		if _, _, err := r.apply(ctx, n.Repo.ID, reverted, "", ev); err != nil {
			return err
		}
	}
	return nil
}

// AcceptDefaultBranchCommits implements handlers.FateSink: a commit whose
// message says "This reverts commit <sha>" reverts the PR merged as sha;
// the others are queued to be compared, by their patches, with the PRs
// merged in the 30 days before them (CheckReverts), when there are any.
func (r *Recorder) AcceptDefaultBranchCommits(ctx context.Context, c session.DefaultBranchCommits) error {
	check := revertCheck{RepoID: c.Repo.ID, Repo: c.Repo.FullName(), InstallationID: c.InstallationID}
	for _, cm := range c.Commits {
		shas := outcomes.RevertedCommits(cm.Message)
		if len(shas) == 0 {
			if len(cm.Paths) > 0 && cm.SHA != "" && len(check.Commits) < maxRevertCommits {
				at := cm.At
				if at.IsZero() {
					at = r.Now()
				}
				check.Commits = append(check.Commits, pushedCommit{SHA: cm.SHA, At: at, Paths: cm.Paths})
			}
			continue
		}
		fates, err := r.Store.FatesMergedAs(ctx, c.Repo.ID, shas)
		if err != nil {
			return &handlers.StoreError{Err: err}
		}
		for _, f := range fates {
			ev := outcomes.Event{Kind: outcomes.EventReverted, At: cm.At, RevertedBy: "commit:" + cm.SHA}
			if _, _, err := r.apply(ctx, f.RepoID, f.Number, "", ev); err != nil {
				return err
			}
		}
	}
	return r.queueRevertCheck(ctx, check)
}

// BackfillInstallation implements handlers.FateSink: the installation's
// PRs are marked for reconcile's next passes, which read them from the API
// within the outbound limits.
func (r *Recorder) BackfillInstallation(ctx context.Context, installationID int64) error {
	n, err := r.Store.BackfillFates(ctx, installationID, r.Now())
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	zerolog.Ctx(ctx).Info().Int64("installation_id", installationID).Int("fates_created", n).Msg("PR fates queued for a backfill")
	return nil
}
