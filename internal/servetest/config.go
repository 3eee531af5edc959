package servetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
)

// WebhookSecret is the github.webhook_secret BaseConfig sets, for signing
// deliveries.
const WebhookSecret = "servetest-webhook-secret"

// Config is one replica's configuration.
type Config struct {
	// YAML is the config file's document, keys as in docs/configuration.md;
	// nested sections are map[string]any. Start sets "listen" to
	// 127.0.0.1:0 unless it is set, and reads the port from the log. Start
	// does not modify the map, so one Config may start several replicas.
	YAML map[string]any
	// Env is extra KEY=VALUE environment for the process. The test's own
	// INSPECT_* variables are not passed on, so that a developer's
	// environment cannot change the config under test; set them here.
	Env []string
	// Name labels the replica's log lines in failure output; empty means
	// "replica-N".
	Name string
}

// BaseConfig is a minimal valid config for a replica against the stand-in
// gh and the PostgreSQL database at dsn (see NewDatabase): the App's key in
// a file, WebhookSecret, executor.kind none (sessions are accepted and
// prepared, never run, so no sandbox is needed).
func BaseConfig(t testing.TB, gh *fakegithub.Server, dsn string) Config {
	t.Helper()
	keyPath := filepath.Join(t.TempDir(), "app-key.pem")
	if err := os.WriteFile(keyPath, gh.AppPrivateKeyPEM(), 0o600); err != nil {
		t.Fatalf("servetest: %v", err)
	}
	return Config{YAML: map[string]any{
		"github": map[string]any{
			"api_url":          gh.APIURL(),
			"app_id":           gh.AppID(),
			"app_slug":         gh.AppSlug(),
			"private_key_path": keyPath,
			"webhook_secret":   WebhookSecret,
		},
		"database": map[string]any{"driver": "postgres", "dsn": dsn},
		"executor": map[string]any{"kind": "none"},
	}}
}

// Set sets a dotted key ("workers.heartbeat", "http.shutdown_timeout"),
// making the sections on the way. Values are anything YAML encodes:
// durations as strings ("500ms") or time.Duration.
func (c *Config) Set(key string, value any) {
	if c.YAML == nil {
		c.YAML = map[string]any{}
	}
	parts := strings.Split(key, ".")
	m := c.YAML
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = value
}

// replicaName is the default Name of the n'th replica of a test.
func replicaName(n int) string { return "replica-" + strconv.Itoa(n) }
