package handlers

import (
	"context"
	"slices"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/session"
)

// Push handles `push`: a change to the repo config on the default branch
// refreshes the repo-config cache.
type Push struct {
	Sink Sink
	// Fates, when set, reads the default branch's new commits for
	// reverts of PRs Inspect opened.
	Fates FateSink
}

// Handles implements githubapp.EventHandler.
func (h *Push) Handles() []string { return []string{"push"} }

// Handle implements githubapp.EventHandler.
func (h *Push) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev pushPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	repo := session.Repo{
		ID:            ev.Repository.ID,
		Owner:         ev.Repository.Owner.Login,
		Name:          ev.Repository.Name,
		DefaultBranch: ev.Repository.DefaultBranch,
	}
	if repo.Owner == "" {
		// Push payloads name the owner in `name` rather than `login`.
		repo.Owner = ev.Repository.Owner.Name
	}
	if repo.DefaultBranch == "" || ev.Ref != "refs/heads/"+repo.DefaultBranch || ev.Deleted {
		return nil
	}
	if repo.ID != 0 {
		h.Sink.DefaultBranchMoved(ctx, repo)
	}
	if h.Fates != nil && repo.ID != 0 && ev.Installation.ID != 0 && len(ev.Commits) > 0 {
		c := session.DefaultBranchCommits{DeliveryID: deliveryID, Repo: repo, InstallationID: ev.Installation.ID}
		for _, pc := range ev.Commits {
			paths := append(append(slices.Clone(pc.Added), pc.Modified...), pc.Removed...)
			c.Commits = append(c.Commits, session.PushedCommit{SHA: pc.ID, Message: pc.Message, At: firstTime(pc.Timestamp), Paths: paths})
		}
		if err := h.Fates.AcceptDefaultBranchCommits(ctx, c); err != nil {
			return err
		}
	}
	orgWide := repo.Name == ".github"
	if !touchesConfig(ev, orgWide) {
		return nil
	}
	p := session.ConfigPush{DeliveryID: deliveryID, Repo: repo, InstallationID: ev.Installation.ID, OrgWide: orgWide}
	if repo.ID == 0 || repo.Owner == "" || p.InstallationID == 0 || deliveryID == "" {
		return payloadErrorf("push is missing its repository, installation or delivery id")
	}
	return h.Sink.AcceptConfigPush(ctx, p)
}

// maxListedCommits is the most commits a push payload lists.
const maxListedCommits = 2048

// touchesConfig reports whether any commit added, changed or removed a
// config file. A push whose payload lists no commits (GitHub omits them for
// very large pushes) is assumed to touch it: a needless refresh is cheap, a
// stale cache is not.
func touchesConfig(ev pushPayload, orgWide bool) bool {
	// A force-push may have dropped a commit that changed the config, and
	// GitHub lists at most 2048 commits: in both cases the list cannot prove
	// the config is untouched.
	if len(ev.Commits) == 0 || len(ev.Commits) >= maxListedCommits || ev.Forced {
		return true
	}
	paths := slices.Clone(config.RepoConfigPaths)
	if orgWide {
		// The org fallback lives at the repo root of `.github` (appconfig
		// strips the `.github/` prefix), and the repo's own file may be there too.
		for _, p := range config.RepoConfigPaths {
			paths = append(paths, strings.TrimPrefix(p, ".github/"))
		}
	}
	for _, c := range ev.Commits {
		for _, list := range [][]string{c.Added, c.Modified, c.Removed} {
			for _, f := range list {
				for _, p := range paths {
					if f == p {
						return true
					}
				}
			}
		}
	}
	return false
}
