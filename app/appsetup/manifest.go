// Package appsetup registers Inspect's GitHub App through GitHub's App
// manifest flow (`inspect setup`): a local page posts the manifest to
// GitHub, GitHub redirects back with a code, the code is exchanged through
// POST /app-manifests/{code}/conversions, and what GitHub answers (the
// App's id, key and secrets) is written as a server config.
//
// The manifest is built here and nowhere else; .github/app-manifest.json is
// written from Manifest (TestCheckedInManifestIsGenerated keeps it so).
package appsetup

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// HookPath is where `inspect serve` takes GitHub's webhooks
// (go-githubapp's default route).
const HookPath = "/api/github/hook"

// CallbackPath is the dashboard's OAuth callback under web.public_url
// (config.Web): the App must list it for sign-in to work.
const CallbackPath = "/auth/callback"

// Permissions are the App permissions Inspect uses, and no more: each is
// named with what needs it.
var Permissions = map[string]string{
	"metadata":      "read",  // every App has it; repository lookups
	"contents":      "write", // clone, push the session branch, read .github/inspect.yml
	"issues":        "write", // comments, reactions, labels on issues and PRs
	"pull_requests": "write", // open and update PRs, review requests, review comments
	"checks":        "write", // the session's check run; failing checks for repair
	"statuses":      "read",  // commit statuses a repair reads
	"actions":       "read",  // job logs a repair reads
}

// Events are the webhook events Inspect handles (handlers/).
var Events = []string{
	"issue_comment",
	"issues",
	"pull_request_review_comment",
	"check_run",
	"check_suite",
	"status",
	"push",
	// What became of the PRs Inspect opened (issue 38): closed, merged,
	// reopened, and the reviews they cost. pull_requests covers both.
	"pull_request",
	"pull_request_review",
}

// MissingEvents are the Events an App's subscription (GET /app's events)
// lacks: a manifest change does not reach an App registered before it,
// and its owner must tick them (docs/deploy.md, "Upgrading").
func MissingEvents(subscribed []string) []string {
	have := map[string]bool{}
	for _, e := range subscribed {
		have[e] = true
	}
	var out []string
	for _, e := range Events {
		if !have[e] {
			out = append(out, e)
		}
	}
	return out
}

// Manifest is a GitHub App manifest, with the fields GitHub documents
// ("Registering a GitHub App from a manifest"), in the order they are
// written.
type Manifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description"`
	HookAttributes     HookAttributes    `json:"hook_attributes"`
	RedirectURL        string            `json:"redirect_url"`
	CallbackURLs       []string          `json:"callback_urls"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// HookAttributes is where GitHub sends the App's webhooks.
type HookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// ManifestOptions are what differs between installations.
type ManifestOptions struct {
	// Name is the App's name on GitHub; empty means "Inspect". GitHub
	// makes the slug from it, and names must be unique on GitHub.
	Name string
	// PublicURL is where GitHub reaches `inspect serve`:
	// https://inspect.example.com. Webhooks go to PublicURL+HookPath.
	PublicURL string
	// RedirectURL is where GitHub sends the browser back with the code:
	// the setup page's callback.
	RedirectURL string
}

// CheckedIn is the options .github/app-manifest.json is written with:
// placeholders an operator who registers by hand replaces.
var CheckedIn = ManifestOptions{PublicURL: "https://inspect.example.com", RedirectURL: "https://inspect.example.com/"}

// NewManifest builds the manifest for opts.
func NewManifest(opts ManifestOptions) (Manifest, error) {
	name := opts.Name
	if name == "" {
		name = "Inspect"
	}
	if len(name) > 34 {
		// GitHub's limit on an App's name.
		return Manifest{}, fmt.Errorf("the App name %q is longer than GitHub's 34 characters", name)
	}
	if err := absHTTP(opts.PublicURL); err != nil {
		return Manifest{}, fmt.Errorf("the public URL: %w", err)
	}
	if err := absHTTP(opts.RedirectURL); err != nil {
		return Manifest{}, fmt.Errorf("the redirect URL: %w", err)
	}
	perms := make(map[string]string, len(Permissions))
	for k, v := range Permissions {
		perms[k] = v
	}
	return Manifest{
		Name:               name,
		URL:                "https://github.com/inspecthq/inspect",
		Description:        "Background coding-agent sessions from /inspect comments, labels and failing checks, with verified, evidence-rich pull requests.",
		HookAttributes:     HookAttributes{URL: strings.TrimSuffix(opts.PublicURL, "/") + HookPath, Active: true},
		RedirectURL:        opts.RedirectURL,
		CallbackURLs:       []string{strings.TrimSuffix(opts.PublicURL, "/") + CallbackPath},
		Public:             false,
		DefaultPermissions: perms,
		DefaultEvents:      append([]string(nil), Events...),
	}, nil
}

// JSON is the manifest as GitHub takes it and as the checked-in file
// holds it: indented, keys of maps sorted, a final newline.
func (m Manifest) JSON() []byte {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		// Only strings, bools and maps of strings: cannot fail.
		panic(fmt.Sprintf("appsetup: encoding the manifest: %v", err))
	}
	return append(b, '\n')
}

func absHTTP(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL", raw)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry a user name or password")
	}
	return nil
}
