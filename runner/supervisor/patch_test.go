package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// patchFixture is a pinned commit fetched into an attempt's workspace, and
// the supervisor's git for it.
type patchFixture struct {
	ws  *workspace
	g   *git
	sha string
}

func newPatchFixture(t *testing.T, files map[string]string) *patchFixture {
	t.Helper()
	root := t.TempDir()
	subject := &benchSubject{tb: t, dir: filepath.Join(root, "subject")}
	for name, body := range files {
		p := filepath.Join(subject.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	subject.git("init", "--quiet", "--initial-branch=main")
	subject.git("add", "-A")
	subject.git("commit", "--quiet", "-m", "subject")
	subject.sha = strings.TrimSpace(subject.git("rev-parse", "HEAD"))
	ws, err := newWorkspace(root, "patch")
	if err != nil {
		t.Fatal(err)
	}
	g := &git{bin: "git", home: ws.homeDir, path: os.Getenv("PATH")}
	if err := ws.fetch(context.Background(), g, subject.dir, subject.sha, ""); err != nil {
		t.Fatal(err)
	}
	return &patchFixture{ws: ws, g: g, sha: subject.sha}
}

func (f *patchFixture) write(t *testing.T, name, body string) {
	t.Helper()
	p := filepath.Join(f.ws.work, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	plantedToken = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
	exactSecret  = "an-exact-secret-value-42"
	pemBody      = "MIIEowIBAAKCAQEAzZ9plantedkeymaterial"
)

// The patch is of exactly the staged change: a modification, a deletion,
// an addition, a binary file as one line, a symlink as its target, with
// the pinned commit's attributes (which would call calc.go binary) having
// no say; a token by format, an exact secret and a private key are
// redacted; the manifest and the diffstat are of the same change.
func TestPatchIsOfTheStagedChangeAndRedacted(t *testing.T) {
	f := newPatchFixture(t, map[string]string{
		"calc.go":        "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b + 1\n}\n",
		"obsolete.txt":   "obsolete\n",
		"blob.bin":       "\x00\x01\x02old",
		".gitattributes": "*.go -diff\n",
	})
	f.write(t, "calc.go", "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n")
	if err := os.Remove(filepath.Join(f.ws.work, "obsolete.txt")); err != nil {
		t.Fatal(err)
	}
	f.write(t, "blob.bin", "\x00\x01\x02new")
	f.write(t, "docs/new.md", "<script>alert(1)</script>\ntoken "+plantedToken+"\nexact "+exactSecret+"\n"+
		"-----BEGIN RSA PRIVATE KEY-----\n"+pemBody+"\n-----END RSA PRIVATE KEY-----\nafter the key\n")
	if err := os.Symlink("calc.go", filepath.Join(f.ws.work, "calc.link")); err != nil {
		t.Fatal(err)
	}
	red := contract.NewRedactor(exactSecret)
	c, err := collectChange(context.Background(), f.g, f.ws, f.sha, contract.ManifestLimits{}, nil, nil, red)
	if err != nil {
		t.Fatal(err)
	}
	if c.manifest == nil || len(c.manifest.Files) != 5 || len(c.diffstat) != 5 {
		t.Fatalf("manifest %+v, diffstat %+v", c.manifest, c.diffstat)
	}
	if c.diff == nil || c.diff.Truncated {
		t.Fatalf("diff %+v", c.diff)
	}
	p := c.diff.Patch
	for _, want := range []string{
		"diff --git a/calc.go b/calc.go\n",
		"-\treturn a + b + 1\n+\treturn a + b\n",
		"diff --git a/obsolete.txt b/obsolete.txt\ndeleted file mode 100644\n",
		"-obsolete\n",
		"diff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n",
		"+<script>alert(1)</script>\n",
		"+token " + contract.Redacted + "\n",
		"+exact " + contract.Redacted + "\n",
		"+after the key\n",
		"Binary files a/blob.bin and b/blob.bin differ\n",
		"diff --git a/calc.link b/calc.link\nnew file mode 120000\n",
		"+calc.go\n\\ No newline at end of file\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the patch lacks %q:\n%s", want, p)
		}
	}
	for _, secret := range []string{plantedToken, exactSecret, pemBody, "ghp_"} {
		if strings.Contains(p, secret) {
			t.Errorf("the patch holds %q:\n%s", secret, p)
		}
	}
	if strings.Contains(p, ".inspect") {
		t.Errorf("the patch shows the supervisor's files:\n%s", p)
	}

	// Cut to a small cap: whole lines, a prefix of the whole patch,
	// marked truncated.
	small, err := stagedPatch(context.Background(), f.g, f.ws, f.sha, red, 300)
	if err != nil {
		t.Fatal(err)
	}
	if !small.Truncated || len(small.Patch) > 300 || small.Patch == "" || !strings.HasSuffix(small.Patch, "\n") || !strings.HasPrefix(p, small.Patch) {
		t.Errorf("cut to 300 bytes: truncated %v, %d bytes:\n%s", small.Truncated, len(small.Patch), small.Patch)
	}
	// A cap that falls inside the planted token: its line is dropped
	// whole, never shown in part.
	raw, err := f.ws.private(context.Background(), f.g, nil, nil, append(append([]string(nil), patchArgs...), f.sha, "--")...)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(raw), plantedToken)
	if at < 0 {
		t.Fatalf("the raw patch lacks the token")
	}
	for _, cap := range []int{at + 4, at + 10, at + len(plantedToken) - 1} {
		d, err := stagedPatch(context.Background(), f.g, f.ws, f.sha, red, cap)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Truncated || strings.Contains(d.Patch, "ghp_") || strings.Contains(d.Patch, "+token") || !strings.HasSuffix(d.Patch, "\n") {
			t.Errorf("cut at %d: truncated %v, tail %q", cap, d.Truncated, d.Patch[max(len(d.Patch)-80, 0):])
		}
	}
}

// No change, no patch.
func TestNoChangeHasNoPatch(t *testing.T) {
	f := newPatchFixture(t, map[string]string{"a.txt": "a\n"})
	c, err := collectChange(context.Background(), f.g, f.ws, f.sha, contract.ManifestLimits{}, nil, nil, contract.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	if c.diff != nil || c.manifest == nil || len(c.manifest.Files) != 0 {
		t.Errorf("diff %+v, manifest %+v", c.diff, c.manifest)
	}
}

// A change the manifest cannot carry (more files than the session allows)
// still has its diffstat and patch, for the reviewer.
func TestRefusedChangeKeepsItsPatch(t *testing.T) {
	f := newPatchFixture(t, map[string]string{"a.txt": "a\n"})
	f.write(t, "b.txt", "b\n")
	f.write(t, "c.txt", "c\n")
	c, err := collectChange(context.Background(), f.g, f.ws, f.sha, contract.ManifestLimits{MaxFiles: 1}, nil, nil, contract.NewRedactor())
	if err == nil || c.manifest != nil {
		t.Fatalf("err %v, manifest %+v", err, c.manifest)
	}
	if len(c.diffstat) != 2 || c.diff == nil || !strings.Contains(c.diff.Patch, "+b\n") || !strings.Contains(c.diff.Patch, "+c\n") {
		t.Errorf("diffstat %+v, diff %+v", c.diffstat, c.diff)
	}
}
