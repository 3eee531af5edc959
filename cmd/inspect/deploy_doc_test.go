package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docBlock is a fenced code block of a Markdown file.
type docBlock struct {
	info   string // the fence's info string: sh, yaml
	indent string // the fence's own indentation, taken off every line
	lines  []string
	line   int // where it starts
}

func codeBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	var cur *docBlock
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw) // blocks may be indented under a list item
		if fence, ok := strings.CutPrefix(line, "```"); ok {
			if cur == nil {
				cur = &docBlock{info: fence, line: n, indent: raw[:len(raw)-len(strings.TrimLeft(raw, " "))]}
			} else {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, strings.TrimRight(strings.TrimPrefix(raw, cur.indent), " "))
		}
	}
	if cur != nil {
		t.Fatalf("%s: the block at line %d is not closed", path, cur.line)
	}
	return out
}

var pathKeyRE = regexp.MustCompile(`(?m)^\s*(\w+_path): (\S+)$`)

// Every `inspect …` command in docs/deploy.md runs, against the config
// files the doc shows and the files they name; every other command is
// marked as not run here.
func TestDeployDocCommandsRun(t *testing.T) {
	root := t.TempDir()
	rewrite := strings.NewReplacer("/etc/inspect", filepath.Join(root, "etc/inspect"), "/var/lib/inspect", filepath.Join(root, "var/lib/inspect"))
	work := filepath.Join(root, "work")
	for _, d := range []string{work, filepath.Join(root, "etc/inspect"), filepath.Join(root, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	blocks := codeBlocks(t, "../../docs/deploy.md") // before the Chdir
	t.Chdir(work)
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("INSPECT_STATE_DIR", filepath.Join(root, "var/lib/inspect")) // as the default image sets it (the local image: its state/ below it)

	var commands [][]string
	for _, b := range blocks {
		switch b.info {
		case "yaml":
			name, ok := strings.CutPrefix(b.lines[0], "# FILE: ")
			if !ok {
				continue // a fragment, not a file
			}
			body := rewrite.Replace(strings.Join(b.lines, "\n") + "\n")
			if err := os.WriteFile(rewrite.Replace(name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, m := range pathKeyRE.FindAllStringSubmatch(body, -1) {
				writeReferenced(t, m[1], m[2])
			}
		case "sh":
			for i, line := range b.lines {
				line = strings.TrimSpace(line)
				switch {
				case line == "":
				case strings.Contains(line, "# not run here"):
					// Before the inspect prefix: `inspect setup` waits for a browser.
				case strings.HasPrefix(line, "inspect "):
					commands = append(commands, strings.Fields(rewrite.Replace(line))[1:])
				default:
					t.Errorf("docs/deploy.md:%d: %q is neither an inspect command nor marked \"# not run here\"", b.line+1+i, line)
				}
			}
		}
	}
	if len(commands) < 3 {
		t.Fatalf("found %d inspect commands in docs/deploy.md", len(commands))
	}
	for _, args := range commands {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Errorf("inspect %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) > 0 { // a read error shows as an empty dir; ReadDir of our own temp dir does not fail
		t.Errorf("a command wrote %s into the working directory", entries[0].Name())
	}
}

// writeReferenced makes a file a config names: the App key a real RSA key,
// the dashboard's key 64 hex digits (as `openssl rand -hex 32` writes it),
// anything else a secret.
func writeReferenced(t *testing.T, key, path string) {
	t.Helper()
	data := []byte("deploy-doc-test-secret-0123456789\n")
	if key == "key_path" {
		data = []byte(hex.EncodeToString(bytes.Repeat([]byte{0x5a}, 32)) + "\n")
	}
	if key == "private_key_path" {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		data = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheckConfigRefusesABadKeyAndContactsNothing(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "inspect.yaml")
	// api_url points nowhere: a check that contacted GitHub would hang or fail differently.
	cfg := "state_dir: " + dir + "\ngithub:\n  app_id: 5\n  api_url: http://127.0.0.1:1/\n  private_key_path: " + key + "\n  webhook_secret: s\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--config", path, "--check-config"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "not a PEM-encoded key") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}
