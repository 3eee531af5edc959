package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFilesNamesEveryMissingOrEmptyFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	c.GitHub.PrivateKeyPath = filepath.Join(dir, "no-key.pem")
	c.Executor.Kind = "buildkite"
	c.Buildkite.APITokenPath = empty
	c.Agents.Providers = map[string]Provider{"openai": {KeyPath: filepath.Join(dir, "no-openai")}, "anthropic": {KeyPath: good}}
	c.Egress.Registries = map[string]Registry{"npm": {TokenPath: filepath.Join(dir, "no-npm")}}
	err := c.CheckFiles()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"github.private_key_path: open " + filepath.Join(dir, "no-key.pem"),
		"buildkite.api_token_path: " + empty + " is empty",
		"agents.providers.openai.api_key_path: open",
		"egress.registries.npm.token_path: open",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "anthropic") {
		t.Errorf("a good file is reported:\n%v", err)
	}
	c = Defaults()
	c.GitHub.PrivateKeyPath = good
	if err := c.CheckFiles(); err != nil {
		t.Errorf("all present: %v", err)
	}
}

func TestCheckFilesReadsTheDashboardsFilesWhenItIsOn(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "web-key")
	if err := os.WriteFile(bad, []byte("not hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Defaults()
	c.Web.PublicURL = "https://inspect.example.com"
	c.Web.ClientSecretPath = filepath.Join(dir, "no-secret")
	c.Web.KeyPath = bad
	err := c.CheckFiles()
	if err == nil || !strings.Contains(err.Error(), "web.client_secret_path: open") || !strings.Contains(err.Error(), "web.key_path: "+bad+" must hold 64 hex digits") {
		t.Errorf("err = %v", err)
	}
}
