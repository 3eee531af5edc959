package web

import (
	"context"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
)

// The snapshots page's drift: how many commits a repo's default branch is
// ahead of the commit its newest snapshot was built from, read from
// GitHub's compare API (GET /repos/{owner}/{repo}/compare/{sha}...{branch})
// with the signed-in user's own token, at page time (decision 0041).

const (
	// driftTTL is how long a repo's drift is kept: a page load asks GitHub
	// at most once per repo, and reloads within it ask nothing.
	driftTTL = time.Minute
	// driftReads bounds the compare calls of one page load in flight.
	driftReads = 4
	// driftTimeout bounds one compare call: past it the drift is unknown,
	// and the page does not wait longer.
	driftTimeout = 10 * time.Second
)

// drift is a repo's drift as the page shows it.
type drift struct {
	// Known is false when GitHub did not answer (or the snapshot's commit
	// or branch is not recorded): the page says "drift unknown".
	Known bool
	// Ahead is how many commits Branch has that the snapshot lacks.
	Ahead  int
	Branch string
}

// driftTarget is what one repo's drift is read for.
type driftTarget struct {
	repoID      int64
	owner, name string
	sha, branch string
}

// driftEntry is a drift read from GitHub, kept until until, for sha and
// branch (a new snapshot, or a renamed branch, is read anew).
type driftEntry struct {
	sha, branch string
	d           drift
	until       time.Time
}

// driftCache keeps each repo's last drift, by repo id: one entry per repo
// that has a snapshot, so it never grows past the snapshots list.
type driftCache struct {
	mu      sync.Mutex
	entries map[int64]driftEntry
}

func (c *driftCache) get(t driftTarget, now time.Time) (drift, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[t.repoID]
	if !ok || e.sha != t.sha || e.branch != t.branch || !now.Before(e.until) {
		return drift{}, false
	}
	return e.d, true
}

func (c *driftCache) put(t driftTarget, d drift, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[int64]driftEntry{}
	}
	c.entries[t.repoID] = driftEntry{sha: t.sha, branch: t.branch, d: d, until: now.Add(driftTTL)}
}

// drifts reads the targets' drift, from the cache or from GitHub as the
// viewer, at most driftReads at a time, in the targets' order. A failure
// is an unknown drift, logged, and kept for driftTTL too: GitHub is not
// asked again on every reload while it fails.
func (s *Server) drifts(ctx context.Context, v *viewer, targets []driftTarget) []drift {
	out := make([]drift, len(targets))
	c, err := s.gh.client(ctx, v.UserID, v.token)
	if err != nil {
		s.log.Warn().Err(err).Msg("dashboard: no GitHub client for the drift")
		return out
	}
	sem := make(chan struct{}, driftReads)
	var wg sync.WaitGroup
	for i, t := range targets {
		if d, ok := s.driftCache.get(t, s.now()); ok {
			out[i] = d
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = s.readDrift(ctx, c, v, t)
			if ctx.Err() == nil { // not a page that was left: its failure says nothing of GitHub
				s.driftCache.put(t, out[i], s.now())
			}
		}()
	}
	wg.Wait()
	return out
}

// readDrift asks GitHub how far t's branch is ahead of its snapshot.
func (s *Server) readDrift(ctx context.Context, c *github.Client, v *viewer, t driftTarget) drift {
	ctx, cancel := context.WithTimeout(ctx, driftTimeout)
	defer cancel()
	// One commit per page: only the counts are wanted, not the list.
	cmp, _, err := c.Repositories.CompareCommits(ctx, t.owner, t.name, t.sha, t.branch, &github.ListOptions{PerPage: 1})
	if err != nil {
		s.log.Warn().Err(err).Str("login", v.Login).Str("repo", t.owner+"/"+t.name).Msg("dashboard: reading the default branch's drift failed")
		return drift{Branch: t.branch}
	}
	return drift{Known: true, Ahead: cmp.GetAheadBy(), Branch: t.branch}
}
