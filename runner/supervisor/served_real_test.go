package supervisor

import (
	"bytes"
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
