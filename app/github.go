package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// GitHubClients hands out authenticated GitHub clients. It takes a context,
// unlike go-githubapp's ClientCreator, so cancellation reaches token minting.
type GitHubClients interface {
	App(ctx context.Context) (*github.Client, error)
	Installation(ctx context.Context, installationID int64) (*github.Client, error)
}

type clientCreator struct{ cc githubapp.ClientCreator }

// NewGitHubClients builds clients from the App's id and key against apiURL
// (https://api.github.com/ or a GitHub Enterprise Server /api/v3/ base).
func NewGitHubClients(apiURL string, appID int64, privateKeyPEM []byte, userAgent string) (GitHubClients, error) {
	base := githubapp.NewClientCreator(apiURL, strings.TrimSuffix(apiURL, "/")+"/graphql", appID, privateKeyPEM,
		githubapp.WithClientUserAgent(userAgent))
	// The cache keeps one client (and its token) per installation, so a
	// token is minted once an hour per installation, not once per call.
	cached, err := githubapp.NewCachingClientCreator(base, githubapp.DefaultCachingClientCapacity)
	if err != nil {
		return nil, err
	}
	return clientCreator{cc: cached}, nil
}

func (c clientCreator) App(ctx context.Context) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.cc.NewAppClient()
}

func (c clientCreator) Installation(ctx context.Context, id int64) (*github.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.cc.NewInstallationClient(id)
}

func isStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}

// roleName reads the sender's role from the collaborator-permission API.
// go-github v62 does not decode `role_name`, which is the only field that
// tells maintain from write and triage from read, so we decode it here.
func roleName(ctx context.Context, c *github.Client, owner, repo, login string) (string, error) {
	req, err := c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission", owner, repo, login), nil)
	if err != nil {
		return "", err
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := c.Do(ctx, req, &body); err != nil {
		if isStatus(err, http.StatusNotFound) {
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

// findMarkedComment looks for a comment of ours carrying marker, so a
// replayed step edits instead of posting twice.
func findMarkedComment(ctx context.Context, c *github.Client, owner, repo string, number int, marker string) (int64, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		comments, resp, err := c.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return 0, fmt.Errorf("listing comments: %w", err)
		}
		for _, cm := range comments {
			if strings.Contains(cm.GetBody(), marker) {
				return cm.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}

// postOnce posts body on the issue unless a comment with marker exists
// (searched only when this may be a replay). It returns the comment id.
func postOnce(ctx context.Context, c *github.Client, owner, repo string, number int, marker, body string, mayBeReplay bool) (int64, error) {
	if mayBeReplay {
		id, err := findMarkedComment(ctx, c, owner, repo, number, marker)
		if err != nil || id != 0 {
			return id, err
		}
	}
	cm, _, err := c.Issues.CreateComment(ctx, owner, repo, number, &github.IssueComment{Body: github.String(body + "\n" + marker)})
	if err != nil {
		return 0, fmt.Errorf("posting comment: %w", err)
	}
	return cm.GetID(), nil
}

// findCheckRun finds our check run for a session by its external id.
func findCheckRun(ctx context.Context, c *github.Client, owner, repo, sha, name, externalID string) (int64, error) {
	opts := &github.ListCheckRunsOptions{CheckName: github.String(name), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return 0, fmt.Errorf("listing check runs: %w", err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == externalID {
				return cr.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, nil
		}
		opts.Page = resp.NextPage
	}
}
