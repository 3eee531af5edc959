package fates

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/handlers"
)

// The third way a revert is found (decision 0074): a commit on the default
// branch whose patch undoes a merged PR's, with no word of it in its
// message. It needs the API, so a push queues it (check_revert) and a
// worker compares, bounded: at most maxRevertCommits of a push's commits,
// each against the maxRevertCandidates PRs merged last within the 30 days
// before it, and a patch is read only for a PR whose merge commit touches
// one of the commit's files (at most one GET per merge commit and per
// pushed commit: 40 a push).
const (
	maxRevertCommits    = 20
	maxRevertCandidates = 20
)

type pushedCommit struct {
	SHA   string    `json:"sha"`
	At    time.Time `json:"at"`
	Paths []string  `json:"paths"`
}

// revertCheck is a check_revert work item's payload.
type revertCheck struct {
	RepoID         int64          `json:"repo_id"`
	Repo           string         `json:"repo"`
	InstallationID int64          `json:"installation_id"`
	Commits        []pushedCommit `json:"commits"`
}

// queueRevertCheck queues c when some PR Inspect opened was merged in the
// 30 days before its first commit and is not reverted.
func (r *Recorder) queueRevertCheck(ctx context.Context, c revertCheck) error {
	if len(c.Commits) == 0 {
		return nil
	}
	first := c.Commits[0].At
	for _, cm := range c.Commits {
		if cm.At.Before(first) {
			first = cm.At
		}
	}
	merged, err := r.Store.MergedFatesSince(ctx, c.RepoID, first.Add(-outcomes.RevertWindow), 1)
	if err != nil {
		return &handlers.StoreError{Err: err}
	}
	if len(merged) == 0 {
		return nil
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := r.Store.Enqueue(ctx, store.NewWork{Kind: store.CheckRevert, Payload: string(payload)}, r.Now()); err != nil {
		return &handlers.StoreError{Err: err}
	}
	return nil
}

// CheckReverts is the check_revert handler.
func (r *Recorder) CheckReverts(ctx context.Context, w *store.Work) error {
	var c revertCheck
	if err := json.Unmarshal([]byte(w.Payload), &c); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("a check_revert payload that does not decode; dropped")
		return nil // retrying cannot mend it
	}
	first := time.Time{}
	for _, cm := range c.Commits {
		if first.IsZero() || cm.At.Before(first) {
			first = cm.At
		}
	}
	candidates, err := r.Store.MergedFatesSince(ctx, c.RepoID, first.Add(-outcomes.RevertWindow), maxRevertCandidates)
	if err != nil || len(candidates) == 0 {
		return err
	}
	gh, err := r.Installation(ctx, c.InstallationID)
	if err != nil {
		return err
	}
	owner, name := splitRepo(c.Repo)
	files := map[string][]outcomes.FilePatch{}
	patches := func(sha string) ([]outcomes.FilePatch, error) {
		if fp, ok := files[sha]; ok {
			return fp, nil
		}
		commit, _, err := gh.Repositories.GetCommit(ctx, owner, name, sha, &github.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading commit %s: %w", sha, err)
		}
		var fp []outcomes.FilePatch
		for _, f := range commit.Files {
			fp = append(fp, outcomes.FilePatch{Path: f.GetFilename(), Patch: f.GetPatch()})
		}
		files[sha] = fp
		return fp, nil
	}
	for _, cm := range c.Commits {
		for _, f := range candidates {
			if cm.At.Before(f.MergedAt) || !outcomes.WithinRevertWindow(f.MergedAt, cm.At) || cm.SHA == f.MergeSHA {
				continue
			}
			merged, err := patches(f.MergeSHA)
			if err != nil {
				return err
			}
			if !touchesAny(merged, cm.Paths) {
				continue
			}
			pushed, err := patches(cm.SHA)
			if err != nil {
				return err
			}
			if !outcomes.IsReverse(merged, pushed) {
				continue
			}
			ev := outcomes.Event{Kind: outcomes.EventReverted, At: cm.At, RevertedBy: "patch:" + cm.SHA}
			if _, _, err := r.apply(ctx, f.RepoID, f.Number, "", ev); err != nil {
				return err
			}
		}
	}
	return nil
}

func touchesAny(files []outcomes.FilePatch, paths []string) bool {
	for _, f := range files {
		if slices.Contains(paths, f.Path) {
			return true
		}
	}
	return false
}
