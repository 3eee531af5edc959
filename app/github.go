package app

import (
	"context"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghwrite"
)

// isStatus and roleName keep their old names for context.go and
// dispatch.go, which another change of issue 14 is moving: once it lands,
// they call ghwrite.IsStatus and ghclient.RoleName and this file goes.
func isStatus(err error, code int) bool { return ghwrite.IsStatus(err, code) }

func roleName(ctx context.Context, c *github.Client, owner, repo, login string) (string, error) {
	return ghclient.RoleName(ctx, c, owner, repo, login)
}
