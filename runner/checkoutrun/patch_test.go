package checkoutrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Every kind of change a manifest carries survives the trip through the
// patch: edits, additions, deletions, a directory replaced by a file and a
// file by a directory, modes, symlinks, binary content, awkward names, a
// missing final newline.
func TestBuildPatchCarriesEveryKindOfChange(t *testing.T) {
	t.Parallel()
	binary := []byte{0, 1, 2, 3, 0xff, 0xfe, 0, 'x'}
	repo, _ := newRepo(t, map[string]string{
		"a.txt":          "one\ntwo\n",
		"dir/x.txt":      "x\n",
		"dir/y.txt":      "y\n",
		"f":              "a file that becomes a directory\n",
		"tool.sh":        "#!/bin/sh\necho hi\n",
		"blob.bin":       string(binary),
		"keep/same.txt":  "same\n",
		".gitattributes": "*.txt diff=nosuchdriver\n",
	})
	if err := os.Chmod(filepath.Join(repo, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	testGit(t, repo, "add", "tool.sh")
	testGit(t, repo, "commit", "--quiet", "-m", "exec")
	sha := strings.TrimSpace(testGit(t, repo, "rev-parse", "HEAD"))
	objects := strings.TrimSpace(testGit(t, repo, "rev-parse", "--path-format=absolute", "--git-path", "objects"))

	newBinary := append(append([]byte(nil), binary...), 0, 9, 9)
	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: sha, Files: []contract.FileChange{
		{Path: "a.txt", Mode: contract.ModeFile, Content: []byte("one\n2\nno newline at the end")},
		{Path: "dir/x.txt", Deleted: true},
		{Path: "dir/y.txt", Deleted: true},
		{Path: "dir", Mode: contract.ModeFile, Content: []byte("dir is a file now\n"), Added: true},
		{Path: "f", Deleted: true},
		{Path: "f/inner.txt", Mode: contract.ModeFile, Content: []byte("inside\n"), Added: true},
		{Path: "tool.sh", Mode: contract.ModeFile, Content: []byte("#!/bin/sh\necho hi\n")},
		{Path: "new/run.sh", Mode: contract.ModeExecutable, Content: []byte("#!/bin/sh\nexit 0\n"), Added: true},
		{Path: "link", Mode: contract.ModeSymlink, Content: []byte("a.txt"), Added: true},
		{Path: "blob.bin", Mode: contract.ModeFile, Content: newBinary},
		{Path: "sp ace/é \"q\".txt", Mode: contract.ModeFile, Content: []byte("awkward\n"), Added: true},
		{Path: "keep/same.txt", Mode: contract.ModeFile, Content: []byte("same\n")},
	}}
	m.Normalize()
	patch, err := BuildPatch(context.Background(), "", objects, m)
	if err != nil {
		t.Fatalf("BuildPatch: %v", err)
	}
	if bytes.Contains(patch, []byte("same.txt")) {
		t.Errorf("an unchanged rewrite is in the patch:\n%s", patch)
	}

	clone := filepath.Join(t.TempDir(), "clone")
	testGit(t, filepath.Dir(clone), "clone", "--quiet", repo, clone)
	patchFile := filepath.Join(t.TempDir(), "p.patch")
	if err := os.WriteFile(patchFile, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	testGit(t, clone, "apply", "--check", patchFile)
	testGit(t, clone, "apply", patchFile)

	for _, f := range m.Files {
		p := filepath.Join(clone, filepath.FromSlash(f.Path))
		fi, err := os.Lstat(p)
		switch {
		case f.Deleted:
			if err == nil && !fi.IsDir() {
				t.Errorf("%s: still there", f.Path)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", f.Path, err)
			continue
		case f.Mode == contract.ModeSymlink:
			if target, err := os.Readlink(p); err != nil || target != string(f.Content) {
				t.Errorf("%s: symlink to %q (%v)", f.Path, target, err)
			}
			continue
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, f.Content) {
			t.Errorf("%s: content %q, want %q", f.Path, got, f.Content)
		}
		if exec := fi.Mode()&0o100 != 0; exec != (f.Mode == contract.ModeExecutable) {
			t.Errorf("%s: mode %v, want %s", f.Path, fi.Mode(), f.Mode)
		}
	}
	// And git sees exactly the manifest's modes.
	testGit(t, clone, "add", "--all")
	staged := testGit(t, clone, "ls-files", "--stage", "--", "tool.sh", "new/run.sh", "link")
	for _, want := range []string{"100644 ", "100755 ", "120000 "} {
		if !strings.Contains(staged, want) {
			t.Errorf("ls-files lacks mode %s:\n%s", want, staged)
		}
	}
	// The user's repository was only read.
	if st := testGit(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("the repository changed:\n%s", st)
	}
}

func TestBuildPatchOfNoChangeIsEmpty(t *testing.T) {
	t.Parallel()
	repo, sha := newRepo(t, map[string]string{"a.txt": "a\n"})
	objects := filepath.Join(repo, ".git", "objects")
	for _, m := range []*contract.Manifest{
		{Version: contract.ManifestVersion, BaseSHA: sha},
		{Version: contract.ManifestVersion, BaseSHA: sha, Files: []contract.FileChange{{Path: "a.txt", Mode: contract.ModeFile, Content: []byte("a\n")}}},
	} {
		patch, err := BuildPatch(context.Background(), "", objects, m)
		if err != nil || len(patch) != 0 {
			t.Errorf("%d files: patch %q, %v", len(m.Files), patch, err)
		}
	}
	// A base commit the repository lacks is an error, not an empty patch.
	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: strings.Repeat("ab", 20),
		Files: []contract.FileChange{{Path: "a.txt", Deleted: true}}}
	if _, err := BuildPatch(context.Background(), "", objects, m); err == nil || !strings.Contains(err.Error(), "not in the repository") {
		t.Errorf("unknown base: %v", err)
	}
}
