package repoconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/session"
)

// RefreshFromPush is the refresh_repo_config work: it re-reads a repo's
// config after a push changed it. An org-wide change forgets the owner's
// inherited entries instead: there may be many, and a miss simply re-reads
// at the next trigger.
func (r *Configs) RefreshFromPush(ctx context.Context, w *store.Work) error {
	var p session.ConfigPush
	if err := json.Unmarshal([]byte(w.Payload), &p); err != nil {
		return fmt.Errorf("decoding refresh payload: %w", err)
	}
	if p.OrgWide {
		if err := r.Store.ForgetOwnerDefaults(ctx, p.Repo.Owner); err != nil {
			return err
		}
	}
	c, err := r.Installation(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	repo := &github.Repository{
		ID: github.Int64(p.Repo.ID), Name: github.String(p.Repo.Name), FullName: github.String(p.Repo.Owner + "/" + p.Repo.Name),
		Owner: &github.User{Login: github.String(p.Repo.Owner)}, DefaultBranch: github.String(p.Repo.DefaultBranch),
	}
	cfg, err := r.Load(ctx, c, p.Repo.ID, repo, r.Now())
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		// Cached as invalid; the next trigger reports it to its requester.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("pushed config does not parse")
		return nil
	}
	if err != nil {
		return err
	}
	return r.Schedule(ctx, p.InstallationID, p.Repo.ID, repo.GetFullName(), cfg)
}
