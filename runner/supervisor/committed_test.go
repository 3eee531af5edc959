package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// hiddenTest is a test file whose TestMain reports a pass without running
// a test: verify passes wherever it is.
const hiddenTest = `package widgets

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("PASS")
	os.Exit(0)
}
`

// The agent hides a passing TestMain, a .gitattributes that would make its
// change look binary, and the .gitignore that hides them both and itself.
// What the pinned commit does not ignore is part of the change whatever
// the workspace's ignore and attribute files say: verify ran on exactly
// what is committed, and the diffstat shows every line.
func TestHiddenFilesAreCommittedOrNotVerified(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	agent := `set -e
printf '.gitignore\n.gitattributes\nzz_hidden_test.go\n' > .gitignore
printf '* -diff\n' > .gitattributes
printf '%s' "$1" > zz_hidden_test.go
sed -i 's/return a + b + 1/return a + b/' calc.go
`
	// The verify command passes when the hidden TestMain and the fix are
	// there, as `go test` would (app/committed_e2e_test.go runs that),
	// without compiling anything.
	spec := ch.Spec("sess-hide", "sess-hide-a1", sha, []string{"sh", "-c", agent, "sh", hiddenTest},
		command("test", time.Minute, "sh", "-c", `grep -q 'func TestMain' zz_hidden_test.go && grep -q 'return a + b }' calc.go`))
	h := newHarness(t, ch, spec)
	rep := h.run(t, context.Background())
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if u.Manifest == nil {
		t.Fatal("no manifest")
	}
	var paths []string
	for _, f := range u.Manifest.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{".gitattributes", ".gitignore", "calc.go", "zz_hidden_test.go"}; !slices.Equal(paths, want) {
		t.Fatalf("manifest files %v, want %v", paths, want)
	}
	got := map[string]string{}
	for _, c := range ev.Changes {
		got[c.Path] = fmt.Sprintf("%s +%d -%d binary=%v test=%v", c.Status, c.Additions, c.Deletions, c.Binary, c.Test)
	}
	want := map[string]string{
		".gitattributes":    "added +1 -0 binary=false test=false",
		".gitignore":        "added +3 -0 binary=false test=false",
		"calc.go":           "modified +1 -1 binary=false test=false",
		"zz_hidden_test.go": fmt.Sprintf("added +%d -0 binary=false test=true", strings.Count(hiddenTest, "\n")),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diffstat\n got %v\nwant %v", got, want)
	}
	// Verify ran on the pinned commit plus exactly that change.
	assertVerifyWorkspaceIs(t, h, rep, sha, u.Manifest)
}

// A file the pinned commit's own .gitignore ignores is not part of the
// change, so it is not in the workspace verify runs on either: the hidden
// TestMain cannot make a failing test pass.
func TestFileThePinnedCommitIgnoresCannotPassVerify(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{".gitignore": "*_local_test.go\n"})
	// The verify command passes exactly when the hidden file is there, as
	// `go test` does with its TestMain (without compiling anything).
	spec := ch.Spec("sess-ign", "sess-ign-a1", sha, []string{"sh", "-c", `printf '%s' "$1" > zz_local_test.go`, "sh", hiddenTest},
		command("test", time.Minute, "sh", "-c", `grep -q 'func TestMain' zz_local_test.go`))
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed || !strings.Contains(ev.Reason, "test exited with status 2") {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 0 {
		t.Errorf("manifest %+v, want an empty change", u.Manifest)
	}
}

// What verify writes, a JUnit report of node's test runner and a build
// output, is never part of the change, which was fixed before verify; the
// report is still read for the evidence.
func TestNothingVerifyWritesIsInTheChange(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{
		"math.test.js": "const test = require('node:test');\ntest('adds', () => {});\n",
	})
	spec := ch.Spec("sess-vw", "sess-vw-a1", sha, []string{"sh", "-c", "echo 'Adds.' > docs.md"},
		command("node", 2*time.Minute, "node", "--test", "--test-reporter=junit", "--test-reporter-destination=junit.xml", "math.test.js"),
		command("build", time.Minute, "sh", "-c", "mkdir -p dist && echo built > dist/widgets.js"),
	)
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 1 || u.Manifest.Files[0].Path != "docs.md" {
		t.Fatalf("manifest %+v, want docs.md alone", u.Manifest)
	}
	if len(ev.Changes) != 1 {
		t.Errorf("diffstat %+v", ev.Changes)
	}
	if ev.Tests == nil || ev.Tests.Passed != 1 {
		t.Errorf("the JUnit report was not read: %+v", ev.Tests)
	}
}

