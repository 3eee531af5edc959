package channel

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// A baseline attempt's result (decision 0080) finishes its baseline, never
// a session's report: done with the base's commands and tests when its
// verify ran, failed saying why when it did not; its read token goes, and
// a supervisor's comparison is dropped. Its repo token is its baseline's
// repository's.
func TestABaselinesResultFinishesItsBaseline(t *testing.T) {
	for _, tc := range []struct {
		outcome contract.OutcomeHint
		state   store.BaselineState
		why     string
	}{
		{contract.OutcomeVerifyFailed, store.BaselineDone, ""},
		{contract.OutcomeTimedOut, store.BaselineFailed, "the base's verify ended timed_out: out of time"},
	} {
		t.Run(string(tc.outcome), func(t *testing.T) {
			r := newRig(t, Options{})
			if code, body := r.call(t, http.MethodPost, contract.PathRepoToken, baselineAttempt, ""); code != http.StatusOK || len(r.engine.minted) != 1 || r.engine.minted[0] != 300 {
				t.Fatalf("repo token: %d %s, minted for %v", code, body, r.engine.minted)
			}
			ev := contract.Evidence{Version: contract.EvidenceVersion, SessionID: "baseline-5-att", AttemptID: baselineAttempt, PinnedSHA: jobSHA,
				StartedAt: epoch, EndedAt: epoch.Add(time.Minute), Outcome: tc.outcome, Reason: "out of time",
				Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test"}, ExitCode: 1}},
				Tests:    &contract.TestSummary{Failed: 1, Results: []contract.TestResult{{Name: "TestAdd", Outcome: contract.TestFailed}}},
				Baseline: &contract.BaselineComparison{Status: contract.BaselineCompared}}
			if tc.outcome == contract.OutcomeVerifyFailed {
				ev.Reason = "verification failed: test exited with status 1"
			}
			body, err := json.Marshal(contract.ResultUpload{Evidence: ev})
			if err != nil {
				t.Fatal(err)
			}
			if code, resp := r.call(t, http.MethodPut, contract.PathResult, baselineAttempt, string(body)); code != http.StatusNoContent {
				t.Fatalf("result: %d %s", code, resp)
			}
			if len(r.engine.results) != 0 {
				t.Errorf("a baseline's result was recorded as a session's: %v", r.engine.results)
			}
			got := r.st.baselineResults
			if len(got) != 1 || got[0].attempt != baselineAttempt || got[0].state != tc.state || got[0].why != tc.why {
				t.Fatalf("baseline results %+v", got)
			}
			if tc.state == store.BaselineDone {
				var base store.BaseEvidence
				if err := json.Unmarshal([]byte(got[0].evidence), &base); err != nil || base.Tests == nil || len(base.Tests.Results) != 1 || len(base.Commands) != 1 {
					t.Errorf("the base's evidence %s (%v)", got[0].evidence, err)
				}
				if strings.Contains(got[0].evidence, "compared") {
					t.Errorf("the supervisor's comparison was kept: %s", got[0].evidence)
				}
			} else if got[0].evidence != "" {
				t.Errorf("a failed baseline kept evidence: %s", got[0].evidence)
			}
			if len(r.engine.revoked) != 1 || r.engine.revoked[0] != baselineAttempt || r.engine.wakes == 0 {
				t.Errorf("revoked %v, wakes %d", r.engine.revoked, r.engine.wakes)
			}
		})
	}
}
