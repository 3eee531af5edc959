package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// userAPI is what the dashboard asks GitHub as, or about, a signed-in
// user: the OAuth web flow's token endpoint, the user's own APIs with
// their user access token, and the App deleting a token at sign-out. It
// works against GitHub Enterprise Server too (github.web_url and
// github.api_url).
type userAPI struct {
	webURL, apiURL         string
	clientID, clientSecret string
	http                   *http.Client
	asUser                 func(ctx context.Context, userID int64, token string) (*github.Client, error)
}

// grant is the token endpoint's answer: a user access token for eight
// hours and a refresh token, or an error.
type grant struct {
	AccessToken           string `json:"access_token"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
	Error                 string `json:"error"`
	ErrorDescription      string `json:"error_description"`
}

// grantRefusal is the token endpoint refusing a grant: GitHub answers 200
// with an "error" code. Only bad_refresh_token says the refresh token
// itself is spent, expired or revoked; the others (a wrong client secret,
// say) are the server's to fix, not the user's.
type grantRefusal struct {
	Code, Description string
}

// Error is GitHub's code and description, never a token: safe to log.
func (e *grantRefusal) Error() string {
	return fmt.Sprintf("GitHub refused the grant: %s (%s)", e.Code, e.Description)
}

// isBadRefreshToken tells GitHub's refusal of the refresh token itself.
func isBadRefreshToken(err error) bool {
	var r *grantRefusal
	return errors.As(err, &r) && r.Code == "bad_refresh_token"
}

// authorizeURL is where the browser goes to sign in: the App's user
// authorization, with state and a PKCE challenge (S256).
func (a userAPI) authorizeURL(redirect, state, challenge string) string {
	q := url.Values{"client_id": {a.clientID}, "redirect_uri": {redirect}, "state": {state},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	return strings.TrimSuffix(a.webURL, "/") + "/login/oauth/authorize?" + q.Encode()
}

// exchange asks the token endpoint for a grant: the callback's code with
// its PKCE verifier, or a refresh token (grant_type refresh_token).
func (a userAPI) exchange(ctx context.Context, form url.Values) (grant, error) {
	form.Set("client_id", a.clientID)
	form.Set("client_secret", a.clientSecret)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(a.webURL, "/")+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return grant{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return grant{}, fmt.Errorf("GitHub's token endpoint: %w", err)
	}
	defer resp.Body.Close()
	var g grant
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&g); err != nil || resp.StatusCode != http.StatusOK {
		return grant{}, fmt.Errorf("GitHub's token endpoint answered %d", resp.StatusCode)
	}
	if g.Error != "" {
		return grant{}, &grantRefusal{Code: g.Error, Description: g.ErrorDescription}
	}
	if g.AccessToken == "" {
		return grant{}, fmt.Errorf("GitHub's token endpoint gave no access token")
	}
	return g, nil
}

// client is a REST client with a user's access token: through asUser,
// under that user's outbound discipline, once the user is known. Only
// sign-in's one request for who the token belongs to (userID 0) goes
// plain.
func (a userAPI) client(ctx context.Context, userID int64, token string) (*github.Client, error) {
	if a.asUser != nil && userID != 0 {
		return a.asUser(ctx, userID, token)
	}
	c := github.NewClient(a.http).WithAuthToken(token)
	base, err := url.Parse(strings.TrimSuffix(a.apiURL, "/") + "/")
	if err != nil {
		return nil, err
	}
	c.BaseURL = base
	return c, nil
}

// me is the signed-in user.
func (a userAPI) me(ctx context.Context, token string) (*github.User, error) {
	c, err := a.client(ctx, 0, token)
	if err != nil {
		return nil, err
	}
	u, _, err := c.Users.Get(ctx, "")
	return u, err
}

// maxReadableRepos bounds how many repositories one user's list holds:
// past it the dashboard shows the first ones only (ten pages of 100).
const maxReadableRepos = 1000

// readableRepos are the repositories of the App's installations that the
// user's own token can read (GET /user/installations, then each one's
// repositories), by id.
func (a userAPI) readableRepos(ctx context.Context, userID int64, token string) (map[int64]repoRef, error) {
	c, err := a.client(ctx, userID, token)
	if err != nil {
		return nil, err
	}
	out := map[int64]repoRef{}
	opt := &github.ListOptions{PerPage: 100}
	for {
		insts, resp, err := c.Apps.ListUserInstallations(ctx, opt)
		if err != nil {
			return nil, err
		}
		for _, in := range insts {
			ro := &github.ListOptions{PerPage: 100}
			for len(out) < maxReadableRepos {
				repos, rresp, err := c.Apps.ListUserRepos(ctx, in.GetID(), ro)
				if err != nil {
					return nil, err
				}
				for _, r := range repos.Repositories {
					out[r.GetID()] = repoRef{ID: r.GetID(), Owner: r.GetOwner().GetLogin(), Name: r.GetName(), InstallationID: in.GetID()}
				}
				if rresp.NextPage == 0 {
					break
				}
				ro.Page = rresp.NextPage
			}
		}
		if resp.NextPage == 0 || len(out) >= maxReadableRepos {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// revoke deletes a user access token (DELETE
// /applications/{client_id}/token, as the App): sign-out leaves no token
// that still works.
func (a userAPI) revoke(ctx context.Context, token string) error {
	body, err := json.Marshal(map[string]string{"access_token": token})
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(a.apiURL, "/") + "/applications/" + url.PathEscape(a.clientID) + "/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.SetBasicAuth(a.clientID, a.clientSecret)
	req.Header.Set("Accept", "application/vnd.github+json")
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusNotFound: // gone already is as good
		return nil
	}
	return fmt.Errorf("deleting the token: GitHub answered %d", resp.StatusCode)
}

// repoRef is a repository a user may read, and the installation it is in.
type repoRef struct {
	ID             int64
	Owner, Name    string
	InstallationID int64
}

// expiry is when a grant's token expires, a minute early, so that a
// token is refreshed before GitHub would refuse it; zero (never) when the
// grant gives no lifetime: GitHub leaves expires_in out when the App's
// user tokens do not expire ("Refreshing user access tokens").
func expiry(now time.Time, seconds int64) time.Time {
	if seconds <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(seconds)*time.Second - time.Minute)
}
