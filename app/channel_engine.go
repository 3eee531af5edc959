package app

import (
	"context"
	"time"

	"github.com/inspecthq/inspect/app/channel"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// The session engine as the session channel (package app/channel) sees
// it: thin adapters from channel.Engine to the Service, plus the two
// pieces of engine logic the channel's routes lead to (minting a read
// token, ending a session over its token budget).

// sessionChannel is the session channel and egress proxy, wired to this
// Service.
func (s *Service) sessionChannel() *channel.Channel {
	return channel.New(channel.Options{
		Store: s.store, Engine: channelEngine{s: s}, Clock: s.clock, Logger: s.log,
		Providers: s.cfg, RegistryProxy: s.registryProxy, EgressIdleTimeout: s.cfg.Egress.IdleTimeout, TokenBudget: s.cfg.Agents.TokenBudget,
		MaxModelRequestsInFlight: s.cfg.Agents.MaxRequestsInFlight, MaxModelRequestBytes: s.cfg.Agents.MaxRequestBytes,
		OutputReservation: s.cfg.Agents.OutputReservation, Metrics: s.metrics,
	})
}

// channelEngine implements channel.Engine for a Service.
type channelEngine struct{ s *Service }

var _ channel.Engine = channelEngine{}

func (e channelEngine) WakeWorkers(context.Context) { e.s.wakeWorkers() }

func (e channelEngine) RecordProgress(ctx context.Context, attemptID string, seq int64, message string) error {
	_, err := e.s.store.RecordProgress(ctx, attemptID, seq, message, e.s.clock.Now())
	return err
}

func (e channelEngine) RecordResult(ctx context.Context, attemptID string, up contract.ResultUpload) error {
	_, err := e.s.recordResult(ctx, attemptID, up)
	return err
}

func (e channelEngine) RecordSnapshotResult(ctx context.Context, attemptID, resultJSON string, o store.SnapshotOutcome) (bool, error) {
	return e.s.store.RecordSnapshotResult(ctx, attemptID, resultJSON, o, e.s.clock.Now())
}

func (e channelEngine) MintReadToken(ctx context.Context, attemptID string, installationID, repoID int64) (string, time.Time, error) {
	return e.s.mintReadToken(ctx, attemptID, installationID, repoID)
}

func (e channelEngine) ClaimAttempt(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error) {
	return e.s.claimAttempt(ctx, attemptID, claimCode, sessionToken)
}

func (e channelEngine) RevokeReadTokens(ctx context.Context, attemptID string) {
	e.s.revokeTokens(ctx, attemptID)
}

func (e channelEngine) EndForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64) {
	e.s.transitions.EndForBudget(ctx, a, used, budget)
}
