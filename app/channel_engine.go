package app

import (
	"context"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/channel"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
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
		Providers: s.cfg, TokenBudget: s.cfg.Agents.TokenBudget,
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

func (e channelEngine) RecordResult(ctx context.Context, attemptID, resultJSON string) error {
	_, err := e.s.store.RecordResult(ctx, attemptID, resultJSON, e.s.clock.Now())
	return err
}

func (e channelEngine) RecordSnapshotResult(ctx context.Context, attemptID, resultJSON, digest, buildErr string) (bool, error) {
	return e.s.store.RecordSnapshotResult(ctx, attemptID, resultJSON, digest, buildErr, e.s.clock.Now())
}

func (e channelEngine) MintReadToken(ctx context.Context, attemptID string, installationID, repoID int64) (string, time.Time, error) {
	tok, expires, err := e.s.mintRepoTokenUntil(ctx, installationID, repoID)
	if err != nil {
		return "", time.Time{}, err
	}
	e.s.rememberToken(attemptID, mintedToken{installationID: installationID, value: tok, expiresAt: expires})
	return tok, expires, nil
}

func (e channelEngine) RevokeReadTokens(ctx context.Context, attemptID string) {
	e.s.revokeTokens(ctx, attemptID)
}

func (e channelEngine) EndForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64) {
	e.s.endForBudget(ctx, a, used, budget)
}

// mintRepoTokenUntil mints a read-only installation token for one
// repository, for a supervisor's fetch or a snapshot build's clone, and
// says when it expires. Callers revoke it.
func (s *Service) mintRepoTokenUntil(ctx context.Context, installationID, repoID int64) (string, time.Time, error) {
	appClient, err := s.gh.App(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	tok, _, err := appClient.Apps.CreateInstallationToken(ctx, installationID, &github.InstallationTokenOptions{
		RepositoryIDs: []int64{repoID},
		Permissions:   &github.InstallationPermissions{Contents: github.String("read")},
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("minting a read token: %w", err)
	}
	return tok.GetToken(), tok.GetExpiresAt().Time, nil
}

// endForBudget ends a session whose tokens passed its budget: outcome
// error with a clear reason, and its attempt stopped (the supervisor
// uploads partial evidence, which arrives too late to change the ending).
func (s *Service) endForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64) {
	log := zerolog.Ctx(ctx)
	ended, err := s.store.MutateSession(ctx, a.SessionID, s.clock.Now(), func(x *store.Session) error {
		if x.State == store.Done {
			return errAlreadyDone
		}
		x.State, x.Outcome, x.Reason = store.Done, store.Errored, "token_budget"
		x.Detail = render.TokenBudgetReply(x.RequesterLogin, used.TotalTokens, budget)
		return nil
	}, store.NewWork{Kind: store.SyncSession})
	if err != nil {
		if err != errAlreadyDone {
			log.Error().Err(err).Msg("ending the session over its token budget failed")
		}
		return
	}
	s.log.Info().Str("session_id", ended.ID).Int64("tokens", used.TotalTokens).Int64("budget", budget).Msg("session stopped: token budget spent")
	s.stopAttempt(ctx, ended.AttemptID)
	s.wakeWorkers()
}
