package app_test

import (
	"slices"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// The repo's reproduce: (decision 0082) reaches the spec from the labels
// the issue carries when the session starts: with when: bugs, an issue
// labelled as one of reproduce.labels (in any case) asks for a
// reproduction and another does not.
func TestReproduceBugsFollowsTheIssuesLabels(t *testing.T) {
	for _, c := range []struct {
		labels []string
		want   bool
	}{{[]string{"docs", "Regression"}, true}, {[]string{"bug"}, false}, {nil, false}} {
		h, ex := newSessionHarness(t)
		h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig + "reproduce:\n  when: bugs\n  labels: [regression]\n"}, "reproduce bugs")
		h.gh.SetIssueLabels(owner, repoName, issueNumber, c.labels...)
		if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
			t.Fatal(code)
		}
		h.runWorkers()
		if got := h.claim(ex.last(t)).spec().Reproduce; got != c.want {
			t.Errorf("labels %q: the spec's reproduce is %v, want %v", c.labels, got, c.want)
		}
	}
}

// A pull request's labels count as an issue's; a repair of a failing
// check is a bug whatever its labels.
func TestReproduceBugsFollowsAPullRequestsLabelsAndRepairs(t *testing.T) {
	const cfg = agentConfig + "reproduce:\n  when: bugs\n"
	h, ex := newSessionHarness(t)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": cfg}, "reproduce bugs")
	withRealPR(t, h)
	h.gh.SetIssueLabels(owner, repoName, prNumber, "BUG")
	if _, spec := startOnPR(t, h, ex, "/inspect fix it"); !spec.Reproduce {
		t.Error("a pull request labelled BUG: the spec does not ask for a reproduction")
	}

	h, ex, head := newRepairHarness(t, repairConfig+"reproduce:\n  when: bugs\n")
	h.failCheck("ci/test", head, prNumber)
	h.afterDebounce()
	if spec := h.claim(ex.last(t)).spec(); !spec.Reproduce {
		t.Error("a repair: the spec does not ask for a reproduction")
	}
}

// addingAgent fixes Add and adds a test that fails without the fix.
const addingAgent = `set -eu
sed -i 's/return a + b + 1/return a + b/' calc.go
cat > calc_zero_test.go <<'GO'
package widgets

import "testing"

func TestAddZero(t *testing.T) {
	if got := Add(0, 0); got != 0 {
		t.Errorf("Add(0, 0) = %d, want 0", got)
	}
}
GO
`

// passingAgent fixes Add and adds a test that passes without the fix:
// the base's TestAdd fails there too, but it is not the change's test.
const passingAgent = `set -eu
sed -i 's/return a + b + 1/return a + b/' calc.go
cat > calc_more_test.go <<'GO'
package widgets

import "testing"

func TestAddIsNotZero(t *testing.T) {
	if Add(2, 2) == 0 {
		t.Error("Add(2, 2) = 0")
	}
}
GO
`

// Reproduce first, for real (decision 0082): with reproduce: {when:
// always}, a change that fixes the bug without a test is not reproduced,
// and says why, and so is one whose added test passes on the base (the
// base's own failing TestAdd, in a file the change left alone, does not
// count); one that adds a test failing on the base is, naming it.
// The judgement is kept in the stored evidence, as its baseline's.
func TestRealReproduceFirstJudgesTheChangesTest(t *testing.T) {
	for _, c := range []struct {
		name  string
		agent string // "" is the sample repo's stand-in, which adds no test
		want  contract.Reproduction
	}{
		{"no test", "", contract.Reproduction{Why: contract.ReproduceNoTestFile}},
		{"a passing test", passingAgent, contract.Reproduction{Why: contract.ReproduceNoFailing}},
		{"a failing test", addingAgent, contract.Reproduction{Reproduced: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, lx := newSandboxHarness(t)
			files := map[string]string{".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "scripts/inspect-stand-in-agent.sh"]
verify:
  - name: unit tests
    run: ["go", "test", "-json", "./..."]
    timeout: 5m
reproduce:
  when: always
`}
			if c.agent != "" {
				files["scripts/inspect-stand-in-agent.sh"] = c.agent
			}
			sess := h.runSession(lx, files, "/inspect make TestAdd pass")
			if sess.Outcome != session.Changed {
				t.Fatalf("outcome %s", sess.Outcome)
			}
			ev := storedEvidence(t, h, sess.AttemptID)
			b := ev.Baseline
			if b == nil || b.Reproduction == nil {
				t.Fatalf("the stored evidence has no reproduction: %+v\n%s", b, h.logs)
			}
			got := *b.Reproduction
			if got.Reproduced != c.want.Reproduced || got.Why != c.want.Why {
				t.Fatalf("reproduction %+v, want %+v; the reproduce run: %+v", got, c.want, ev.Reproduce)
			}
			if c.want.Reproduced && !slices.Equal(got.Tests, []string{"example.com/widgets.TestAddZero"}) {
				t.Errorf("the reproducing tests %q, want the added one alone", got.Tests)
			}
		})
	}
}
