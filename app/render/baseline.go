package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/contract"
)

// maxBaselineRows caps the tests the "Against the base" section lists on
// GitHub: the comparison keeps up to contract.MaxBaselineTests, which at a
// row each (a name of up to 120 characters) would crowd out the rest of a
// PR body or check-run summary GitHub cuts at 65,536 characters; the
// session's page lists them all.
const maxBaselineRows = 50

// BaselineSection is the "Against the base" section of the PR body and
// the check run's summary (decision 0081): where the base's verify ran
// (or why there is no comparison), the counts, the tests that did not pass
// throughout (newly failing first, flagged; the tests that failed on the
// base and were removed or skipped next, as not fixed), and the
// reproduce-first check. "" when the evidence has no comparison. Test
// names are untrusted (the repository's tests name them): each is a code
// span, defused, in a table cell.
func BaselineSection(b *contract.BaselineComparison) string {
	if b == nil {
		return ""
	}
	var s strings.Builder
	s.WriteString("## Against the base\n\n")
	if b.Status != contract.BaselineCompared {
		why := "it was not made"
		if b.Why != "" {
			why = untrustedSpan(b.Why)
		}
		fmt.Fprintf(&s, "No comparison with the base: %s. The outcome is verify's alone.\n", why)
		s.WriteString(reproductionLine(b.Reproduction))
		return s.String()
	}
	s.WriteString(baseRunLine(b) + "\n\n")
	c := b.Counts
	fmt.Fprintf(&s, "%d fixed, %d still failing, %d newly failing, %d not fixed, %d removed, %d skipped, %d added, %d passing throughout", c.Fixed, c.StillFailing, c.NewlyFailing, c.NotFixed, c.Removed, c.Skipped, c.Added, c.Passing)
	if c.NotFixed > 0 {
		s.WriteString(" (a test not fixed failed on the base and the change removed or skipped it: it is among those removed or skipped)")
	}
	if c.NotNamed > 0 {
		fmt.Fprintf(&s, "; %d that failed on the base not named with the change (its output names only failures, or was capped: fixed or removed, it cannot tell)", c.NotNamed)
	}
	s.WriteString(".\n")
	if len(b.Tests) > 0 {
		s.WriteString("\n| Test | Base | Change | |\n|---|---|---|---|\n")
		for i, t := range b.Tests {
			if i == maxBaselineRows {
				break
			}
			fmt.Fprintf(&s, "| %s | %s | %s | %s |\n", cell(pathSpan(t.Name)), outcomeCell(t.Base, false), outcomeCell(t.Change, t.Fared == contract.TestNotNamed), faredCell(t))
		}
		if more := len(b.Tests) - maxBaselineRows + b.MoreTests; more > 0 {
			fmt.Fprintf(&s, "\n%d more not listed here.\n", more)
		}
	}
	s.WriteString(reproductionLine(b.Reproduction))
	return s.String()
}

// baseRunLine says where the base's verify ran: in which attempt, on
// which commit, reused or not, and how each of its commands ended.
func baseRunLine(b *contract.BaselineComparison) string {
	on := "the base"
	if b.BaseSHA != "" {
		on = fmt.Sprintf("the base (`%.7s`)", b.BaseSHA)
	}
	line := fmt.Sprintf("Verify ran on %s in attempt `%s`.", on, b.AttemptID)
	if b.Reused {
		line = fmt.Sprintf("Verify's run on %s is reused from an earlier attempt's, `%s`: it was not run again.", on, b.AttemptID)
	}
	var cmds []string
	for _, c := range b.Verify {
		result := "passed"
		switch {
		case c.TimedOut:
			result = "timed out"
		case !c.Succeeded():
			result = fmt.Sprintf("exit %d", c.ExitCode)
		}
		cmds = append(cmds, untrustedSpan(c.Name)+" "+result)
	}
	if len(cmds) > 0 {
		line += " There: " + strings.Join(cmds, ", ") + "."
	}
	return line
}

// outcomeCell is a test's outcome on one side ("" did not run).
func outcomeCell(o contract.TestOutcome, notNamed bool) string {
	switch o {
	case contract.TestPassed:
		return "✅ passed"
	case contract.TestFailed:
		return "❌ failed"
	case contract.TestSkipped:
		return "⏭️ skipped"
	}
	if notNamed {
		return "not named"
	}
	return "— did not run"
}

// FaredWords is how a test fared, in the words the PR body, the check
// run and the session's page share.
func FaredWords(t contract.TestComparison) string {
	switch {
	case t.Fared == contract.TestNewlyFailing:
		return "newly failing"
	case t.NotFixed() && t.Fared == contract.TestRemoved:
		return "not fixed: removed"
	case t.NotFixed():
		return "not fixed: skipped"
	case t.Fared == contract.TestFixed:
		return "fixed"
	case t.Fared == contract.TestStillFailing:
		return "still failing (failed on the base)"
	case t.Fared == contract.TestNotNamed:
		return "fixed or removed"
	case t.Fared == contract.TestRemoved:
		return "removed"
	case t.Fared == contract.TestSkippedByChange:
		return "skipped by the change"
	case t.Fared == contract.TestAdded:
		return "added"
	case t.Fared == contract.TestPassing:
		return "passing throughout"
	}
	return "unknown (" + CleanLine(string(t.Fared)) + ")"
}

// Flagged reports whether a reviewer must see the test first: it is
// newly failing, or it failed on the base and was not fixed.
func Flagged(t contract.TestComparison) bool {
	return t.Fared == contract.TestNewlyFailing || t.NotFixed()
}

// faredCell is FaredWords in a table cell, the flagged ones marked.
func faredCell(t contract.TestComparison) string {
	w := FaredWords(t)
	switch {
	case t.Fared == contract.TestNewlyFailing:
		return "⚠️ **" + w + "**"
	case Flagged(t):
		return "⛔ **" + w + "**"
	}
	return cell(defuse(w))
}

// reproductionLine is the reproduce-first check's result, "" when the
// session asked for none.
func reproductionLine(r *contract.Reproduction) string {
	if r == nil {
		return ""
	}
	if !r.Reproduced {
		why := ""
		if r.Why != "" {
			why = ": " + untrustedSpan(r.Why)
		}
		return fmt.Sprintf("\n**Not reproduced**%s. Reproduce-first asks for a test the change adds or changes that fails on the base and passes with the change; none did.\n", why)
	}
	names := make([]string, 0, len(r.Tests))
	for i, t := range r.Tests {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(r.Tests)-10))
			break
		}
		names = append(names, pathSpan(t))
	}
	return fmt.Sprintf("\nReproduced: failing on the base and passing with the change, %s.\n", strings.Join(names, ", "))
}

// verdictNote is what a change whose pull request is not ready says
// about why, by its verdict's reason.
func verdictNote(v verdict.Verdict) string {
	switch v.Reason {
	case verdict.ReasonNotReproduced:
		return "**Not reproduced.** Verification passed, but no test the change adds or changes failed on the base (see Against the base). This pull request is a draft so the change can be looked at; it was not pushed to your branch."
	case verdict.ReasonNotFixed:
		return "**Verification failed: not fixed.** A test that failed on the base was removed or skipped by the change rather than fixed (see Against the base). This pull request is a draft so the change can be looked at; it was not pushed to your branch."
	case verdict.ReasonFailsWhereBaseFailed:
		return "**Verification failed, only where the base failed.** The change fixed what it could be shown to fix, and every test still failing failed on the base too (see Against the base). This pull request is a draft so the change can be looked at; it was not pushed to your branch."
	}
	return "**Verification failed.** This pull request is a draft so the change can be looked at; it was not pushed to your branch."
}
