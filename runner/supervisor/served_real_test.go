package supervisor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakemodel"
)

// A served OpenCode (decision 0084) is granted what `opencode run --auto`
// grants: the real OpenCode asks before the third identical tool call in
// a row (its doom_loop permission, "ask" by default), and a server nobody
// answers would wait there until the session's deadline. The supervisor
// grants it once; the third call runs and the conversation goes on to
// its change.
func TestRealServedOpenCodeIsGrantedWhatRunAutoGrants(t *testing.T) {
	model, run := servedOpenCode(t, "rs-opencode-ask", command("the change", time.Minute, "grep", "-qx", steerChanged, "greeting.txt"))
	const again = "echo DOOM-LOOP-RAN"
	model.Script(
		fakemodel.Turn{Exec: []string{again, again, again}},
		fakemodel.Turn{Exec: []string{"printf '%s\\n' '" + steerChanged + "' > greeting.txt"}},
		fakemodel.Turn{Message: steerDone},
	)
	ev := run()
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	reqs := model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	// The request after the three calls holds each call's output: none
	// was refused.
	// (The request body is JSON: the output's newline is escaped.)
	if n := bytes.Count(reqs[1].Input, []byte(`"output":"DOOM-LOOP-RAN\n"`)); n != 3 {
		in := reqs[1].Input
		t.Errorf("the three calls' outputs: %d of them in the next request, which ends:\n%s", n, in[max(0, len(in)-600):])
	}
	if model.Remaining() != 0 {
		t.Errorf("the script was not played out: %d turns left", model.Remaining())
	}
}

// A model error OpenCode does not retry ends the served conversation, and
// the agent's command says so as the CLI's exit would: the session's
// agent failed, with OpenCode's error at the end of its output.
func TestRealServedOpenCodesErrorIsTheAgentsFailure(t *testing.T) {
	model, run := servedOpenCode(t, "rs-opencode-err", command("the change", time.Minute, "true"))
	model.Script(fakemodel.Turn{Status: 400})
	ev := run()
	if ev.Outcome != contract.OutcomeAgentFailed || len(ev.Commands) != 1 {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	agent := ev.Commands[0]
	if agent.ExitCode != 1 || agent.Signal != "" || !strings.Contains(agent.OutputTail, "the conversation ended with OpenCode's error: ") {
		t.Errorf("the agent's command: exit %d, signal %q, output ending %q", agent.ExitCode, agent.Signal, agent.OutputTail[max(0, len(agent.OutputTail)-300):])
	}
}

// servedOpenCode is a supervisor attempt of session id whose agent is the
// real OpenCode, served (steer "interrupt"), verified by verify; run runs
// it, once the test has scripted the model, and returns its evidence.
func servedOpenCode(t *testing.T, id string, verify contract.Command) (*fakemodel.Server, func() contract.Evidence) {
	t.Helper()
	c := realCLI{preset: contract.PresetOpenCode, binary: "opencode", kind: contract.ProviderKindOpenAI}
	model, ch, sha := realCLIChannel(t, c)
	spec := ch.Spec(id, id+"-a1", sha, nil, verify)
	spec.Instructions = steerTask
	spec.Agent = contract.Agent{Preset: c.preset, Model: "scripted-1", Provider: "scripted", ProviderKind: c.kind}
	spec.Steer = &contract.Steer{Mode: contract.SteerInterrupt}
	h := newHarness(t, ch, spec)
	h.cfg.Conversations = CLIConversations()
	h.cfg.StopGrace = stopGrace
	return model, func() contract.Evidence {
		t.Helper()
		select {
		case rep := <-h.runInBackground(t):
			return h.result(t, rep).Evidence
		case <-time.After(4 * time.Minute):
			t.Fatalf("the attempt did not end; model requests %d", len(model.Requests()))
		}
		return contract.Evidence{}
	}
}

// A continuation whose kept state is whole but whose OpenCode database
// lacks the conversation the state names (here the manifest names
// another) starts a new conversation with the continuation's message, and
// the evidence says so, as for a state that cannot be restored; the
// session goes on.
func TestRealServedOpenCodeStartsFreshWithoutItsConversation(t *testing.T) {
	c := realCLI{preset: contract.PresetOpenCode, binary: "opencode", kind: contract.ProviderKindOpenAI}
	model, ch, sha := realCLIChannel(t, c)
	run := func(id, task string, from *contract.AgentStateRef) (contract.ResultUpload, fakemodel.Request) {
		t.Helper()
		spec := ch.Spec(id, id+"-a1", sha, nil)
		spec.Instructions = task
		spec.Agent = contract.Agent{Preset: c.preset, Model: "scripted-1", Provider: "scripted", ProviderKind: c.kind}
		spec.Steer = &contract.Steer{Mode: contract.SteerInterrupt}
		spec.AgentState = from
		h := newHarness(t, ch, spec)
		h.cfg.Conversations = CLIConversations()
		before := len(model.Requests())
		model.Script(fakemodel.Turn{Message: keptReply})
		u := h.result(t, h.run(t, context.Background()))
		if u.Evidence.Outcome != contract.OutcomeOK {
			t.Fatalf("%s: outcome %s: %s\n%+v", id, u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
		}
		if reqs := model.Requests(); len(reqs) > before {
			return u, reqs[before]
		}
		t.Fatalf("%s made no model request", id)
		return u, fakemodel.Request{}
	}
	first, _ := run("ks-served-1", keptTask, nil)
	if len(first.AgentState) == 0 {
		t.Fatalf("nothing kept: %+v", first.Evidence.AgentState)
	}
	const other = "ses_0000000000000000000000"
	ch.PutAgentState("ks-served-other", renameKeptConversation(t, first.AgentState, other))

	u, req := run("ks-served-2", keptNext, &contract.AgentStateRef{AttemptID: "ks-served-other"})
	note := u.Evidence.AgentState
	if note == nil || note.Restored != "" || !strings.Contains(note.Fresh, "holds no conversation "+other) {
		t.Errorf("the continuation's evidence says %+v, want a fresh start naming %s", note, other)
	}
	assertHolds(t, "the fresh conversation's first request", req, keptNext)
	if bytes.Contains(req.Input, []byte(keptTask)) {
		t.Error("the fresh conversation's first request holds the earlier conversation")
	}
}

// renameKeptConversation is a kept agent state with its manifest naming
// conversation id instead.
func renameKeptConversation(t *testing.T, state []byte, id string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(state))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var entries []tarEntry
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == agentStateManifestName {
			var man map[string]any
			if err := json.Unmarshal(body, &man); err != nil {
				t.Fatal(err)
			}
			conv, ok := man["conversation"].(map[string]any)
			if !ok {
				t.Fatalf("the manifest has no conversation: %s", body)
			}
			conv["id"] = id
			if body, err = json.Marshal(man); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(body))
		}
		entries = append(entries, tarEntry{h, body})
	}
	return writeTarball(t, entries)
}
