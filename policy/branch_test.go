package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCheckBranchName takes what git takes as a branch and refuses the
// rest, each with a reason that does not repeat the name; every verdict
// is checked against the real git's check-ref-format --branch.
func TestCheckBranchName(t *testing.T) {
	good := []string{"main", "feature/login", "fix-42", "release/v1.2", "user/ünïcode", "a.b", "x@y", "#42", "wip_thing"}
	bad := []string{"", "-rf", "HEAD", "@", "refs/heads/main", "a..b", "a b", "tab\tname", "nl\nname", "del\x7f",
		"a~1", "a^", "a:b", "a?", "a*", "a[b", `a\b`, "a@{1}", "/lead", "trail/", "a//b", "end.", ".hidden",
		"dir/.hidden", "x.lock", "dir/x.lock/y", strings.Repeat("b", 256), "bad\xffutf8",
		"main\u200b", "fix\u202egnp.exe"}
	for _, name := range good {
		if why := CheckBranchName(name); why != "" {
			t.Errorf("%q refused: %s", name, why)
		}
	}
	for _, name := range bad {
		why := CheckBranchName(name)
		if why == "" {
			t.Errorf("%q accepted", name)
		}
		if len(name) > 4 && strings.Contains(why, name) {
			t.Errorf("the reason for %q repeats it: %s", name, why)
		}
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git: %v", err)
	}
	// Inspect refuses HEAD as `git branch` does, @ (HEAD's shorthand),
	// names GitHub cannot show (not UTF-8) and names longer than the spec
	// holds; git's own check takes them.
	// Nor names with invisible characters, which git takes and a reader
	// would not see.
	stricter := map[string]bool{"HEAD": true, "@": true, "bad\xffutf8": true, "main\u200b": true, "fix\u202egnp.exe": true}
	for _, name := range append(good, bad...) {
		if name == "" || name == "refs/heads/main" {
			continue // git takes refs/heads/main as a branch named so; Inspect asks for the short name
		}
		gitSays := exec.Command(git, "check-ref-format", "--branch", name).Run() == nil
		if ours := CheckBranchName(name) == ""; ours && !gitSays {
			t.Errorf("%q: accepted, git refuses it", name)
		} else if !ours && gitSays && !stricter[name] && len(name) <= MaxBranchNameBytes {
			t.Errorf("%q: refused, git takes it", name)
		}
	}
}
