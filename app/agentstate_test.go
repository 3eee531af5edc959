package app_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// agentState downloads the agent state the attempt's spec names, as the
// supervisor does; status is the answer's.
func (sv *supervisor) agentState() ([]byte, int) {
	sv.t.Helper()
	req, err := http.NewRequest(http.MethodGet, sv.base+contract.AttemptPath(contract.PathAgentState, sv.id), nil)
	if err != nil {
		sv.t.Fatal(err)
	}
	req.Header.Set(contract.HeaderSessionToken, sv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sv.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		sv.t.Fatal(err)
	}
	return body, resp.StatusCode
}

// The agent state a result carries is kept as artifacts are (decision
// 0029), listed among none of them; the session that continues it names
// it in its spec and downloads it over the channel with its own token
// (decision 0072). Once pruned, it is gone: a later continuation's spec
// names none.
func TestAContinuationsSpecNamesTheKeptAgentState(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	sv, spec := startOnPR(t, h, ex, "/inspect fix the flaky test")
	if spec.AgentState != nil {
		t.Fatalf("a first session names an agent state: %+v", spec.AgentState)
	}
	state := []byte("\x1f\x8b packed conversation, opaque to the app")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := contract.Evidence{Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: now, EndedAt: now.Add(time.Minute), Outcome: contract.OutcomeOK,
		AgentState: &contract.AgentStateNote{KeptBytes: int64(len(state))}}
	m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: spec.PinnedSHA, Files: []contract.FileChange{fixedCalc}}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev, Manifest: m, AgentState: state}, nil, 204)
	h.runWorkers()
	first := h.onlySession()
	if first.Outcome != session.Changed {
		t.Fatalf("the first session: %s (%s)\n%s", first.Outcome, first.Detail, h.logs)
	}
	if arts, err := h.st.Artifacts(context.Background(), first.AttemptID); err != nil || len(arts) != 0 {
		t.Errorf("the kept state is listed as an artifact: %+v, %v", arts, err)
	}
	if a, err := h.st.GetAttempt(context.Background(), first.AttemptID); err != nil || a.Result == "" || strings.Contains(a.Result, base64.StdEncoding.EncodeToString(state)) {
		t.Errorf("the recorded result holds the state again, or is missing (%v)", err)
	}

	continuation := func(body string) (*supervisor, contract.Spec) {
		t.Helper()
		before := len(ex.launches)
		h.clock.Advance(time.Minute)
		h.say(t, "ada", body)
		if len(ex.launches) != before+1 {
			t.Fatalf("no continuation was dispatched\n%s", h.logs)
		}
		sv := h.claim(ex.last(t))
		return sv, sv.spec()
	}
	sv2, spec2 := continuation("/inspect now add docs")
	if spec2.AgentState == nil || spec2.AgentState.AttemptID != first.AttemptID {
		t.Fatalf("the continuation's spec names %+v, not %s's state", spec2.AgentState, first.AttemptID)
	}
	if got, status := sv2.agentState(); status != http.StatusOK || !bytes.Equal(got, state) {
		t.Errorf("the continuation downloaded %q (%d), not the kept state", got, status)
	}
	// The state goes with the artifacts past their retention.
	if _, err := h.st.PruneArtifacts(context.Background(), h.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, status := sv2.agentState(); status != http.StatusNotFound {
		t.Errorf("a pruned state answered %d", status)
	}
	var next store.Session
	for _, s := range h.sessions() {
		if s.ID != first.ID {
			next = s
		}
	}
	sv2.upload(spec2, 0, contract.FileChange{Path: "DOCS.md", Mode: contract.ModeFile, Content: []byte("docs\n")})
	h.runWorkers()
	if next, _ = h.st.GetSession(context.Background(), next.ID); next.Outcome != session.Changed {
		t.Fatalf("the continuation: %s (%s)\n%s", next.Outcome, next.Detail, h.logs)
	}
	// The continuation kept none; one after it names none.
	if _, spec3 := continuation("/inspect and a changelog"); spec3.AgentState != nil {
		t.Errorf("a continuation of a session that kept no state names %+v", spec3.AgentState)
	}
}
