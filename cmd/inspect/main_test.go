package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, v := range []string{"version", "--version"} {
		out.Reset()
		if code := run([]string{v}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != build.line() {
			t.Errorf("%s: %d %q", v, code, out.String())
		}
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

func TestVersionComesFromTheBuildInfo(t *testing.T) {
	info := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	b := readBuildInfo(info)
	if got := b.line(); got != "inspect (devel) (0123456789abcdef0123, modified)" {
		t.Errorf("line = %q", got)
	}
	if got := b.token(); got != "devel-0123456789ab-modified" {
		t.Errorf("token = %q", got)
	}
	tagged := readBuildInfo(func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, true
	})
	if tagged.token() != "v1.4.0" || tagged.line() != "inspect v1.4.0 (abc)" {
		t.Errorf("tagged: %q %q", tagged.token(), tagged.line())
	}
	none := readBuildInfo(func() (*debug.BuildInfo, bool) { return nil, false })
	if none.line() != "inspect unknown (no VCS revision)" {
		t.Errorf("no build info: %q", none.line())
	}
}

// -h and --help print the usage and exit 0 on every command.
func TestHelpExitsZeroEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"},
		{"serve", "-h"}, {"serve", "--help"},
		{"setup", "-h"}, {"setup", "--help"},
		{"run", "-h"}, {"run", "--help"},
		{"runner", "-h"}, {"runner", "--help"},
		{"runner", "forward", "-h"}, {"runner", "probe-tcp", "--help"},
		{"snapshot", "-h"}, {"snapshot", "--help"},
		{"snapshot", "build", "-h"}, {"snapshot", "list", "--help"}, {"snapshot", "gc", "-h"},
		{"buildkite", "-h"}, {"buildkite", "setup", "-h"}, {"buildkite", "setup", "--help"},
		{"tools", "-h"}, {"tools", "--help"}, {"tools", "build", "-h"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Errorf("inspect %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
		}
		if out.Len()+errOut.Len() == 0 {
			t.Errorf("inspect %s: printed no usage", strings.Join(args, " "))
		}
	}
}

func TestSetupRefusesWithoutAPublicURL(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"setup", "--listen", "127.0.0.1:0"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--public-url is required") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"setup", "--listen", "127.0.0.1:0", "--public-url", "https://i.example", "--org", "bad org!"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "not a GitHub login") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// No command writes into the working directory unless asked, and a read
// creates no store.
func TestSnapshotListAndGCCreateNothing(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	for _, args := range [][]string{{"snapshot", "list", "--repo", "o/r"}, {"snapshot", "gc", "--repo", "o/r"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "no layout") {
			t.Errorf("inspect %s: %d %s", strings.Join(args, " "), code, errOut.String())
		}
	}
	for _, dir := range []string{cwd, home} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			t.Errorf("%s holds %v", dir, entries[0].Name())
		}
	}
}

func TestServeChecksEveryReferencedFileAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inspect.yaml")
	cfg := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  private_key_path: " + filepath.Join(dir, "nokey.pem") + "\n  webhook_secret: s\n" +
		"agents:\n  providers:\n    openai:\n      kind: openai\n      base_url: https://api.openai.com/v1\n      api_key_path: " + filepath.Join(dir, "nokey") + "\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--config", path}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"github.private_key_path", "agents.providers.openai.api_key_path"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("the error does not name %s:\n%s", want, errOut.String())
		}
	}
}

// A config fault and a missing file are reported in one start, as
// --check-config reports them, not one run after the other.
func TestServeReportsConfigAndFileFaultsInOneRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "inspect.yaml")
	cfg := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  private_key_path: " + filepath.Join(dir, "nokey.pem") + "\n  webhook_secret: s\n" +
		"sessions:\n  timeout: soon\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--config", path}, &out, &errOut); code != 2 {
		t.Errorf("exit %d, want 2 (the config itself is wrong)", code)
	}
	for _, want := range []string{"sessions.timeout", "github.private_key_path"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("one start does not name %s:\n%s", want, errOut.String())
		}
	}
}

func TestSetupDefaultsForGitHubAndEnterpriseServer(t *testing.T) {
	for web, want := range map[string]string{
		"https://github.com":             "https://api.github.com/",
		"https://acme.ghe.com":           "https://api.acme.ghe.com/",
		"https://ghe.example.com":        "https://ghe.example.com/api/v3/",
		"https://ghe.example.com/":       "https://ghe.example.com/api/v3/",
		"http://127.0.0.1:9999/ghe-root": "http://127.0.0.1:9999/ghe-root/api/v3/",
	} {
		if got := defaultAPIURL(web); got != want {
			t.Errorf("defaultAPIURL(%q) = %q, want %q", web, got, want)
		}
	}
	if got := browserAddr(&net.TCPAddr{IP: net.IPv4zero, Port: 3000}); got != "127.0.0.1:3000" {
		t.Errorf("browserAddr(0.0.0.0:3000) = %q", got)
	}
	if got := browserAddr(&net.TCPAddr{IP: net.ParseIP("::1"), Port: 3000}); got != "[::1]:3000" {
		t.Errorf("browserAddr([::1]:3000) = %q", got)
	}
}