// A 64 GB sparse file is refused by its size, before anything reads it:
// the session ends with a clear refusal and the evidence arrives.
func TestHugeSparseFileIsRefusedAtOnce(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-huge", "sess-huge-a1", sha, []string{"sh", "-c", "truncate -s 64G huge.bin && echo small > small.txt"},
		command("never", time.Minute, "true"))
	h := newHarness(t, ch, spec)
	h.cfg.KeepWorkspace = false // the harness would read the whole tree
	// Reading 64 GB takes minutes; the whole finish is given far less.
	h.cfg.FinishTimeout = 20 * time.Second
	start := time.Now()
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "the change writes huge.bin, 68719476736 bytes, more than the 1048576 this session allows; the change is not sent") {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if u.Manifest != nil {
		t.Error("a refused change was sent")
	}
	if len(ev.Commands) != 1 || ev.Commands[0].Name != "agent" {
		t.Errorf("commands %+v: the agent's evidence is kept, verify never ran", ev.Commands)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("the session took %s", d)
	}
}

// assertVerifyWorkspaceIs checks that the verify workspace holds the
// pinned commit's files with the manifest applied, and nothing else (its
// own .git aside).
func assertVerifyWorkspaceIs(t *testing.T, h *harness, rep *Report, sha string, m *contract.Manifest) {
	t.Helper()
	want := map[string]string{}
	bare := h.ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo)
	for _, p := range strings.Split(gitOut(t, bare, "ls-tree", "-r", "--name-only", sha), "\n") {
		want[p] = gitOut(t, bare, "show", sha+":"+p)
	}
	for _, f := range m.Files {
		if f.Deleted {
			delete(want, f.Path)
			continue
		}
		want[f.Path] = strings.TrimSpace(string(f.Content))
	}
	verify := filepath.Join(rep.AttemptDir, verifyDirName)
	got := map[string]string{}
	err := filepath.WalkDir(verify, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(verify, p)
		if rel == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		var b []byte
		if d.Type()&os.ModeSymlink != 0 {
			s, err := os.Readlink(p)
			b = []byte(s)
			if err != nil {
				return err
			}
		} else if b, err = os.ReadFile(p); err != nil {
			return err
		}
		got[filepath.ToSlash(rel)] = strings.TrimSpace(string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("verify workspace\n got %q\nwant %q", got, want)
	}
}

// What setup leaves outside the change (dependencies in a directory the
// pinned commit ignores) is in the verify workspace as setup left it: a
// file there the agent rewrote, and a file it added there, are not (the
// rewritten one is missing: its content as setup left it is gone).
func TestVerifyGetsWhatSetupLeftNotWhatTheAgentDid(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{".gitignore": ".deps/\nnode_modules/\n"})
	spec := ch.Spec("sess-deps", "sess-deps-a1", sha, []string{"sh", "-c", "echo agent > .deps/lib/dep.txt && echo planted > .deps/lib/planted.txt"},
		command("deps", time.Minute, "sh", "-c", `test ! -e .deps/lib/dep.txt && test "$(cat .deps/top.txt)" = setup && test ! -e .deps/lib/planted.txt && test "$(cat node_modules/a/index.js)" = m`))
	spec.Setup = []contract.Command{command("install", time.Minute, "sh", "-c", "mkdir -p .deps/lib node_modules/a && echo setup > .deps/lib/dep.txt && echo setup > .deps/top.txt && echo m > node_modules/a/index.js")}
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 0 {
		t.Errorf("manifest %+v: what the pinned commit ignores is not part of the change", u.Manifest)
	}
}
