package report

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/inspecthq/inspect/contract"
)

// Reproduce first (decision 0082): when the attempt's spec asked for a
// reproduction, the evidence's baseline carries the app's judgement of
// the supervisor's reproduce run against verify's tests
// (contract.Reproduce), kept with the stored result so the check run and
// the session's page read what the pull request says.

// baselineUnavailable is the baseline's why when no comparison of the
// base's verify was made for the attempt, only its reproduce-first check.
const baselineUnavailable = "the base's verify was not compared for this attempt"

// withReproduction sets ev.Baseline.Reproduction when spec asked for one,
// making a baseline of status unavailable when none was made; it reports
// whether it set it.
func withReproduction(spec contract.Spec, ev *contract.Evidence) bool {
	if !spec.Reproduce {
		return false
	}
	if ev.Baseline == nil {
		ev.Baseline = &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: baselineUnavailable}
	}
	r := contract.Reproduce(ev.Reproduce, ev.Tests)
	ev.Baseline.Reproduction = &r
	return true
}

// keepBaseline stores baseline as the evidence's in the attempt's result
// (stored, the result as uploaded), unless it is there already (a replay).
// Only the baseline changes: the rest is the supervisor's upload as
// recorded.
func (h *Handler) keepBaseline(ctx context.Context, attemptID, stored string, baseline *contract.BaselineComparison) error {
	var up contract.ResultUpload
	if err := json.Unmarshal([]byte(stored), &up); err != nil {
		return fmt.Errorf("stored result: %w", err)
	}
	if reflect.DeepEqual(up.Evidence.Baseline, baseline) {
		return nil
	}
	up.Evidence.Baseline = baseline
	body, err := json.Marshal(up)
	if err != nil {
		return err
	}
	return h.Store.SetAttemptResult(ctx, attemptID, string(body))
}
