package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"
)

// The read token's whole life, in one place. A supervisor (or a snapshot
// build) asks the session channel for a read-only token for its one
// repository (channel.Engine.MintReadToken → mintReadToken); the app mints
// it with the App's key, remembers it under the attempt, and revokes it
// when the attempt ends: on its result (app/report, snapshots), on a stop
// (stopAttempt), and on a snapshot result. The sandbox never sees it.

// repoTokens remembers the read-only tokens minted per attempt, so they can
// be revoked when the attempt ends. (They are in memory only: after a
// restart they expire within the hour instead.)
type repoTokens struct {
	mu     sync.Mutex
	tokens map[string][]mintedToken
}

// mintedToken is a token the app minted, and the installation it is for
// (its revocation counts against that installation's outbound budget).
type mintedToken struct {
	installationID int64
	value          string
	expiresAt      time.Time
}

func (s *Service) rememberToken(attemptID string, tok mintedToken) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	if s.tokens.tokens == nil {
		s.tokens.tokens = map[string][]mintedToken{}
	}
	s.tokens.tokens[attemptID] = append(s.tokens.tokens[attemptID], tok)
}

func (s *Service) takeTokens(attemptID string) []mintedToken {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	t := s.tokens.tokens[attemptID]
	delete(s.tokens.tokens, attemptID)
	return t
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

func (s *Service) revokeTokens(ctx context.Context, attemptID string) {
	for _, tok := range s.takeTokens(attemptID) {
		s.revokeToken(ctx, tok)
	}
}

// revokeToken revokes an installation token the app minted for a
// supervisor or a snapshot build, with the token itself (GitHub's DELETE
// /installation/token), through the installation's outbound budget. Best
// effort: it expires within the hour anyway.
func (s *Service) revokeToken(ctx context.Context, tok mintedToken) {
	if !tok.expiresAt.IsZero() && !time.Now().Before(tok.expiresAt) {
		// Expired is as good as revoked, and GitHub would refuse the call.
		// (GitHub's clock, not the app's test clock, is what counts.)
		return
	}
	c, err := s.gh.WithToken(ctx, tok.installationID, tok.value)
	if err == nil {
		_, err = c.Apps.RevokeInstallationToken(ctx)
	}
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("revoking a repo token failed")
	}
}

// stopAttempt ends an attempt so its token stops working and a late result
// is ignored, and asks the executor to kill it. Best effort: the attempt's
// own deadline stops it anyway.
func (s *Service) stopAttempt(ctx context.Context, attemptID string) {
	if attemptID == "" {
		return
	}
	log := zerolog.Ctx(ctx)
	if err := s.store.EndAttempt(ctx, attemptID, s.clock.Now()); err != nil {
		log.Warn().Err(err).Msg("ending the attempt failed")
	}
	// Revoked whatever else fails below: a token minted for an attempt that
	// never got an external id is still a live token.
	s.revokeTokens(ctx, attemptID)
	a, err := s.store.GetAttempt(ctx, attemptID)
	if err != nil || a.ExternalID == "" || s.executor == nil {
		return
	}
	if err := s.executor.Cancel(ctx, a.ExternalID); err != nil {
		log.Warn().Err(err).Str("attempt_id", attemptID).Msg("cancelling the attempt failed")
	}
}

// mintReadToken mints a read token for the attempt's supervisor and
// remembers it under the attempt, to be revoked when the attempt ends.
func (s *Service) mintReadToken(ctx context.Context, attemptID string, installationID, repoID int64) (string, time.Time, error) {
	tok, expires, err := s.mintRepoTokenUntil(ctx, installationID, repoID)
	if err != nil {
		return "", time.Time{}, err
	}
	s.rememberToken(attemptID, mintedToken{installationID: installationID, value: tok, expiresAt: expires})
	return tok, expires, nil
}
