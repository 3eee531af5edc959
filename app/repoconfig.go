package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/session"
)

// Reading a repo's .github/inspect.yml: the cache the webhook path decides
// from (cachedRepoConfig, memoised parses), the fresh read every session and
// config push makes (loadRepoConfig), and the config a session runs under
// (sessionRepoConfig). Loading never schedules anything: callers keep the
// snapshot schedule in step explicitly (snapshots.Scheduler.Schedule).

// cachedRepoConfig is the repo's config as the cache knows it, for
// decisions in the request: known is false on a miss (a row older than
// repo_config_max_age, or one that no longer parses, counts as one), and
// then the caller errs on the side of accepting. The result is shared with
// the memo: read it, never change it.
func (s *Service) cachedRepoConfig(ctx context.Context, repoID int64) (cfg config.Repo, known bool, err error) {
	now := s.clock.Now()
	entry, found, err := s.store.CachedRepoConfig(ctx, repoID, now)
	if err != nil || !found {
		return config.Repo{}, false, err
	}
	if now.Sub(entry.FetchedAt) >= s.cfg.RepoConfigMaxAge {
		// Too old to refuse on: the push that changed the file may have
		// been lost. Accepting lets the worker read it again, which
		// refreshes the entry for the events after.
		return config.Repo{}, false, nil
	}
	switch entry.Status {
	case store.ConfigDefaults:
		return config.Repo{}, true, nil
	case store.ConfigFile:
		cfg, ok := s.parsed.get(entry)
		return cfg, ok, nil
	}
	return config.Repo{}, false, nil
}

// parsedConfigs memoises config.ParseRepo over cached entries, keyed by
// repo and checked by content: every app's check events reach the webhook
// path, and parsing a repo's YAML for each was most of an ignored event's
// cost (BENCHMARKS.md). A changed file misses and is parsed once.
type parsedConfigs struct {
	mu sync.Mutex
	m  map[int64]parsedConfig
}

type parsedConfig struct {
	content string
	cfg     config.Repo
	ok      bool
}

// maxParsedConfigs bounds the memo; past it, it starts again empty.
const maxParsedConfigs = 10000

func (p *parsedConfigs) get(e store.RepoConfigEntry) (config.Repo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if got, hit := p.m[e.RepoID]; hit && got.content == e.Content {
		return got.cfg, got.ok
	}
	cfg, err := config.ParseRepo([]byte(e.Content))
	if p.m == nil || len(p.m) >= maxParsedConfigs {
		p.m = map[int64]parsedConfig{}
	}
	p.m[e.RepoID] = parsedConfig{content: e.Content, cfg: cfg, ok: err == nil}
	return cfg, err == nil
}

// loadRepoConfig reads the config from the default branch and refreshes the
// cache, as every session does. It does nothing else: each caller that
// read a good config keeps the snapshot schedule in step with it itself
// (snapshots.Scheduler.Schedule), so that no read hides a write.
// fetchStart orders concurrent refreshes (see store.PutRepoConfig).
func (s *Service) loadRepoConfig(ctx context.Context, c *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error) {
	loaded, err := s.loader.Load(ctx, c, repo.GetOwner().GetLogin(), repo.GetName(), repo.GetDefaultBranch())
	return s.cacheRepoConfig(ctx, repoID, repo, fetchStart, loaded, err)
}

// cacheRepoConfig refreshes the cache with what the loader read from repo's
// default branch (loaded, or its error err) and returns it as
// loadRepoConfig does.
func (s *Service) cacheRepoConfig(ctx context.Context, repoID int64, repo *github.Repository, fetchStart time.Time, loaded config.LoadedRepo, err error) (config.Repo, error) {
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
	if putErr := s.store.PutRepoConfig(ctx, entry); putErr != nil {
		return config.Repo{}, putErr
	}
	return loaded.Config, err
}

// refreshFromPush re-reads a repo's config after a push changed it. An
// org-wide change forgets the owner's inherited entries instead: there may be
// many, and a miss simply re-reads at the next trigger.
func (s *Service) refreshFromPush(ctx context.Context, w *store.Work) error {
	var p session.ConfigPush
	if err := json.Unmarshal([]byte(w.Payload), &p); err != nil {
		return fmt.Errorf("decoding refresh payload: %w", err)
	}
	if p.OrgWide {
		if err := s.store.ForgetOwnerDefaults(ctx, p.Repo.Owner); err != nil {
			return err
		}
	}
	c, err := s.gh.Installation(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	repo := &github.Repository{
		ID: github.Int64(p.Repo.ID), Name: github.String(p.Repo.Name), FullName: github.String(p.Repo.Owner + "/" + p.Repo.Name),
		Owner: &github.User{Login: github.String(p.Repo.Owner)}, DefaultBranch: github.String(p.Repo.DefaultBranch),
	}
	cfg, err := s.loadRepoConfig(ctx, c, p.Repo.ID, repo, s.clock.Now())
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		// Cached as invalid; the next trigger reports it to its requester.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("pushed config does not parse")
		return nil
	}
	if err != nil {
		return err
	}
	return s.snapshots.Schedule(ctx, p.InstallationID, p.Repo.ID, repo.GetFullName(), cfg)
}

// sessionRepoConfig is the repo config a session runs under: the cached
// entry (prepare refreshed it), or, when the cache lost it meanwhile (an
// org-wide push drops inherited entries), a fresh read. A file that does
// not parse is a *config.RepoConfigError; callers fail closed on it.
func (s *Service) sessionRepoConfig(ctx context.Context, c *github.Client, sess store.Session) (config.Repo, error) {
	entry, found, err := s.store.CachedRepoConfig(ctx, sess.RepoID, s.clock.Now())
	if err != nil {
		return config.Repo{}, err
	}
	if !found {
		repo, _, err := c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
		if err != nil {
			return config.Repo{}, fmt.Errorf("reading the repository: %w", err)
		}
		cfg, err := s.loadRepoConfig(ctx, c, sess.RepoID, repo, s.clock.Now())
		if err != nil {
			return config.Repo{}, err
		}
		if err := s.snapshots.Schedule(ctx, sess.InstallationID, sess.RepoID, repo.GetFullName(), cfg); err != nil {
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
