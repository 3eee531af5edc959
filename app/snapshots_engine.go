package app

import (
	"context"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/snapshots"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/runner"
)

// The session engine as the snapshot scheduler (package app/snapshots)
// sees it: thin adapters from snapshots.Engine to the Service.

// SnapshotBuilder is runner.SnapshotBuilder: supervisor.BuildSnapshot on
// this host, which cmd/ hands over. Tests swap it.
type SnapshotBuilder = runner.SnapshotBuilder

// newSnapshots wires the snapshot scheduler to this Service.
func (s *Service) newSnapshots(o Options) *snapshots.Scheduler {
	return snapshots.New(snapshots.Options{
		Store: o.Store, Engine: snapshotsEngine{s: s}, Clock: s.clock,
		Snapshots:      s.cfg.Snapshots,
		CommandTimeout: s.cfg.Sessions.CommandTimeout, SessionTimeout: s.cfg.Sessions.Timeout,
		ExecutorKind: s.cfg.Executor.Kind, WorkDir: s.cfg.Executor.WorkDir, WebURL: s.cfg.GitHub.WebURL,
		Builder: o.SnapshotBuilder, Executor: o.SnapshotExecutor, ChannelURL: s.channelURL,
		Version: s.version, NewID: newID, Registries: s.sessionRegistries, Metrics: s.metrics,
	})
}

// snapshotsEngine implements snapshots.Engine for a Service.
type snapshotsEngine struct{ s *Service }

var _ snapshots.Engine = snapshotsEngine{}

func (e snapshotsEngine) Installation(ctx context.Context, installationID int64) (*github.Client, error) {
	return e.s.gh.Installation(ctx, installationID)
}

func (e snapshotsEngine) LoadRepoConfig(ctx context.Context, c *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error) {
	return e.s.loadRepoConfig(ctx, c, repoID, repo, fetchStart)
}

func (e snapshotsEngine) MintReadToken(ctx context.Context, installationID, repoID int64) (string, time.Time, error) {
	return e.s.mintRepoTokenUntil(ctx, installationID, repoID)
}

func (e snapshotsEngine) RevokeReadToken(ctx context.Context, installationID int64, token string, expiresAt time.Time) {
	e.s.revokeToken(ctx, mintedToken{installationID: installationID, value: token, expiresAt: expiresAt})
}

func (e snapshotsEngine) RevokeAttemptTokens(ctx context.Context, attemptID string) {
	e.s.revokeTokens(ctx, attemptID)
}

func (e snapshotsEngine) WakeWorkers(context.Context) { e.s.wakeWorkers() }
