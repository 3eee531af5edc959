package config

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// Web is the dashboard (app/web): sign-in with GitHub through the App's
// user authorization (the OAuth web flow, with the App's client id and
// secret), and the pages it serves. It is off until public_url and the
// client and key settings are all set.
type Web struct {
	// PublicURL is where people reach this server (https://inspect.example.com),
	// for links (the check run's details_url, the PR body) and the OAuth
	// callback (PUBLIC_URL/auth/callback, which the App's manifest lists).
	// Cookies are Secure whenever it is https, also behind a load balancer
	// that ends TLS. Empty: no dashboard and no links.
	PublicURL string `yaml:"public_url"`
	// ClientID and ClientSecret (or ClientSecretPath, a file holding it)
	// are the GitHub App's OAuth client (its settings page, or what
	// `inspect setup` wrote).
	ClientID         string `yaml:"client_id"`
	ClientSecret     string `yaml:"client_secret"`
	ClientSecretPath string `yaml:"client_secret_path"`
	// KeyPath is a file holding the server's key for the dashboard, 64 hex
	// digits (32 bytes; `openssl rand -hex 32`): it seals users' GitHub
	// tokens at rest and signs nothing else. Every replica needs the same.
	KeyPath string `yaml:"key_path"`
	// PermissionCache is how long a user's readable repositories are
	// remembered before their token is asked again.
	PermissionCache time.Duration `yaml:"permission_cache"`
	// SessionLifetime is how long a sign-in lasts.
	SessionLifetime time.Duration `yaml:"session_lifetime"`
	// MaxLiveStreams is how many sessions' live output one user may
	// follow at once on one replica (decision 0060): each stream reads
	// the store every 200 ms.
	MaxLiveStreams int `yaml:"max_live_streams"`
	// PublicScreenshotThumbnails serves a public repository's verify
	// screenshots at their digest without sign-in and shows them small in
	// its PRs (decision 0083). A private repository's never leave the
	// dashboard's sign-in, whatever this says.
	PublicScreenshotThumbnails bool `yaml:"public_screenshot_thumbnails"`
}

// DefaultMaxLiveStreams is web.max_live_streams's default: a few tabs of
// session pages, more than the six connections a browser opens to one
// host over HTTP/1.1.
const DefaultMaxLiveStreams = 10

// WebEnabled reports whether the dashboard is configured.
func (c Server) WebEnabled() bool { return c.Web.PublicURL != "" }

// validateWeb adds the web section's faults.
func (c Server) validateWeb(add func(key, format string, args ...any)) {
	w := c.Web
	if w.PublicURL == "" {
		if w.ClientID != "" || w.ClientSecret != "" || w.ClientSecretPath != "" || w.KeyPath != "" {
			add("web.public_url", "is needed with web.client_id, web.client_secret and web.key_path (the OAuth callback is under it)")
		}
		return
	}
	u, err := url.Parse(w.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		add("web.public_url", "must be an http(s) URL with a host and no query, such as https://inspect.example.com (found %q)", w.PublicURL)
	}
	if w.ClientID == "" {
		add("web.client_id", "is needed for sign-in: the GitHub App's client id")
	}
	switch {
	case w.ClientSecret == "" && w.ClientSecretPath == "":
		add("web.client_secret", "set it or web.client_secret_path: the GitHub App's client secret")
	case w.ClientSecret != "" && w.ClientSecretPath != "":
		add("web.client_secret", "set only one of it and web.client_secret_path")
	}
	if w.KeyPath == "" {
		add("web.key_path", "is needed: a file of 64 hex digits (openssl rand -hex 32) that seals users' tokens")
	}
	if w.PermissionCache < time.Second || w.PermissionCache > time.Hour {
		add("web.permission_cache", "must be between 1s and 1h (found %s)", w.PermissionCache)
	}
	if w.SessionLifetime < time.Minute {
		add("web.session_lifetime", "must be at least 1m (found %s)", w.SessionLifetime)
	}
	if w.MaxLiveStreams < 1 || w.MaxLiveStreams > 1000 {
		add("web.max_live_streams", "must be between 1 and 1000 (found %d)", w.MaxLiveStreams)
	}
}

// WebClientSecret is the App's OAuth client secret, read from its file
// when a path is set.
func (c Server) WebClientSecret() (string, error) {
	if c.Web.ClientSecret != "" {
		return c.Web.ClientSecret, nil
	}
	data, err := os.ReadFile(c.Web.ClientSecretPath)
	if err != nil {
		return "", fmt.Errorf("web.client_secret_path: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// WebKey is the dashboard's 32-byte key, from web.key_path.
func (c Server) WebKey() ([]byte, error) {
	data, err := os.ReadFile(c.Web.KeyPath)
	if err != nil {
		return nil, fmt.Errorf("web.key_path: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("web.key_path: %s must hold 64 hex digits (openssl rand -hex 32)", c.Web.KeyPath)
	}
	return key, nil
}
