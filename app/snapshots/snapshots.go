// Package snapshots is the snapshot scheduler: it opens the snapshot store,
// pins a repo's newest snapshot into a session's spec, keeps the build
// schedule in step with each repo's config, queues the builds that are due
// (one at a time across the fleet), runs a build (in this process, or as an
// attempt on the snapshot executor, decision 0012) and collects old
// snapshots.
//
// It decides when and what to build; it must not act on sessions. What is
// the engine's (reading a repo's config and refreshing its cache, minting
// and revoking read tokens, GitHub's installation clients, waking the
// workers) it is handed at construction, each behind the narrow interface
// or func it declares here. It must not import package app, nor a concrete executor
// (runner/local, runner/buildkite, runner/supervisor): cmd/ hands it a
// runner.SnapshotBuilder and a runner.Executor.
package snapshots

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/clock"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner"
)

// BuildLease bounds one snapshot build: past it, a build that never
// reported is presumed dead and the repo may build again. The worker that
// runs a BuildSnapshot item holds it for as long.
const BuildLease = time.Hour

// Store is the part of the store the scheduler uses (*store.Store): the
// snapshot schedule, and the attempts of builds on the executor.
type Store interface {
	WantSnapshots(ctx context.Context, repoID int64, fullName string, installationID int64, now time.Time) error
	ForgetSnapshots(ctx context.Context, repoID int64) error
	ScheduleSnapshotBuilds(ctx context.Context, now time.Time, every, lease time.Duration, maxBuilding int) (int, error)
	GetSnapshotRepo(ctx context.Context, repoID int64) (store.SnapshotRepo, error)
	StartSnapshotBuild(ctx context.Context, repoID int64, until, now time.Time) error
	SetSnapshotAttempt(ctx context.Context, repoID int64, attemptID string, now time.Time) error
	FinishSnapshotBuild(ctx context.Context, repoID int64, o store.SnapshotOutcome, now time.Time) error
	CreateAttempt(ctx context.Context, a store.Attempt, claimCode string, now time.Time) error
	SetAttemptExternalID(ctx context.Context, id, externalID string, now time.Time) error
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	EndAttempt(ctx context.Context, id string, now time.Time) error
}

// Installations hands out installation clients (ghclient.GitHubClients).
type Installations interface {
	Installation(ctx context.Context, installationID int64) (*github.Client, error)
}

// RepoConfigs reads a repo's config (*repoconfig.Configs).
type RepoConfigs interface {
	// Load reads the repo's config at its default branch and refreshes
	// the cache with it, as a session does; fetchStart orders concurrent
	// refreshes. It schedules nothing: the scheduler keeps the schedule in
	// step itself (Schedule).
	Load(ctx context.Context, c *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error)
}

// ReadTokens mints and revokes read-only repository tokens
// (*readtoken.Tokens).
type ReadTokens interface {
	// Mint mints a read-only token for one repository, for a build's
	// clone; the caller revokes it (Revoke).
	Mint(ctx context.Context, installationID, repoID int64) (token string, expiresAt time.Time, err error)
	// Revoke revokes a token Mint minted. Best effort.
	Revoke(ctx context.Context, installationID int64, token string, expiresAt time.Time)
	// RevokeAttempt revokes the tokens minted for an attempt over the
	// session channel. Best effort.
	RevokeAttempt(ctx context.Context, attemptID string)
}

// Options are a Scheduler's parts.
type Options struct {
	Store Store
	// GitHub, RepoConfigs and ReadTokens are the engine's clients, repo
	// configs and read tokens; Wake tells its workers there is work.
	GitHub      Installations
	RepoConfigs RepoConfigs
	ReadTokens  ReadTokens
	Wake        func()
	Clock       clock.Clock
	// Snapshots is the server's snapshots section; Store "" turns
	// snapshots off.
	Snapshots config.Snapshots
	// CommandTimeout bounds each setup command (sessions.command_timeout);
	// SessionTimeout bounds a build on the executor (sessions.timeout).
	CommandTimeout, SessionTimeout time.Duration
	// ExecutorKind (executor.kind) is named in the error of a build that
	// has nowhere to run; WorkDir (executor.work_dir) is where a build in
	// this process works.
	ExecutorKind, WorkDir string
	// WebURL is GitHub's web address (github.web_url), for clone URLs.
	WebURL string
	// Builder builds snapshots in this process (supervisor.BuildSnapshot
	// with the local executor).
	Builder runner.SnapshotBuilder
	// Executor, when set and Builder is not, starts builds as attempts on
	// the executor (Buildkite); ChannelURL is where their supervisor
	// fetches its job.
	Executor   runner.Executor
	ChannelURL string
	// Version is `inspect version`, for snapshot labels.
	Version string
	// Metrics records builds' durations (nil: none).
	Metrics *metrics.Metrics
	// NewID names a build's attempt.
	NewID func() string
	// Registries are the package registries a build's setup may reach, as
	// a session of the repo would (the server's, narrowed by the repo's
	// config), or why the repo's config cannot have them; nil for none.
	Registries func(fullName string, cfg config.Repo) ([]contract.Registry, error)
}

