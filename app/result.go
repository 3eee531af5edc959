package app

import (
	"context"
	"encoding/json"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// recordResult stores an attempt's validated result, once
// (store.RecordResult), from the channel's upload or the executor's
// artifacts alike. The diff is taken out of the evidence and stored on its
// own, so the result every report and page decodes stays small (decision
// 0040).
func (s *Service) recordResult(ctx context.Context, attemptID string, up contract.ResultUpload) (first bool, err error) {
	diff := storedDiff(up.Evidence.Diff)
	up.Evidence.Diff = nil
	// The comparison with the base is the app's, filled at report time
	// (decision 0080): never the supervisor's word.
	up.Evidence.Baseline = nil
	body, err := json.Marshal(up)
	if err != nil {
		return false, err
	}
	return s.store.RecordResult(ctx, attemptID, string(body), diff, s.clock.Now())
}

// storedDiff is the diff as the app keeps it: redacted again by the known
// formats and cut to contract.MaxPatchBytes by the app's own count. The
// supervisor did both, and the upload was validated against the cap; the
// app still neither shows a secret's known form nor keeps more than its
// cap on anyone's word.
func storedDiff(d *contract.Diff) *store.Diff {
	if d == nil {
		return nil
	}
	patch, cut := contract.CutPatch(contract.NewRedactor().Redact(d.Patch), contract.MaxPatchBytes)
	return &store.Diff{Patch: patch, Truncated: d.Truncated || cut}
}
