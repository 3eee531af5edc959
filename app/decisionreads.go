package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/go-github/v62/github"
	"golang.org/x/sync/errgroup"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
)

// What preparation decides on, read from GitHub side by side (decision
// 0048): the repository, its config from the default branch, the target
// with the pinned head, and the requester's role, with the 👀 beside them.
// GitHub answers each request in about 100 ms; one after another they were
// most of the time from a comment to its agent.

// decisionReads is what prepare decides a session on.
type decisionReads struct {
	repo *github.Repository
	// cfg and cfgErr are the default branch's config as repoconfig.Configs.Load
	// gives them (cfgErr a *config.RepoConfigError for a bad file).
	cfg    config.Repo
	cfgErr error
	target policy.Target
	role   policy.Role
	read   targetRead
}

// readForDecision makes prepare's reads concurrently, and the reaction
// when react is set. The config is read from the default branch this
// process last saw for the repository, beside the repository's own read;
// when the repository names another branch (a first session here, or a
// renamed default branch) it is read again from that one. Only then is it
// cached, so the cache never holds another branch's file.
func (s *Service) readForDecision(ctx context.Context, c *github.Client, sess store.Session, react func(context.Context) error) (decisionReads, error) {
	var out decisionReads
	owner, name := sess.RepoOwner, sess.RepoName
	target := sess.Target()
	fetchStart := s.clock.Now()
	guess := s.defaultBranches.get(sess.RepoID)
	var guessed config.LoadedRepo
	var guessErr error
	g, gctx := errgroup.WithContext(ctx)
	if react != nil {
		g.Go(func() error { return react(gctx) })
	}
	g.Go(func() error {
		repo, _, err := c.Repositories.Get(gctx, owner, name)
		if err != nil {
			return fmt.Errorf("reading the repository: %w", err)
		}
		out.repo = repo
		return nil
	})
	if guess != "" {
		g.Go(func() error {
			guessed, guessErr = s.repoConfigs.Loader.Load(gctx, c, owner, name, guess)
			return nil // judged once the repository says which branch is its default
		})
	}
	g.Go(func() error {
		var err error
		if target.IsBranch() {
			out.target, out.role, out.read.headSHA, err = branchFacts(gctx, c, owner, name, target.BranchName(), sess.RequesterLogin, sess.RequesterType)
		} else {
			out.target, out.role, out.read, err = targetFacts(gctx, c, owner, name, target, sess.RequesterLogin, sess.RequesterType)
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return decisionReads{}, err
	}
	s.defaultBranches.put(sess.RepoID, out.repo.GetDefaultBranch())
	if guess == out.repo.GetDefaultBranch() {
		out.cfg, out.cfgErr = s.repoConfigs.Cache(ctx, sess.RepoID, out.repo, fetchStart, guessed, guessErr)
	} else {
		out.cfg, out.cfgErr = s.repoConfigs.Load(ctx, c, sess.RepoID, out.repo, fetchStart)
	}
	return out, nil
}

// defaultBranchMemo is the default branch each repository had when this
// process last read it: only a guess, which saves a round trip when it is
// right and costs one when it is wrong (readForDecision).
type defaultBranchMemo struct {
	mu sync.Mutex
	m  map[int64]string
}

// maxDefaultBranches bounds the memo; past it, it starts again empty.
const maxDefaultBranches = 10000

func (d *defaultBranchMemo) get(repoID int64) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[repoID]
}

func (d *defaultBranchMemo) put(repoID int64, branch string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxDefaultBranches {
		d.m = map[int64]string{}
	}
	d.m[repoID] = branch
}

// sideBySide runs fns concurrently and returns the first error, once all
// have returned; the context they get is cancelled at the first error.
func sideBySide(ctx context.Context, fns ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, fn := range fns {
		if fn != nil {
			g.Go(func() error { return fn(gctx) })
		}
	}
	return g.Wait()
}
