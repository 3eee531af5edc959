// Package readtoken is the read token's whole life, in one place. A
// supervisor (or a snapshot build) needs a read-only token for its one
// repository: the session channel asks Tokens.MintFor, which mints it with
// the App's key and remembers it under the attempt; a snapshot build in
// this process asks Mint and revokes it itself. Every such token is
// revoked when its attempt ends: on its result (app/report, app/snapshots),
// on a stop (the engine's stopAttempt), on a snapshot result (app/channel).
// The sandbox never sees one.
//
// It must not import package app: the engine builds one Tokens in
// NewService and hands it to whoever mints or revokes.
package readtoken

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"
)

// Clients is what minting and revoking need of GitHub
// (ghclient.GitHubClients): the App's own client, which mints, and a
// client that presents a minted token, which revokes it with itself
// within the installation's outbound budget.
type Clients interface {
	App(ctx context.Context) (*github.Client, error)
	WithToken(ctx context.Context, installationID int64, token string) (*github.Client, error)
}

// Tokens mints read-only tokens and remembers those minted per attempt,
// so they can be revoked when the attempt ends. They are in memory only:
// after a restart they expire within the hour instead.
type Tokens struct {
	gh        Clients
	mu        sync.Mutex
	byAttempt map[string][]minted
}

// minted is a token the app minted, and the installation it is for (its
// revocation counts against that installation's outbound budget).
type minted struct {
	installationID int64
	value          string
	expiresAt      time.Time
}

// New is a Tokens that mints and revokes through gh.
func New(gh Clients) *Tokens {
	return &Tokens{gh: gh, byAttempt: map[string][]minted{}}
}

// Mint mints a read-only installation token for one repository, for a
// supervisor's fetch or a snapshot build's clone, and says when it
// expires. The caller revokes it (Revoke).
func (t *Tokens) Mint(ctx context.Context, installationID, repoID int64) (string, time.Time, error) {
	appClient, err := t.gh.App(ctx)
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

// MintFor mints a read token for the attempt's supervisor and remembers it
// under the attempt, to be revoked when the attempt ends (RevokeAttempt).
func (t *Tokens) MintFor(ctx context.Context, attemptID string, installationID, repoID int64) (string, time.Time, error) {
	tok, expires, err := t.Mint(ctx, installationID, repoID)
	if err != nil {
		return "", time.Time{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byAttempt[attemptID] = append(t.byAttempt[attemptID], minted{installationID: installationID, value: tok, expiresAt: expires})
	return tok, expires, nil
}

// RevokeAttempt revokes the tokens minted for the attempt (MintFor), once:
// they are forgotten as they are taken. Best effort.
func (t *Tokens) RevokeAttempt(ctx context.Context, attemptID string) {
	t.mu.Lock()
	taken := t.byAttempt[attemptID]
	delete(t.byAttempt, attemptID)
	t.mu.Unlock()
	for _, tok := range taken {
		t.Revoke(ctx, tok.installationID, tok.value, tok.expiresAt)
	}
}

// Revoke revokes an installation token the app minted, with the token
// itself (GitHub's DELETE /installation/token), through the installation's
// outbound budget. Best effort: it expires within the hour anyway.
func (t *Tokens) Revoke(ctx context.Context, installationID int64, token string, expiresAt time.Time) {
	if !expiresAt.IsZero() && !time.Now().Before(expiresAt) {
		// Expired is as good as revoked, and GitHub would refuse the call.
		// (GitHub's clock, not the app's test clock, is what counts.)
		return
	}
	c, err := t.gh.WithToken(ctx, installationID, token)
	if err == nil {
		_, err = c.Apps.RevokeInstallationToken(ctx)
	}
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("revoking a repo token failed")
	}
}
