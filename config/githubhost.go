package config

import (
	"net/url"
	"strings"
)

// The GitHub a server talks to is github.com, GitHub Enterprise Cloud with
// data residency (a subdomain of GHE.com), or GitHub Enterprise Server
// (any other host). Each serves its REST API somewhere else.

// githubAPIURL is github.com's REST base, github.api_url's default.
const githubAPIURL = "https://api.github.com/"

// APIURLFor is GitHub's REST base for the web root webURL:
//   - https://github.com: https://api.github.com/
//   - https://SUBDOMAIN.ghe.com (Enterprise Cloud with data residency):
//     https://api.SUBDOMAIN.ghe.com/, as GitHub documents it there, not
//     under /api/v3
//   - any other host (Enterprise Server): the web root's /api/v3/
func APIURLFor(webURL string) string {
	if u, err := url.Parse(webURL); err == nil {
		switch host := strings.ToLower(u.Host); {
		case host == "github.com" || host == "www.github.com":
			return githubAPIURL
		case isGHECom(host):
			return u.Scheme + "://api." + host + "/"
		}
	}
	return strings.TrimSuffix(webURL, "/") + "/api/v3/"
}

// isGHECom tells a GHE.com tenant's web host, SUBDOMAIN.ghe.com.
func isGHECom(host string) bool {
	sub, ok := strings.CutSuffix(host, ".ghe.com")
	return ok && sub != "" && !strings.Contains(sub, ".")
}

// deriveGitHubAPIURL sets github.api_url from github.web_url when it was
// left at github.com's while web_url names another GitHub: that pair is
// never right, and the web root says where the API is (APIURLFor).
func (c *Server) deriveGitHubAPIURL() {
	if c.GitHub.APIURL == githubAPIURL {
		c.GitHub.APIURL = APIURLFor(c.GitHub.WebURL)
	}
}

// validateGitHubHost refuses a GHE.com web root whose api_url is not its
// api. host (an Enterprise Server habit, SUBDOMAIN.ghe.com/api/v3/, answers
// nothing there).
func (c *Server) validateGitHubHost(add func(key, format string, args ...any)) {
	web, err := url.Parse(c.GitHub.WebURL)
	if err != nil || !isGHECom(strings.ToLower(web.Host)) {
		return
	}
	want := APIURLFor(c.GitHub.WebURL)
	if api, err := url.Parse(c.GitHub.APIURL); err != nil || !strings.EqualFold(api.Host, "api."+web.Host) {
		add("github.api_url", "GitHub Enterprise Cloud with data residency (%s) serves its REST API at %s", web.Host, want)
	}
}
