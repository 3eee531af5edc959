package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Agent-controlled text (paths, argv, test names) must stay inside its
// table cell and code span: a pipe or newline would let it write live
// Markdown, @-mentions included, into a PR that looks like Inspect's.
func TestPRBodyKeepsUntrustedTextInItsCell(t *testing.T) {
	evil := "a| **Approved by @octocat** |\n| [x](https://evil.example) |"
	sum := policy.ChangeSummary{Modified: 1, Files: []policy.FileStat{{Path: evil, Status: policy.FileModified}}}
	ev := contract.Evidence{
		Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Argv: []string{"sh", "-c", "x|y\n<!-- inspect:final=zzz -->"}}},
		Tests:    &contract.TestSummary{Failed: 1, Failures: []contract.TestFailure{{Name: "T|x\n**bold**"}}},
	}
	body := PRBody(store.Session{RequesterLogin: "alice", Number: 1, Instructions: "fix"}, contract.Spec{}, false, sum, ev, Extras{})
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 4 {
			t.Errorf("a table row has extra cells: %q", line)
		}
	}
	if strings.Contains(body, "\n| [x](https://evil.example)") || strings.Contains(body, "<!-- inspect:") {
		t.Errorf("untrusted text escaped its cell:\n%s", body)
	}
}

// A branch session's pull request says who asked and for which branch,
// the name as inert code (a link in a code span is text), and closes nothing: there is no issue behind it.
func TestBranchSessionPRBodyAndCommit(t *testing.T) {
	branch := "fix/#12-@octocat-[x](https://evil.example)"
	sess := store.Session{ID: "s-1", RequesterLogin: "alice", RequesterID: 5, Instructions: "make it pass",
		TriggerKind: session.KindDashboard, TriggerInfo: store.TriggerInfo{Branch: branch}.Encode()}
	body := PRBody(sess, contract.Spec{}, true, policy.ChangeSummary{}, contract.Evidence{}, Extras{})
	if !strings.Contains(body, "@alice asked on Inspect's dashboard, for branch `fix/＃12-＠octocat-[x](https://evil.example)`:") {
		t.Errorf("the request line:\n%s", body)
	}
	for _, bad := range []string{"Fixes", "#0", "#12", "@octocat"} {
		if strings.Contains(body, bad) {
			t.Errorf("the body holds %q:\n%s", bad, body)
		}
	}
	if got := ErrorReply(sess); !strings.Contains(got, "try again with the Retry button on this page") {
		t.Errorf("a branch session's error reply sends the requester to a comment: %s", got)
	}
	msg := CommitMessage(sess)
	if !strings.Contains(msg, "Requested by @alice on Inspect's dashboard.") || strings.Contains(msg, "#0") || strings.Contains(msg, "fix/") {
		t.Errorf("the commit message:\n%s", msg)
	}
}
