package render

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/policy"
)

// checkLineSafe: a progress line is one line that never parses as a
// command and hides nothing.
func checkLineSafe(t *testing.T, line string) {
	t.Helper()
	if policy.Parse(line, "/inspect").Kind != policy.Ignore {
		t.Errorf("line parses as a command: %q", line)
	}
	if strings.IndexFunc(line, policy.IsHidden) >= 0 || strings.Contains(line, "\n") {
		t.Errorf("line has hidden or control characters or several lines: %q", line)
	}
}

func TestQueueText(t *testing.T) {
	cases := []struct {
		a    policy.Admission
		want string
	}{
		{policy.Admission{Admit: true}, ""},
		{policy.Admission{Scope: policy.ScopeRepo, Cap: 1, Position: 2},
			"Queued: position 2 in this repository's queue (at most 1 session runs at once here)."},
		{policy.Admission{Scope: policy.ScopeRepo, Cap: 5, Position: 1},
			"Queued: position 1 in this repository's queue (at most 5 sessions run at once here)."},
		{policy.Admission{Scope: policy.ScopeUser, Cap: 3, Position: 4},
			"Queued: position 4 in the queue of the person who asked for it (at most 3 sessions run at once for one person)."},
		{policy.Admission{Scope: policy.ScopeInstallation, Cap: 20, Position: 7},
			"Queued: position 7 in this installation's queue (at most 20 sessions run at once across all the repositories of this installation)."},
		{policy.Admission{Scope: "other", Cap: 2, Position: 3}, "Queued: position 3, waiting for a free slot."},
		{policy.Admission{Scope: policy.ScopeRepo, Cap: 1, Position: 0},
			"Queued: position 1 in this repository's queue (at most 1 session runs at once here)."},
	}
	for _, c := range cases {
		got := QueueText(c.a)
		if got != c.want {
			t.Errorf("QueueText(%+v)\n = %q\nwant %q", c.a, got, c.want)
		}
		if got != "" {
			checkLineSafe(t, got)
		}
	}
}

func TestRepairNote(t *testing.T) {
	cases := []struct {
		name   string
		d      policy.RepairDecision
		budget int
		word   string
		want   string
	}{
		{"first of two", policy.RepairDecision{Verdict: policy.RepairStart, Number: 1}, 2, "/inspect",
			"Automatic repair 1 of 2 for this pull request."},
		{"last of two", policy.RepairDecision{Verdict: policy.RepairStart, Number: 2, Last: true}, 2, "/inspect",
			"Automatic repair 2 of 2 for this pull request. This is the last automatic repair of this pull request: the repair budget (2) is now spent. Comment `/inspect <instructions>` to ask for more."},
		{"the server's command word", policy.RepairDecision{Verdict: policy.RepairStart, Number: 1, Last: true}, 1, "/fixit",
			"Automatic repair 1 of 1 for this pull request. This is the last automatic repair of this pull request: the repair budget (1) is now spent. Comment `/fixit <instructions>` to ask for more."},
		{"an invalid command word is left out", policy.RepairDecision{Verdict: policy.RepairStart, Number: 1, Last: true}, 1, "/x` @all",
			"Automatic repair 1 of 1 for this pull request. This is the last automatic repair of this pull request: the repair budget (1) is now spent. Comment an Inspect command with instructions to ask for more."},
		{"a budget below the number", policy.RepairDecision{Verdict: policy.RepairStart, Number: 3}, 2, "/inspect",
			"Automatic repair 3 of 3 for this pull request."},
		{"skip", policy.RepairDecision{Verdict: policy.RepairSkip, Reason: policy.ReasonBudgetSpent}, 2, "/inspect", ""},
		{"wait", policy.RepairDecision{Verdict: policy.RepairWait, Reason: policy.ReasonCooldown}, 2, "/inspect", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := RepairNote(c.d, c.budget, c.word)
			if got != c.want {
				t.Errorf("RepairNote\n = %q\nwant %q", got, c.want)
			}
			if got != "" {
				checkLineSafe(t, got)
				if strings.Contains(got, "@") {
					t.Errorf("note mentions someone: %q", got)
				}
			}
		})
	}
}
