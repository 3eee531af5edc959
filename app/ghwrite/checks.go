package ghwrite

import (
	"context"
	"fmt"

	"github.com/google/go-github/v62/github"
)

// CheckRunLister is what FindCheckRun needs of *github.ChecksService.
type CheckRunLister interface {
	ListCheckRunsForRef(ctx context.Context, owner, repo, ref string, opts *github.ListCheckRunsOptions) (*github.ListCheckRunsResults, *github.Response, error)
}

// CheckRunCreator is what EnsureCheckRun needs of *github.ChecksService.
type CheckRunCreator interface {
	CheckRunLister
	CreateCheckRun(ctx context.Context, owner, repo string, opts github.CreateCheckRunOptions) (*github.CheckRun, *github.Response, error)
}

// CheckRunUpdater is what the check-run updates need of
// *github.ChecksService.
type CheckRunUpdater interface {
	UpdateCheckRun(ctx context.Context, owner, repo string, checkRunID int64, opts github.UpdateCheckRunOptions) (*github.CheckRun, *github.Response, error)
}

// FindCheckRun finds our check run called name on sha by its external id
// (the session's). It returns 0 when there is none.
func FindCheckRun(ctx context.Context, checks CheckRunLister, owner, repo, sha, name, externalID string) (int64, error) {
	// filter=all: the default, latest, keeps only the newest run of each
	// name, and ours may not be the newest Inspect run on the commit.
	opts := &github.ListCheckRunsOptions{CheckName: github.String(name), Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return 0, fmt.Errorf("listing check runs: %w", err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == externalID {
				return cr.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}

// EnsureCheckRun creates the check run opts describes, unless this may be
// a replay and one with its name and external id is on its head SHA
// already. It returns the check run's id.
func EnsureCheckRun(ctx context.Context, checks CheckRunCreator, owner, repo string, opts github.CreateCheckRunOptions, mayBeReplay bool) (int64, error) {
	if mayBeReplay {
		id, err := FindCheckRun(ctx, checks, owner, repo, opts.HeadSHA, opts.Name, opts.GetExternalID())
		if err != nil || id != 0 {
			return id, err
		}
	}
	opts.Output = cutOutput(opts.Output)
	cr, _, err := checks.CreateCheckRun(ctx, owner, repo, opts)
	if err != nil {
		return 0, fmt.Errorf("creating the check run: %w", err)
	}
	return cr.GetID(), nil
}

// StartCheckRun marks check run id in progress, with the rest of opts.
// Updating a check run to what it says already is harmless, so a replay
// needs no search.
func StartCheckRun(ctx context.Context, checks CheckRunUpdater, owner, repo string, id int64, opts github.UpdateCheckRunOptions) error {
	opts.Status = github.String("in_progress")
	opts.Output = cutOutput(opts.Output)
	if _, _, err := checks.UpdateCheckRun(ctx, owner, repo, id, opts); err != nil {
		return fmt.Errorf("marking the check run in progress: %w", err)
	}
	return nil
}

// ConcludeCheckRun completes check run id with opts' conclusion and the
// rest of opts.
func ConcludeCheckRun(ctx context.Context, checks CheckRunUpdater, owner, repo string, id int64, opts github.UpdateCheckRunOptions) error {
	opts.Status = github.String("completed")
	opts.Output = cutOutput(opts.Output)
	if _, _, err := checks.UpdateCheckRun(ctx, owner, repo, id, opts); err != nil {
		return fmt.Errorf("concluding the check run: %w", err)
	}
	return nil
}

// MaxAnnotations is how many annotations GitHub takes in one request:
// "No more than 50 items are allowed; 51 were supplied."
const MaxAnnotations = 50

// AnnotateCheckRun puts anns on check run id, called name, with output
// title and summary, MaxAnnotations to a request: GitHub adds each
// update's annotations to the run's. It stops at the first refusal and
// returns GitHub's error, not wrapped: annotations are best effort, and the
// caller logs it.
func AnnotateCheckRun(ctx context.Context, checks CheckRunUpdater, owner, repo string, id int64, name, title, summary string, anns []*github.CheckRunAnnotation) error {
	for len(anns) > 0 {
		batch := anns[:min(len(anns), MaxAnnotations)]
		anns = anns[len(batch):]
		_, _, err := checks.UpdateCheckRun(ctx, owner, repo, id, github.UpdateCheckRunOptions{
			Name: name,
			Output: cutOutput(&github.CheckRunOutput{
				Title:       github.String(title),
				Summary:     github.String(summary),
				Annotations: batch,
			}),
		})
		if err != nil {
			return err
		}
	}
	return nil
}
