package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
)

// TestCheckConfigReportsEveryFaultOnceInOneRun is issue 34's acceptance
// table: one config with a fault of each kind (two missing key files, a bad
// enum, an unknown provider, a bad duration in the file and in the
// environment, an environment override of a bad value, a missing bwrap) is
// reported in one --check-config run, each fault once, by the YAML path the
// operator wrote or the variable that set it, in a fixed order.
func TestCheckConfigReportsEveryFaultOnceInOneRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inspect.yaml")
	yaml := strings.Join([]string{
		"state_dir: " + dir,
		"github:",
		"  app_id: 5",
		"  private_key_path: " + dir + "/missing.pem",
		"  webhook_secret_path: " + dir + "/missing-secret",
		"executor:",
		"  kind: local",
		"egress:",
		"  registries:",
		"    goproxy:",
		"      kind: gopher",
		"      url: https://proxy.golang.org",
		"agents:",
		"  models:",
		"    - name: gpt-5-codex",
		"      provider: nowhere",
		"sessions:",
		"  timeout: 5 minutes",
		"",
	}, "\n")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"INSPECT_REPAIR_COOLDOWN": "soon", // does not parse
		"INSPECT_LOG_LEVEL":       "loud", // parses, then fails validation
	}
	lookEnv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var looked []string
	probes := config.Probes{
		LookPath: func(file string) (string, error) {
			looked = append(looked, file)
			return "", errors.New("executable file not found in $PATH")
		},
		CheckPrivateKey: func([]byte) error { t.Error("a missing key file was parsed"); return nil },
	}
	var out, errOut bytes.Buffer
	if code := checkConfig(path, lookEnv, probes, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := []string{
		`inspect: invalid configuration:`,
		`  INSPECT_REPAIR_COOLDOWN (repair.cooldown): not a duration such as 30s or 2m`,
		`  agents.models[0].provider: "nowhere" is not in agents.providers (none is configured)`,
		`  egress.registries.goproxy.kind: must be one of goproxy, npm, pypi`,
		`  executor.kind: local runs each sandbox under bwrap (bubblewrap), which is not on PATH: install it (Debian: apt-get install bubblewrap)`,
		`  github.private_key_path: open ` + dir + `/missing.pem: no such file or directory`,
		`  github.webhook_secret_path: open ` + dir + `/missing-secret: no such file or directory`,
		`  log_level: "loud" is not one of trace, debug, info, warn, error (set by INSPECT_LOG_LEVEL)`,
		"  sessions.timeout: cannot unmarshal !!str `5 minutes` into time.Duration",
	}
	got := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
	var faults []string
	for _, line := range got {
		if !strings.HasPrefix(line, "inspect: warning: ") {
			faults = append(faults, line)
		}
	}
	if strings.Join(faults, "\n") != strings.Join(want, "\n") {
		t.Errorf("faults:\n%s\nwant:\n%s", strings.Join(faults, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(looked, ",") != "bwrap" {
		t.Errorf("looked for %q, want bwrap", looked)
	}
	if out.Len() != 0 {
		t.Errorf("stdout: %q", out.String())
	}
}

// TestCheckConfigWarnsWhenNoModelIsOffered: a config that is valid but
// offers no model passes, with a warning that only command agents can run.
func TestCheckConfigWarnsWhenNoModelIsOffered(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inspect.yaml")
	yaml := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  private_key_path: " + key + "\n  webhook_secret: s\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	probes := config.Probes{
		LookPath:        func(string) (string, error) { return "/usr/bin/bwrap", nil },
		CheckPrivateKey: func([]byte) error { return nil },
	}
	noEnv := func(string) (string, bool) { return "", false }
	var out, errOut bytes.Buffer
	if code := checkConfig(path, noEnv, probes, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := "inspect: warning: agents.models: none is offered, so only `command` agents can run (no agent preset has a model)\n"
	if errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}

// A provenance key that does not parse as its entry says is a
// --check-config fault, as it would stop serve: here a public key given
// as the signing key's private_key_path. A sound one passes.
func TestCheckConfigParsesTheProvenanceKeys(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	webKey := filepath.Join(dir, "web.key")
	if err := os.WriteFile(key, []byte("pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(webKey, []byte(strings.Repeat("5a", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	signing, pub := keyFiles(t)
	probes := config.Probes{
		LookPath:            func(string) (string, error) { return "/usr/bin/bwrap", nil },
		CheckPrivateKey:     func([]byte) error { return nil },
		CheckProvenanceKeys: checkProvenanceKeys,
	}
	noEnv := func(string) (string, bool) { return "", false }
	for name, tc := range map[string]struct {
		signingPath string
		code        int
		want        string
	}{
		"a public key to sign with": {pub, 1, "  provenance.keys[0].private_key_path: " + pub + " holds no private key\n"},
		"a private key":             {signing, 0, ""},
	} {
		path := filepath.Join(dir, "inspect.yaml")
		yaml := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  private_key_path: " + key + "\n  webhook_secret: s\n" +
			"web:\n  public_url: https://inspect.example.com\n  client_id: c\n  client_secret: s\n  key_path: " + webKey + "\n" +
			"provenance:\n  signing_key: k1\n  keys:\n    - id: k1\n      private_key_path: " + tc.signingPath + "\n"
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := checkConfig(path, noEnv, probes, &out, &errOut)
		if code != tc.code || (tc.want != "" && !strings.Contains(errOut.String(), tc.want)) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s", name, code, tc.code, tc.want, errOut.String())
		}
	}
}
