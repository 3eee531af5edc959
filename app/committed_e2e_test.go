package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// hidingAgent leaves Add broken and hides what would make verify pass: a
// TestMain that prints PASS, in a file the pinned commit ignores, and a
// .gitattributes making every file binary, ignored by the .gitignore it
// rewrites (which ignores itself too). It also notes something, so there
// is a change to place.
const hidingAgent = `set -eu
cat > zz_local_test.go <<'GO'
package widgets

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	fmt.Println("PASS")
	os.Exit(0)
}
GO
printf '*_local_test.go\n.gitignore\n.gitattributes\n' > .gitignore
printf '* -diff\n' > .gitattributes
echo "Add still adds one too many." >> NOTES.md
`

// Through the real sandbox, on a human's PR: the hidden test is not part
// of the change, so verify, run on exactly the change, fails, and the
// human's branch stays where it was; the diffstat shows every line the
// hidden .gitattributes would have hidden.
func TestRealHiddenTestNeverMovesAHumansBranch(t *testing.T) {
	h, lx := newSandboxHarness(t)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".gitignore":                        "*_local_test.go\n",
		"scripts/inspect-stand-in-agent.sh": hidingAgent,
	}, "an agent that hides a test")
	h.gh.CreateBranch(owner, repoName, "fix-add", "main")
	head := h.gh.CommitFiles(owner, repoName, "fix-add", map[string]string{"NOTES.md": "looking into TestAdd\n"}, "notes")
	h.gh.AddPull(owner, repoName, fakegithub.Pull{Number: prNumber, Title: "Fix Add", State: "open", User: "mara", HeadRef: "fix-add", BaseRef: "main"})
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect make TestAdd pass", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()

	sess := h.onlySession()
	if sess.Outcome != session.VerificationFailed {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "fix-add"); got != head {
		t.Errorf("the human's branch moved to %s", got)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	// NOTES.md +1, .gitignore +2, .gitattributes +1; the hidden test is not
	// in it.
	body := pr.GetBody()
	if !pr.GetDraft() || !strings.Contains(body, "1 added, 2 modified, 0 deleted; +4 −0 lines.") || strings.Contains(body, "zz_local_test.go") {
		t.Errorf("draft=%v body:\n%s", pr.GetDraft(), body)
	}
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Errorf("check runs = %+v", runs)
	}
}
