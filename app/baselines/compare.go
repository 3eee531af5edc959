package baselines

import (
	"encoding/json"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// Why a comparison is unavailable.
const (
	whyNotFound   = "the base's verify was not kept"
	whyNoTests    = "neither the base's verify nor the change's named a test"
	whyUnreadable = "the base's verify left nothing readable"
)

// Compare is the evidence's baseline (decision 0080): the base's verify of
// b, done, against the change's evidence, test by test; or unavailable,
// saying why (it failed, timed out or was lost; no side named a test).
// forAttempt is the session attempt being reported: the baseline is
// reused when it was started for another.
func Compare(b store.Baseline, forAttempt string, change contract.Evidence) *contract.BaselineComparison {
	c := &contract.BaselineComparison{Status: contract.BaselineUnavailable, CacheDigest: b.CacheDigest,
		AttemptID: b.AttemptID, Reused: b.ForAttempt != forAttempt, BaseSHA: b.BaseSHA}
	if b.State != store.BaselineDone {
		c.Why = b.Why
		if c.Why == "" {
			c.Why = "the base's verify did not finish"
		}
		return c
	}
	var base store.BaseEvidence
	if err := json.Unmarshal([]byte(b.Result), &base); err != nil {
		c.Why = whyUnreadable
		return c
	}
	for _, r := range base.Commands {
		if r.Phase == contract.PhaseVerify {
			c.Verify = append(c.Verify, r)
		}
	}
	if !named(base.Tests) && !named(change.Tests) {
		c.Why = whyNoTests
		return c
	}
	c.Status = contract.BaselineCompared
	c.Tests, c.Counts, c.MoreTests = contract.CompareTests(base.Tests, change.Tests)
	return c
}

// Unavailable is the comparison of an attempt that has none to make: why
// says what is missing.
func Unavailable(why string) *contract.BaselineComparison {
	return &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: why}
}

// NotKept is Unavailable for a baseline the store no longer has.
func NotKept(digest string) *contract.BaselineComparison {
	c := Unavailable(whyNotFound)
	c.CacheDigest = digest
	return c
}

// named reports whether a summary names any test.
func named(t *contract.TestSummary) bool { return t != nil && len(t.Results) > 0 }
