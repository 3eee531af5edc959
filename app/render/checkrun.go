package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// QueuedCheckRun is a new check run's title and summary.
func QueuedCheckRun(sess store.Session) (title, summary string) {
	return "Queued", fmt.Sprintf("Requested by @%s. Session `%s`.", sess.RequesterLogin, sess.ID)
}

// RunningCheckRun is a running session's check-run title and summary.
func RunningCheckRun(sess store.Session) (title, summary string) {
	return "Running", fmt.Sprintf("Session `%s` is running.", sess.ID)
}

// DoneCheckRun is a finished session's check-run title and summary: its
// outcome and its detail, then what the attempt's evidence (nil when
// there is none) and x tell a reviewer (checkRunFacts).
func DoneCheckRun(sess store.Session, ev *contract.Evidence, x Extras) (title, summary string) {
	return StatusWord(sess), withFacts(sess.Detail, ev, x)
}

// FailedTestsCheckRun is the check run's title and summary when the
// evidence's failing tests (ev.Tests, which must be set) are annotated on
// it, with the facts DoneCheckRun has.
func FailedTestsCheckRun(ev contract.Evidence, x Extras) (title, summary string) {
	t := *ev.Tests
	return "Verification failed", withFacts(fmt.Sprintf("%d failed, %d passed, %d skipped", t.Failed, t.Passed, t.Skipped)+testSources(t), &ev, x)
}

// TestCounts is a test summary's counts in a sentence, with the runners
// they were read from (testSources).
func TestCounts(t contract.TestSummary) string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", t.Passed, t.Failed, t.Skipped) + testSources(t)
}

// testSources ends a sentence of counts: the runners they were read from
// (as untrusted spans: a summary travels from the runner), and a note
// when passing tests went uncounted.
func testSources(t contract.TestSummary) string {
	s := ""
	if len(t.Runners) > 0 {
		names := make([]string, len(t.Runners))
		for i, r := range t.Runners {
			names[i] = untrustedSpan(r)
		}
		s = " (" + strings.Join(names, ", ") + ")"
	}
	s += "."
	if t.FailuresOnly {
		s += " Plain go test output names only failures: passing tests are not counted (add -v or -json)."
	}
	return s
}

// withFacts is summary followed by the comparison with the base
// (BaselineSection), the evidence's egress summary (EgressSummary), where it ran (WhereItRan), the cost, the link to
// the session's page and the one to its signed provenance, each part only
// when there is something to say.
func withFacts(summary string, ev *contract.Evidence, x Extras) string {
	var facts []string
	if ev != nil {
		facts = append(facts, BaselineSection(ev.Baseline))
		facts = append(facts, EgressSummary(ev.Egress))
		if where := WhereItRan(*ev); len(where) > 0 {
			facts = append(facts, "- "+strings.Join(where, "\n- "))
		}
	}
	facts = append(facts, CostLine(x), SessionLinkLine(x), ProvenanceLine(x))
	parts := []string{}
	if summary != "" {
		parts = append(parts, summary)
	}
	added := false
	for _, f := range facts {
		if f = strings.TrimSuffix(f, "\n"); f != "" {
			parts, added = append(parts, f), true
		}
	}
	out := strings.Join(parts, "\n\n")
	if added {
		out += "\n" // each fact is a paragraph that ends its line
	}
	return out
}

// FailureAnnotation is one failing test's annotation on the check run.
func FailureAnnotation(f contract.TestFailure) (title, message string) {
	message = f.Message
	if message == "" {
		message = "failed"
	}
	return f.Name, message
}

// Button is a check-run button's words.
type Button struct {
	Label, Description string
}

// RetryButton is the button on a finished session's check run.
func RetryButton() Button {
	return Button{Label: "Retry", Description: "Run this request again"}
}

// RunAnnotation is the session's outcome as written onto its run (a
// Buildkite build's annotation), for people who look at the build.
func RunAnnotation(sess store.Session) string {
	return fmt.Sprintf("**Inspect** session `%s` for @%s: **%s**\n\n%s", sess.ID, sess.RequesterLogin, sess.Outcome, sess.Detail)
}
