package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRebaseIgnorePattern(t *testing.T) {
	for _, c := range []struct{ dir, line, want string }{
		{"", "*.log", "*.log"},
		{"", "/build/", "/build/"},
		{"web", "*.log", "web/**/*.log"},
		{"web", "dist/", "web/**/dist/"},
		{"web", "/dist", "web/dist"},
		{"web", "a/b", "web/a/b"},
		{"web", "!keep.log", "!web/**/keep.log"},
		{"web", "!/a/keep", "!web/a/keep"},
		{"web", `\#literal`, `web/**/\#literal`},
		{"a/b", "**/x", "a/b/**/x"},
		{"web", "# a comment", ""},
		{"web", "   ", ""},
	} {
		got, ok := rebaseIgnorePattern(c.dir, c.line)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("rebaseIgnorePattern(%q, %q) = %q %v, want %q", c.dir, c.line, got, ok, c.want)
		}
	}
}

// The rewritten patterns, as one --exclude-from file, ignore what git
// ignores with the .gitignore files in place.
func TestRebasedPatternsIgnoreWhatGitDoes(t *testing.T) {
	dir := t.TempDir()
	ignores := map[string]string{
		".gitignore":     "*.log\n/top-only\n",
		"web/.gitignore": "dist/\n!keep.log\n/local.txt\n",
	}
	files := []string{"a.log", "top-only", "web/top-only", "web/x.log", "web/keep.log", "web/dist/app.js",
		"web/sub/dist/app.js", "web/local.txt", "web/sub/local.txt", "other/dist/app.js", "plain.txt"}
	for p, c := range ignores {
		writeTestFile(t, dir, p, c)
	}
	for _, p := range files {
		writeTestFile(t, dir, p, "x\n")
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	git("init", "--quiet")
	want := strings.Fields(git("ls-files", "--others", "--exclude-standard"))
	var rules strings.Builder
	for _, f := range []string{".gitignore", "web/.gitignore"} { // parents first, as baseExcludes orders them
		d := filepath.ToSlash(filepath.Dir(f))
		if d == "." {
			d = ""
		}
		b, _ := os.ReadFile(filepath.Join(dir, f))
		for line := range strings.SplitSeq(string(b), "\n") {
			if r, ok := rebaseIgnorePattern(d, line); ok {
				rules.WriteString(r + "\n")
			}
		}
	}
	excl := filepath.Join(t.TempDir(), "exclude")
	if err := os.WriteFile(excl, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(git("ls-files", "--others", "--exclude-from="+excl))
	if !slices.Equal(got, want) {
		t.Errorf("with the rewritten patterns\n got %v\nwant %v (git with the files in place)", got, want)
	}
}

func writeTestFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
