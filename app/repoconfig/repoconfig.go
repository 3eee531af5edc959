// Package repoconfig reads a repo's .github/inspect.yml for the engine:
// the cache the webhook path decides from (Cached, with memoised parses),
// the fresh read every session and config push makes (Load), the config a
// session runs under (ForSession), and the refresh after a push that
// changed it (RefreshFromPush, the refresh_repo_config work). Loading
// never schedules anything by itself: the callers that read a good config
// keep the snapshot schedule in step explicitly (Schedule), so that no
// read hides a write.
//
// It must not import package app: the engine builds one Configs in
// NewService and hands it to whoever reads a repo's config.
package repoconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

// Store is the repo-config cache in the store (*store.Store).
type Store interface {
	CachedRepoConfig(ctx context.Context, repoID int64, now time.Time) (store.RepoConfigEntry, bool, error)
	PutRepoConfig(ctx context.Context, e store.RepoConfigEntry) error
	ForgetOwnerDefaults(ctx context.Context, owner string) error
}

// Configs is the engine's reader of repo configs. Build it with its
// fields set and use it by pointer: it memoises parses.
type Configs struct {
	Store Store
	// Loader reads the file from GitHub (config.NewRepoLoader).
	Loader *config.RepoLoader
	// Now is the engine's clock.
	Now func() time.Time
	// MaxAge is repo_config_max_age: an older cache entry is a miss.
	MaxAge time.Duration
	// Installation is a client for an installation (ghclient), for a
	// push's refresh.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// Schedule keeps the repo's snapshot schedule in step with a config
	// just read (snapshots.Scheduler.Schedule).
	Schedule func(ctx context.Context, installationID, repoID int64, fullName string, cfg config.Repo) error

	parsed parsedConfigs
}

// Cached is the repo's config as the cache knows it, for decisions in the
// request: known is false on a miss (a row older than MaxAge, or one that
// no longer parses, counts as one), and then the caller errs on the side
// of accepting. The result is shared with the memo: read it, never change
// it.
func (r *Configs) Cached(ctx context.Context, repoID int64) (cfg config.Repo, known bool, err error) {
	now := r.Now()
	entry, found, err := r.Store.CachedRepoConfig(ctx, repoID, now)
	if err != nil || !found {
		return config.Repo{}, false, err
	}
	if now.Sub(entry.FetchedAt) >= r.MaxAge {
		// Too old to refuse on: the push that changed the file may have
		// been lost. Accepting lets the worker read it again, which
		// refreshes the entry for the events after.
		return config.Repo{}, false, nil
	}
	switch entry.Status {
	case store.ConfigDefaults:
		return config.Repo{}, true, nil
	case store.ConfigFile:
		cfg, ok := r.parsed.get(entry)
		return cfg, ok, nil
	}
	return config.Repo{}, false, nil
}

// Load reads the config from the default branch and refreshes the cache,
// as every session does. It does nothing else: each caller that read a
// good config keeps the snapshot schedule in step with it itself
// (Schedule). fetchStart orders concurrent refreshes (see
// store.PutRepoConfig).
func (r *Configs) Load(ctx context.Context, c *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error) {
	loaded, err := r.Loader.Load(ctx, c, repo.GetOwner().GetLogin(), repo.GetName(), repo.GetDefaultBranch())
	return r.Cache(ctx, repoID, repo, fetchStart, loaded, err)
}

// Cache refreshes the cache with what the loader read from repo's default
// branch (loaded, or its error err) and returns it as Load does.
func (r *Configs) Cache(ctx context.Context, repoID int64, repo *github.Repository, fetchStart time.Time, loaded config.LoadedRepo, err error) (config.Repo, error) {
	entry := store.RepoConfigEntry{RepoID: repoID, FullName: repo.GetFullName(), FetchedAt: fetchStart}
	var cfgErr *config.RepoConfigError
	switch {
	case errors.As(err, &cfgErr):
		entry.Status, entry.Source, entry.Error = store.ConfigInvalid, cfgErr.Source, cfgErr.Error()
	case err != nil:
		return config.Repo{}, err
	case loaded.Source == "":
		entry.Status = store.ConfigDefaults
	default:
		entry.Status, entry.Source, entry.Content = store.ConfigFile, loaded.Source, string(loaded.Raw)
	}
	if putErr := r.Store.PutRepoConfig(ctx, entry); putErr != nil {
		return config.Repo{}, putErr
	}
	return loaded.Config, err
}

// ForSession is the repo config a session runs under: the cached entry
// (prepare refreshed it), or, when the cache lost it meanwhile (an
// org-wide push drops inherited entries), a fresh read. A file that does
// not parse is a *config.RepoConfigError; callers fail closed on it.
func (r *Configs) ForSession(ctx context.Context, c *github.Client, sess store.Session) (config.Repo, error) {
	entry, found, err := r.Store.CachedRepoConfig(ctx, sess.RepoID, r.Now())
	if err != nil {
		return config.Repo{}, err
	}
	if !found {
		repo, _, err := c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
		if err != nil {
			return config.Repo{}, fmt.Errorf("reading the repository: %w", err)
		}
		cfg, err := r.Load(ctx, c, sess.RepoID, repo, r.Now())
		if err != nil {
			return config.Repo{}, err
		}
		if err := r.Schedule(ctx, sess.InstallationID, sess.RepoID, repo.GetFullName(), cfg); err != nil {
			return config.Repo{}, err
		}
		return cfg, nil
	}
	if entry.Status == store.ConfigInvalid {
		return config.Repo{}, &config.RepoConfigError{Source: entry.Source, Path: ".github/inspect.yml", Err: errors.New(entry.Error)}
	}
	cfg, err := config.ParseRepo([]byte(entry.Content))
	if err != nil {
		return config.Repo{}, &config.RepoConfigError{Source: entry.Source, Path: ".github/inspect.yml", Err: err}
	}
	return cfg, nil
}
