package appsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// The files Write writes in its directory.
const (
	ConfigFile        = "inspect.yaml"
	PrivateKeyFile    = "github-app-key.pem"
	WebhookSecretFile = "github-webhook-secret"
	ClientSecretFile  = "github-client-secret"
	WebKeyFile        = "web-key"
)

// Written is where Write put things.
type Written struct {
	Dir, Config, PrivateKey, WebhookSecret, ClientSecret, WebKey string
}

// ServerKeys are what the written config sets beyond the App's identity.
type ServerKeys struct {
	// APIURL and WebURL are written as github.api_url and github.web_url.
	APIURL, WebURL string
	// PublicURL is web.public_url: the dashboard's sign-in uses the App's
	// OAuth client, whose callback the manifest listed under it.
	PublicURL string
}

// Write writes the App's key and secrets (each 0600) and a server config
// (0600) that names them, in dir (made 0700 if missing). It refuses to
// overwrite any of them: an App key lost to an overwrite cannot be
// downloaded again.
func Write(dir string, app App, keys ServerKeys) (Written, error) {
	if err := app.check(); err != nil {
		return Written{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Written{}, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return Written{}, err
	}
	w := Written{
		Dir:           abs,
		Config:        filepath.Join(abs, ConfigFile),
		PrivateKey:    filepath.Join(abs, PrivateKeyFile),
		WebhookSecret: filepath.Join(abs, WebhookSecretFile),
		ClientSecret:  filepath.Join(abs, ClientSecretFile),
		WebKey:        filepath.Join(abs, WebKeyFile),
	}
	for _, p := range []string{w.Config, w.PrivateKey, w.WebhookSecret, w.ClientSecret, w.WebKey} {
		if _, err := os.Lstat(p); err == nil {
			return Written{}, fmt.Errorf("%s exists; inspect setup never overwrites (move it away, or pass another --dir)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Written{}, err
		}
	}
	cfg := map[string]any{
		"github": map[string]any{
			"app_id":              app.ID,
			"app_slug":            app.Slug,
			"private_key_path":    w.PrivateKey,
			"webhook_secret_path": w.WebhookSecret,
			"api_url":             keys.APIURL,
			"web_url":             keys.WebURL,
		},
		"web": map[string]any{
			"public_url":         keys.PublicURL,
			"client_id":          app.ClientID,
			"client_secret_path": w.ClientSecret,
			"key_path":           w.WebKey,
		},
	}
	webKey, err := randomHex(32)
	if err != nil {
		return Written{}, err
	}
	doc, err := yaml.Marshal(cfg)
	if err != nil {
		return Written{}, err
	}
	header := "# Written by `inspect setup` for the GitHub App " + app.Slug + " (id " + fmt.Sprint(app.ID) + ").\n" +
		"# Every other key has its default: see examples/inspect.yaml and docs/configuration.md.\n"
	key := app.PEM
	if !strings.HasSuffix(key, "\n") {
		key += "\n"
	}
	files := []struct{ path, data string }{
		{w.PrivateKey, key},
		{w.WebhookSecret, app.WebhookSecret + "\n"},
		{w.ClientSecret, app.ClientSecret + "\n"},
		{w.WebKey, webKey + "\n"},
		{w.Config, header + string(doc)},
	}
	for _, f := range files {
		if err := writeNew(f.path, f.data); err != nil {
			return Written{}, err
		}
	}
	return w, nil
}

// writeNew creates path 0600, failing if it exists.
func writeNew(path, data string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // as above
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}
