package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadNamesTheFilesFaultsByTheirYAMLPath: yaml.v3 says "line 7:" for a
// value of the wrong type and an unknown key; Load goes on past them,
// names each by its path, and reports them beside the validation faults
// in one list.
func TestLoadNamesTheFilesFaultsByTheirYAMLPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inspect.yaml")
	yaml := strings.Join([]string{
		"listen: ''",
		"github: {app_id: 5, private_key: k, webhook_secret: s}",
		"sessions:",
		"  timeout: 5 minutes",
		"workers:",
		"  count: many",
		"egress:",
		"  registries:",
		"    npmjs:",
		"      kind: npm",
		"      url: https://registry.npmjs.org",
		"      tokn_path: /x",
		"",
	}, "\n")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, func(string) (string, bool) { return "", false })
	want := "invalid configuration:\n" +
		"  egress.registries.npmjs.tokn_path: unknown key `tokn_path`\n" +
		"  listen: must not be empty\n" +
		"  sessions.timeout: cannot unmarshal !!str `5 minutes` into time.Duration\n" +
		"  workers.count: cannot unmarshal !!str `many` into int"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
