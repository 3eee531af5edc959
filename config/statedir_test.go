package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeDefaultsLiveInTheStateDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	path := filepath.Join(t.TempDir(), "inspect.yaml")
	if err := os.WriteFile(path, []byte("github:\n  app_id: 5\n  private_key: k\n  webhook_secret: s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) (string, bool) { return "", false }
	cfg, err := Load(path, none)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, ".local", "state", "inspect")
	if cfg.StateDir != want || cfg.Database.DSN != filepath.Join(want, "inspect.db") || cfg.Snapshots.Store != "oci:"+filepath.Join(want, "inspect-snapshots") {
		t.Errorf("state_dir %q, dsn %q, store %q; want both under %s", cfg.StateDir, cfg.Database.DSN, cfg.Snapshots.Store, want)
	}
	if _, err := os.Stat(want); err == nil {
		t.Error("Load made the state directory; only serve may")
	}

	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	if cfg, err = Load(path, none); err != nil || cfg.StateDir != filepath.Join(xdg, "inspect") {
		t.Errorf("with XDG_STATE_HOME: %q %v", cfg.StateDir, err)
	}

	override := t.TempDir()
	env := map[string]string{"INSPECT_STATE_DIR": override, "INSPECT_DATABASE_DSN": "/abs/x.db", "INSPECT_SNAPSHOTS_STORE": "oci:snaps"}
	cfg, err = Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != override || cfg.Database.DSN != "/abs/x.db" || cfg.Snapshots.Store != "oci:"+filepath.Join(override, "snaps") {
		t.Errorf("override: %q %q %q", cfg.StateDir, cfg.Database.DSN, cfg.Snapshots.Store)
	}
}

func TestNoStateDirectoryIsAClearError(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	path := filepath.Join(t.TempDir(), "inspect.yaml")
	if err := os.WriteFile(path, []byte("github:\n  app_id: 5\n  private_key: k\n  webhook_secret: s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "set state_dir (INSPECT_STATE_DIR)") {
		t.Errorf("err = %v", err)
	}
	// Absolute paths need no state directory.
	env := map[string]string{"INSPECT_DATABASE_DSN": "/abs/x.db", "INSPECT_SNAPSHOTS_STORE": ""}
	if _, err := Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Errorf("absolute paths: %v", err)
	}
}

func TestWebhookSecretPathIsReadAtLoad(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inspect.yaml")
	doc := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  private_key: k\n  webhook_secret_path: " + secret + "\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	none := func(string) (string, bool) { return "", false }
	cfg, err := Load(path, none)
	if err != nil || cfg.GitHub.WebhookSecret != "s3cret" {
		t.Fatalf("%q %v", cfg.GitHub.WebhookSecret, err)
	}
	for name, content := range map[string]string{"missing": "", "empty": "\n"} {
		p := filepath.Join(dir, name)
		if content != "" || name == "empty" {
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		env := map[string]string{"INSPECT_GITHUB_WEBHOOK_SECRET_PATH": p}
		_, err := Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err == nil || !strings.Contains(err.Error(), "github.webhook_secret_path") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
