package contract

import (
	"net/http"
)

// An agent CLI's conversation state between attempts (decisions 0072,
// 0073): the supervisor packs the part of the agent's home its CLI needs to
// resume (runner/supervisor/agentstate.go) and uploads it with the result;
// the app keeps it as it keeps artifacts (decision 0029: in the store,
// pruned after artifacts.retention), under AgentStateName; a continuation's
// spec names it (Spec.AgentState), and its supervisor downloads it over the
// channel (PathAgentState) and restores it before the agent's first run.
const (
	// PathAgentState: GET the agent state the attempt's spec names
	// (application/gzip, at most MaxAgentStateBytes). Session token. A
	// state that is gone answers 404.
	PathAgentState  = "/v1/attempts/{attempt}/agent-state"
	RouteAgentState = "GET " + PathAgentState

	// MaxAgentStateBytes caps a packed state: what the result upload
	// carries, the store keeps and the channel serves. A conversation's
	// transcript is text and compresses well; one over this is not kept,
	// and the continuation starts fresh.
	MaxAgentStateBytes = 8 << 20

	// AgentStateName is the name the app keeps a state under among the
	// attempt's artifacts: under the reserved .inspect/, which no
	// artifacts: glob can collect, and which no list of artifacts shows.
	AgentStateName = ".inspect/agent-state.tar.gz"

	// ContentTypeGzip is a packed state's type on the channel.
	ContentTypeGzip = "application/gzip"
)

// AgentStateRef names the state a continuation's agent resumes from (spec
// v9): the earlier attempt whose result carried it.
type AgentStateRef struct {
	AttemptID string `json:"attempt_id"`
}

// AgentStateNote says, in the evidence (v10), what became of the agent's
// conversation state: whether the attempt's agent resumed a kept state or
// started fresh (and why), and whether its own was kept for a later turn
// (and why not).
type AgentStateNote struct {
	// Restored is the attempt whose state the agent resumed.
	Restored string `json:"restored,omitempty"`
	// Fresh says why the agent started a new conversation when the spec
	// named a state: gone, too old, too big, another CLI's.
	Fresh string `json:"fresh,omitempty"`
	// KeptBytes is the size of the state uploaded with the result.
	KeptBytes int64 `json:"kept_bytes,omitempty"`
	// NotKept says why no state was uploaded when the agent's CLI has one.
	NotKept string `json:"not_kept,omitempty"`
}

// maxAgentStateNoteBytes caps each of the note's reasons.
const maxAgentStateNoteBytes = 1 << 10

func (n *AgentStateNote) validate(f *faults, prefix string) {
	if n.Restored != "" {
		checkID(f, at(prefix, "restored"), n.Restored)
	}
	checkText(f, at(prefix, "fresh"), n.Fresh, maxAgentStateNoteBytes, false)
	checkText(f, at(prefix, "not_kept"), n.NotKept, maxAgentStateNoteBytes, false)
	if n.KeptBytes < 0 || n.KeptBytes > MaxAgentStateBytes {
		f.add(at(prefix, "kept_bytes"), "must be 0 to %d", MaxAgentStateBytes)
	}
}

// ErrAgentStateGone is the refusal of PathAgentState when the state the
// spec names is not kept (never uploaded, or pruned).
var ErrAgentStateGone = Refusal(http.StatusNotFound, ErrorNotFound, "the agent state is gone")

func (s *ChannelServer[A]) agentState(w http.ResponseWriter, r *http.Request, a A) {
	data, err := s.backend.AgentState(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(data) > MaxAgentStateBytes {
		s.fail(w, r, Refusal(http.StatusInternalServerError, ErrorTooLarge, "the agent state is over its cap"))
		return
	}
	w.Header().Set("Content-Type", ContentTypeGzip)
	_, _ = w.Write(data) // the peer may be gone; nothing to do
}
