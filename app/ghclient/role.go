package ghclient

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghwrite"
)

// RoleName reads login's role on owner/repo from the collaborator-permission
// API. go-github v62 does not decode `role_name`, which is the only field
// that tells maintain from write and triage from read, so it is decoded
// here, with the client's NewRequest and Do.
func RoleName(ctx context.Context, c *github.Client, owner, repo, login string) (string, error) {
	req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", owner, repo, login), nil)
	if err != nil {
		return "", err
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.Do(ctx, req, &body); err != nil {
		if ghwrite.IsStatus(err, http.StatusNotFound) {
			// Not a user GitHub knows in this repo: no access at all.
			return "none", nil
		}
		return "", fmt.Errorf("reading %s's permission: %w", login, err)
	}
	if body.RoleName == "" {
		// Older Enterprise Server versions lack role_name; permission is the
		// folded level, which is still safe (maintain reads as write).
		return body.Permission, nil
	}
	return body.RoleName, nil
}
