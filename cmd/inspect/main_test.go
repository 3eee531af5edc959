package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != version {
		t.Errorf("version: %d %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "inspect serve") {
		t.Errorf("help: %d %q", code, out.String())
	}
	errOut.Reset()
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown: %d %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run(nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "Usage") {
		t.Errorf("no args: %d %q", code, errOut.String())
	}
}

func TestServeRefusesToStartWithBadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inspect.yaml")
	if err := os.WriteFile(path, []byte("github:\n  app_id: 5\n  private_key: k\n  webhook_secret: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--config", path}, &out, &errOut)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "github.webhook_secret: must not be empty") {
		t.Errorf("the error does not name the key:\n%s", errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"serve", "--config", filepath.Join(dir, "missing.yaml")}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "missing.yaml") {
		t.Errorf("missing file: %d %q", code, errOut.String())
	}
}

// The production binary must never link a test stand-in.
func TestBinaryLinksNoStandIn(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "/internal/fake") || strings.Contains(pkg, "/internal/storetest") {
			t.Errorf("cmd/inspect links %s", pkg)
		}
	}
}

func TestServeRefusesABadPrivateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inspect.yaml")
	cfg := "github:\n  app_id: 5\n  app_slug: inspect\n  private_key: \"not a pem\"\n  webhook_secret: s\n" +
		"database:\n  dsn: " + filepath.Join(t.TempDir(), "x.db") + "\nlisten: 127.0.0.1:0\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--config", path}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "github.private_key: not a PEM-encoded key") {
		t.Errorf("the error does not name the key:\n%s", errOut.String())
	}
}