// Scheduler is the snapshot scheduler.
type Scheduler struct {
	store          Store
	gh             Installations
	repoConfigs    RepoConfigs
	readTokens     ReadTokens
	wake           func()
	clock          clock.Clock
	cfg            config.Snapshots
	commandTimeout time.Duration
	sessionTimeout time.Duration
	executorKind   string
	workDir        string
	webURL         string
	build          runner.SnapshotBuilder
	exec           runner.Executor
	channelURL     string
	version        string
	newID          func() string
	registries     func(fullName string, cfg config.Repo) ([]contract.Registry, error)
	opened         openedStore
	metrics        *metrics.Metrics
}

// New wires a Scheduler.
func New(o Options) *Scheduler {
	return &Scheduler{
		store: o.Store, gh: o.GitHub, repoConfigs: o.RepoConfigs, readTokens: o.ReadTokens, wake: o.Wake, clock: o.Clock, cfg: o.Snapshots,
		commandTimeout: o.CommandTimeout, sessionTimeout: o.SessionTimeout,
		executorKind: o.ExecutorKind, workDir: o.WorkDir, webURL: o.WebURL,
		metrics: o.Metrics,
		build:   o.Builder, exec: o.Executor, channelURL: o.ChannelURL, version: o.Version, newID: o.NewID,
		registries: o.Registries,
	}
}

// openedStore is the configured snapshot store, opened on first use.
type openedStore struct {
	once  sync.Once
	name  string // as the spec names it: a layout's path made absolute
	store images.Store
	err   error
}

// open is the snapshot store; nil without an error when snapshots are off.
func (s *Scheduler) open() (images.Store, string, error) {
	if s.cfg.Store == "" {
		return nil, "", nil
	}
	s.opened.once.Do(func() {
		// config.Load makes it absolute; a Service built from
		// config.Defaults() (tests, the demo) gets the same here.
		name, err := contract.AbsSnapshotStore(s.cfg.Store)
		if err != nil {
			s.opened.err = err
			return
		}
		s.opened.name = name
		s.opened.store, s.opened.err = images.OpenStore(name)
	})
	return s.opened.store, s.opened.name, s.opened.err
}

// Pin pins the repo's newest snapshot by digest in snap, the spec's
// snapshot (config.Repo.SessionSnapshot: its caches and setup; nil when the
// repo asks for none, and then Pin does nothing). Without a digest the
// session clones cold and runs the setup itself: snapshots are off, the
// repo has none yet, or the store cannot be read (a snapshot only makes a
// session faster, so its absence never stops one; it is logged).
func (s *Scheduler) Pin(ctx context.Context, fullName string, snap *contract.Snapshot) {
	if snap == nil {
		return
	}
	st, storeName, err := s.open()
	if st == nil || err != nil {
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("snapshot store unavailable; cold clone")
		}
		return
	}
	latest, err := st.Latest(ctx, fullName)
	switch {
	case errors.Is(err, images.ErrNoSnapshot):
	case err != nil:
		zerolog.Ctx(ctx).Warn().Err(err).Msg("resolving the newest snapshot failed; cold clone")
	default:
		snap.Store, snap.Digest = storeName, latest.Digest.String()
	}
}

// Schedule keeps the snapshot schedule in step with a repo's config, each
// time it is read: a repo that asks for snapshots is on it (due at once
// when new), one that no longer does is taken off.
func (s *Scheduler) Schedule(ctx context.Context, installationID, repoID int64, fullName string, cfg config.Repo) error {
	if s.cfg.Store == "" || repoID == 0 {
		return nil
	}
	if cfg.WantsSnapshots() && cfg.IsEnabled() {
		return s.store.WantSnapshots(ctx, repoID, fullName, installationID, s.clock.Now())
	}
	return s.store.ForgetSnapshots(ctx, repoID)
}

// QueueBuilds queues a build for each repo whose snapshot is due
// (snapshots.refresh, or sooner after a push to its default branch).
func (s *Scheduler) QueueBuilds(ctx context.Context) error {
	if s.cfg.Store == "" {
		return nil
	}
	// One build at a time across the fleet: each holds a worker for as long
	// as it runs, and sessions need the workers.
	n, err := s.store.ScheduleSnapshotBuilds(ctx, s.clock.Now(), s.cfg.Refresh, BuildLease, 1)
	if err != nil {
		return err
	}
	if n > 0 {
		zerolog.Ctx(ctx).Info().Int("builds", n).Msg("snapshot builds queued")
		s.wake()
	}
	return nil
}
