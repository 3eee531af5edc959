package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// CheckConclusion maps an outcome to a check-run conclusion (ARCHITECTURE.md).
func CheckConclusion(o session.Outcome) string {
	switch o {
	case session.Changed:
		return "success"
	case session.NoChange:
		return "neutral"
	case session.ChangeRefused:
		return "action_required"
	case session.TimedOut:
		return "timed_out"
	case session.Cancelled:
		return "cancelled"
	case session.Refused:
		// Refused sessions get no check run; one exists only when an earlier
		// attempt created it before the refusal (say, the PR was closed).
		return "neutral"
	}
	return "failure"
}

// QueuedCheckRun is a new check run's title and summary.
func QueuedCheckRun(sess store.Session) (title, summary string) {
	return "Queued", fmt.Sprintf("Requested by @%s. Session `%s`.", sess.RequesterLogin, sess.ID)
}

// RunningCheckRun is a running session's check-run title and summary.
func RunningCheckRun(sess store.Session) (title, summary string) {
	return "Running", fmt.Sprintf("Session `%s` is running.", sess.ID)
}

// DoneCheckRun is a finished session's check-run title and summary: its
// outcome and its detail, then the egress summary (EgressSummary) when
// the evidence's audit (nil when there is none) has one.
func DoneCheckRun(sess store.Session, egress *contract.EgressAudit) (title, summary string) {
	return StatusWord(sess), withEgress(sess.Detail, egress)
}

// FailedTestsCheckRun is the check run's title and summary when its failing
// tests are annotated on it, with the egress summary as DoneCheckRun has it.
func FailedTestsCheckRun(t contract.TestSummary, egress *contract.EgressAudit) (title, summary string) {
	return "Verification failed", withEgress(fmt.Sprintf("%d failed, %d passed, %d skipped", t.Failed, t.Passed, t.Skipped)+testSources(t), egress)
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

// withEgress is summary followed by the audit's EgressSummary, if any.
func withEgress(summary string, egress *contract.EgressAudit) string {
	e := EgressSummary(egress)
	switch {
	case e == "":
		return summary
	case summary == "":
		return e
	}
	return summary + "\n\n" + e
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
