// Package verdict decides, from a change's evidence, how its session
// ends: the outcome and its reason, whether the pull request is ready or
// a draft, and the check run's conclusion (decision 0081). It is pure and
// has one table (docs/ARCHITECTURE.md, "Sessions and outcomes"): the
// report step decides with Of, and the sync draws the check run's
// conclusion with Conclusion from the outcome and reason Of gave, as the
// store keeps them, so a later sync concludes as the report did.
package verdict

import (
	"slices"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// Reasons a change's session ends with (store.Session.Reason).
const (
	// ReasonChanged: verified, nothing not fixed, reproduced if asked.
	ReasonChanged = "changed"
	// ReasonVerificationFailed: verify failed (with or without a newly
	// failing test, or without a comparison).
	ReasonVerificationFailed = "verification_failed"
	// ReasonNotFixed: a test that failed on the base was removed or
	// skipped by the change.
	ReasonNotFixed = "not_fixed"
	// ReasonFailsWhereBaseFailed: verify failed, but only where the base
	// failed, and the change fixed at least one test.
	ReasonFailsWhereBaseFailed = "fails_where_base_failed"
	// ReasonNotReproduced: verified, but the reproduce-first check found
	// no test that fails on the base and passes with the change.
	ReasonNotReproduced = "not_reproduced"
)

// Verdict is how a change's session ends.
type Verdict struct {
	Outcome session.Outcome
	Reason  string
	// Ready says the pull request is opened ready for review; otherwise
	// it is a draft (or, where GitHub takes none, labelled unverified).
	Ready bool
	// Conclusion is the check run's (Conclusion(Outcome, Reason)).
	Conclusion string
}

// Of is the verdict over a change's evidence (one that policy allowed).
// Without a comparison with the base (Baseline nil or unavailable) it is
// verify's word alone, as before decision 0081. With one:
//   - a test that failed on the base and that the change removed or
//     skipped fails the change, even when verify passed;
//   - a failed verify whose every failure was already there on the base
//     (no test newly failing, every failing command failed on the base
//     too, every failure counted named) and that fixed at least one test
//     is still a failed verification, but concluded neutral;
//   - any other failed verify is a failure.
//
// A verified change whose reproduce-first check did not reproduce stays
// changed, as a draft, concluded neutral.
func Of(ev contract.Evidence) Verdict {
	b := ev.Baseline
	compared := b != nil && b.Status == contract.BaselineCompared
	v := Verdict{Outcome: session.VerificationFailed, Reason: ReasonVerificationFailed}
	switch {
	case compared && b.Counts.NotFixed > 0 && (VerifyPassed(ev) || b.Counts.NewlyFailing == 0):
		v.Reason = ReasonNotFixed
	case VerifyPassed(ev):
		v = Verdict{Outcome: session.Changed, Reason: ReasonChanged, Ready: true}
		if r := reproduction(ev); r != nil && !r.Reproduced {
			v.Reason, v.Ready = ReasonNotReproduced, false
		}
	case compared && failsOnlyWhereBaseFailed(ev, b):
		v.Reason = ReasonFailsWhereBaseFailed
	}
	v.Conclusion = Conclusion(v.Outcome, v.Reason)
	return v
}

// reproduction is the reproduce-first check's result, or nil when the
// session asked for none.
func reproduction(ev contract.Evidence) *contract.Reproduction {
	if ev.Baseline == nil {
		return nil
	}
	return ev.Baseline.Reproduction
}

// failsOnlyWhereBaseFailed reports whether a failed verify failed only
// where the base's did, having fixed something: no test newly failing or
// not fixed, a test still failing and one fixed, every failure the
// change's tests count named (a runner that counts without naming could
// hide a new one), and every verify command that failed with the change
// failed on the base too (a lint that names no test could be new).
func failsOnlyWhereBaseFailed(ev contract.Evidence, b *contract.BaselineComparison) bool {
	c := b.Counts
	if c.NewlyFailing > 0 || c.NotFixed > 0 || c.StillFailing == 0 || c.Fixed == 0 {
		return false
	}
	if ev.Tests == nil || ev.Tests.Failed > c.StillFailing {
		return false
	}
	for _, cmd := range ev.Commands {
		if cmd.Phase != contract.PhaseVerify || cmd.Succeeded() {
			continue
		}
		failedOnBase := slices.ContainsFunc(b.Verify, func(base contract.CommandResult) bool {
			return base.Name == cmd.Name && slices.Equal(base.Argv, cmd.Argv) && !base.Succeeded()
		})
		if !failedOnBase {
			return false
		}
	}
	return true
}

// VerifyPassed reports whether every verify command of the change
// succeeded.
func VerifyPassed(ev contract.Evidence) bool {
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseVerify && !c.Succeeded() {
			return false
		}
	}
	return true
}

// Conclusion is the check-run conclusion of a session's outcome and
// reason (docs/ARCHITECTURE.md, "Sessions and outcomes").
func Conclusion(o session.Outcome, reason string) string {
	switch o {
	case session.Changed:
		if reason == ReasonNotReproduced {
			return "neutral"
		}
		return "success"
	case session.VerificationFailed:
		if reason == ReasonFailsWhereBaseFailed {
			return "neutral"
		}
		return "failure"
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
