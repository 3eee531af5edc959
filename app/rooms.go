package app

import (
	"context"

	"github.com/inspecthq/inspect/app/channel"
	"github.com/inspecthq/inspect/app/snapshots"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
)

// The rooms' wiring: each room of app/ is handed, when it is built, the
// concrete parts it needs (the store, the client factory, the read tokens,
// the repo configs, the transitions) and a func for what only the engine
// does; none calls back into the Service through an adapter (decision
// 0049).

// SnapshotBuilder is runner.SnapshotBuilder: supervisor.BuildSnapshot on
// this host, which cmd/ hands over. Tests swap it.
type SnapshotBuilder = runner.SnapshotBuilder

// newSnapshots is the snapshot scheduler, handed this Service's parts.
func newSnapshots(s *Service, o Options) *snapshots.Scheduler {
	return snapshots.New(snapshots.Options{
		Store: o.Store, GitHub: s.gh, RepoConfigs: s.repoConfigs, ReadTokens: s.readTokens, Wake: s.wakeWorkers, Clock: s.clock,
		Snapshots:      s.cfg.Snapshots,
		CommandTimeout: s.cfg.Sessions.CommandTimeout, SessionTimeout: s.cfg.Sessions.Timeout,
		ExecutorKind: s.cfg.Executor.Kind, WorkDir: s.cfg.Executor.WorkDir, WebURL: s.cfg.GitHub.WebURL,
		Builder: o.SnapshotBuilder, Executor: o.SnapshotExecutor, ChannelURL: s.channelURL,
		Version: s.version, NewID: newID, Registries: s.cfg.SessionRegistries, Metrics: s.metrics,
	})
}

// sessionChannel is the session channel and egress proxy, handed this
// Service's parts: the engine's claim and result recording, the read
// tokens, the transitions (a session over its budget ends there).
func sessionChannel(s *Service) *channel.Channel {
	return channel.New(channel.Options{
		Store: s.store, Claim: s.claimAttempt, ReadTokens: s.readTokens, Budget: s.transitions,
		RecordResult: func(ctx context.Context, attemptID string, up contract.ResultUpload) error {
			_, err := s.recordResult(ctx, attemptID, up) // whether it was the first upload is the collector's question
			return err
		},
		Wake: s.wakeWorkers, Clock: s.clock, Logger: s.log,
		Providers: s.cfg, RegistryProxy: s.registryProxy, EgressIdleTimeout: s.cfg.Egress.IdleTimeout, TokenBudget: s.cfg.Agents.TokenBudget,
		MoneyBudgets: s.cfg.PolicyLimits(), Cost: s.cfg.ModelCost,
		MaxModelRequestsInFlight: s.cfg.Agents.MaxRequestsInFlight, MaxModelRequestBytes: s.cfg.Agents.MaxRequestBytes,
		OutputReservation: s.cfg.Agents.OutputReservation, Metrics: s.metrics,
	})
}

// CheckDashboard reads what the dashboard needs (its key, the client
// secret), so that `inspect serve` fails at start, not at the first page.
func (s *Service) CheckDashboard() error { return s.dash.Check() }
