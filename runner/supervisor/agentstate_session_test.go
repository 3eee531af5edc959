package supervisor

import (
	"archive/tar"
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// The continuation's texts: distinct words a request body can be searched
// for.
const (
	keptTask    = "KEPT-TASK make the greeting louder"
	keptReply   = "KEPT-REPLY the greeting is louder"
	keptNext    = "KEPT-NEXT now make it polite"
	keptDone    = "KEPT-DONE it is polite"
	keptChanged = "HELLO!"
)

// keptStateCase is one attempt of a conversation over the channel: the
// attempt id, the spec's state (nil: none) and the model's turns.
func keptStateAttempt(t *testing.T, ch *channeltest.Server, model *fakemodel.Server, c realCLI, sha, id, task string, from *contract.AgentStateRef, turns ...fakemodel.Turn) (contract.ResultUpload, fakemodel.Request) {
	t.Helper()
	spec := ch.Spec(id, id+"-a1", sha, nil)
	spec.Instructions = task
	spec.Agent = contract.Agent{Preset: c.preset, Model: "scripted-1", Provider: "scripted", ProviderKind: c.kind}
	spec.AgentState = from
	h := newHarness(t, ch, spec)
	before := len(model.Requests())
	model.Script(turns...)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("%s: outcome %s: %s\n%+v", id, u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	reqs := model.Requests()
	if len(reqs) <= before {
		t.Fatalf("%s made no model request", id)
	}
	asks := ch.Attempt(spec.AttemptID).AgentStateAsks
	if want := map[bool]int{true: 1, false: 0}[from != nil]; asks != want {
		t.Errorf("%s asked for the agent state %d times, want %d", id, asks, want)
	}
	return u, reqs[before]
}

// With each real CLI, an attempt's agent state travels with its result,
// and a later session that names it (a continuation, decision 0072)
// resumes that conversation: its agent's first model request holds the
// first task, the model's reply and the new task, and the evidence says
// which attempt's state it resumed.
func TestAContinuationResumesTheAgentsKeptConversation(t *testing.T) {
	for _, c := range []realCLI{
		{preset: contract.PresetCodex, binary: "codex", kind: contract.ProviderKindOpenAI},
		{preset: contract.PresetClaudeCode, binary: "claude", kind: contract.ProviderKindAnthropic},
		{preset: contract.PresetOpenCode, binary: "opencode", kind: contract.ProviderKindOpenAI},
	} {
		t.Run(string(c.preset), func(t *testing.T) {
			t.Parallel()
			model, ch, sha := realCLIChannel(t, c)
			first := "ks-" + c.binary + "-1"

			u, req := keptStateAttempt(t, ch, model, c, sha, first, keptTask, nil,
				fakemodel.Turn{Exec: []string{"printf '%s\\n' '" + keptChanged + "' > greeting.txt"}},
				fakemodel.Turn{Message: keptReply})
			note := u.Evidence.AgentState
			if len(u.AgentState) == 0 || note == nil || note.KeptBytes != int64(len(u.AgentState)) || note.NotKept != "" || note.Restored != "" {
				t.Fatalf("the first attempt kept %d bytes; evidence %+v", len(u.AgentState), note)
			}
			if bytes.Contains(req.Input, []byte(keptNext)) {
				t.Fatal("the first request holds the next task")
			}

			u, req = keptStateAttempt(t, ch, model, c, sha, "ks-"+c.binary+"-2", keptNext, &contract.AgentStateRef{AttemptID: first + "-a1"},
				fakemodel.Turn{Message: keptDone})
			if note := u.Evidence.AgentState; note == nil || note.Restored != first+"-a1" || note.Fresh != "" || note.KeptBytes == 0 {
				t.Errorf("the continuation's evidence says %+v", note)
			}
			assertHolds(t, "the continuation's first request", req, keptTask, keptReply, keptNext)
			if argv := strings.Join(u.Evidence.Commands[0].Argv, " "); !slices.ContainsFunc([]string{"resume", "--resume", "--session"}, func(s string) bool {
				return slices.Contains(u.Evidence.Commands[0].Argv, s)
			}) {
				t.Errorf("the continuation's agent ran %q, not resuming", argv)
			}
		})
	}
}

// A state that is gone (pruned, never kept) or unusable starts the agent
// fresh, and the evidence says why; the session goes on.
func TestAContinuationWithoutItsStateStartsFresh(t *testing.T) {
	c := realCLI{preset: contract.PresetCodex, binary: "codex", kind: contract.ProviderKindOpenAI}
	model, ch, sha := realCLIChannel(t, c)
	for i, tc := range []struct {
		name  string
		state []byte
		why   string
	}{
		{"gone", nil, "no longer kept"},
		{"not a state", []byte("not a tarball at all"), "not a gzipped tarball"},
		{"too old", tarball(t, agentStateManifest{Version: agentStateVersion, Conversation: ConversationState{Preset: contract.PresetCodex, ID: stateTestID},
			CLIVersion: CodexVersion, PackedAt: time.Now().Add(-MaxAgentStateAge - time.Hour)},
			&tar.Header{Typeflag: tar.TypeReg, Name: "codex/sessions/rollout-x-" + stateTestID + ".jsonl", Mode: 0o600, Size: 3}), "older than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := "ks-gone-" + string(rune('a'+i))
			ch.PutAgentState(from, tc.state)
			u, req := keptStateAttempt(t, ch, model, c, sha, "ks-fresh-"+string(rune('a'+i)), keptNext, &contract.AgentStateRef{AttemptID: from},
				fakemodel.Turn{Message: keptDone})
			note := u.Evidence.AgentState
			if note == nil || note.Restored != "" || !strings.Contains(note.Fresh, tc.why) {
				t.Errorf("evidence %+v, want a fresh start saying %q", note, tc.why)
			}
			if slices.Contains(u.Evidence.Commands[0].Argv, "resume") {
				t.Errorf("a fresh agent resumed: %q", u.Evidence.Commands[0].Argv)
			}
			assertHolds(t, "the fresh agent's first request", req, keptNext)
		})
	}
}
