package supervisor

import (
	"bytes"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// Issue 36's real-CLI acceptance for steering (decisions 0071, 0073,
// 0084), at the supervisor: in an attempt with the CLIs' own conversations
// (CLIConversations, as `inspect runner` wires it), with steer "interrupt"
// a message sent while the model holds its first answer stops the run,
// and the model's next request holds the task and the message; the
// continued run makes the change, which the manifest carries. With steer
// "queue", the message waits for the first run to end: the run gets its
// answer and ends, and only then is the conversation continued with the
// message. OpenCode is steered through its server (one agent command for
// every turn), Codex CLI by stop and resume (a command per run); the
// app-level TestRealCLIsAreSteeredAndContinuedThroughTheApp interrupts all
// three CLIs, Claude Code's and Codex CLI's stop and resume among them.
func TestRealCLIsAreSteeredWhileTheyRun(t *testing.T) {
	codex := realCLI{preset: contract.PresetCodex, binary: "codex", kind: contract.ProviderKindOpenAI}
	opencode := realCLI{preset: contract.PresetOpenCode, binary: "opencode", kind: contract.ProviderKindOpenAI}
	for _, c := range []struct {
		name string
		cli  realCLI
		mode string
	}{
		{"opencode interrupted", opencode, contract.SteerInterrupt},
		{"opencode queued", opencode, contract.SteerQueue},
		{"codex queued", codex, contract.SteerQueue},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			steerRealCLI(t, c.cli, c.mode)
		})
	}
}

// The steered session's texts: distinct words a request body can be
// searched for.
const (
	steerTask    = "STEER-TASK make the greeting louder"
	steerByBob   = "STEER-BOB also make it polite"
	steerReply   = "STEER-REPLY the greeting is ready"
	steerDone    = "STEER-DONE the greeting is louder and polite"
	steerChanged = "HELLO, PLEASE!"
)

func steerRealCLI(t *testing.T, c realCLI, mode string) {
	model, ch, sha := realCLIChannel(t, c)
	// Short: the egress socket's path holds it, within a Unix socket
	// path's 108 bytes.
	id := "rs-" + c.binary + "-" + mode[:1]
	spec := ch.Spec(id, id+"-a1", sha, nil,
		command("the change", time.Minute, "grep", "-qx", steerChanged, "greeting.txt"))
	spec.Instructions = steerTask
	spec.Agent = contract.Agent{Preset: c.preset, Model: "scripted-1", Provider: "scripted", ProviderKind: c.kind}
	spec.Steer = &contract.Steer{Mode: mode}
	h := newHarness(t, ch, spec)
	h.cfg.Conversations = CLIConversations()
	h.cfg.StopGrace = stopGrace

	// The model holds its first answer until released; a queued message
	// lets the run have it (a message that ends the task), an
	// interrupting one never does.
	release, holding := make(chan struct{}), make(chan struct{})
	released := false
	t.Cleanup(func() {
		if !released {
			close(release)
		}
	})
	model.Script(fakemodel.Turn{Hold: release, Holding: holding, Message: steerReply})
	// The run the message continues changes the file and ends.
	model.Script(
		fakemodel.Turn{Exec: []string{"printf '%s\\n' '" + steerChanged + "' > greeting.txt"}},
		fakemodel.Turn{Message: steerDone},
	)

	asks := ch.TurnAsks(spec.AttemptID)
	done := h.runInBackground(t)
	ended := func(rep *Report) {
		t.Helper()
		if rs := ch.Attempt(spec.AttemptID).Results; len(rs) == 1 {
			t.Fatalf("the attempt ended early: %s: %s\n%+v", rs[0].Evidence.Outcome, rs[0].Evidence.Reason, rs[0].Evidence.Commands)
		}
		t.Fatalf("the attempt ended early: %+v", rep)
	}
	select {
	case <-holding:
	case rep := <-done:
		ended(rep)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the CLI never asked the model; requests %d", len(model.Requests()))
	}
	firstRun := len(model.Requests()) // the held request is the last of the first run's, so far
	ch.AddTurn(spec.AttemptID, "bob", steerByBob, false)
	if mode == contract.SteerQueue {
		// Asking for what follows turn 1 says the loop has the message;
		// queued, it leaves the run alone, which then gets its answer.
		for a := 0; a < 1; {
			select {
			case a = <-asks:
			case rep := <-done:
				ended(rep)
			case <-time.After(time.Minute):
				t.Fatal("the supervisor never asked for the turns after 1")
			}
		}
		released = true
		close(release)
	}

	var rep *Report
	select {
	case rep = <-done:
	case <-time.After(4 * time.Minute):
		t.Fatalf("the attempt did not end; model requests %d", len(model.Requests()))
	}
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	if c.preset == contract.PresetOpenCode {
		// One server held every turn; its command ends as the
		// conversation did, not as the server was stopped.
		if len(ev.Commands) != 2 || ev.Commands[0].Name != "agent" || !ev.Commands[0].Succeeded() || !ev.Commands[1].Succeeded() ||
			!slices.Contains(ev.Commands[0].Argv, "serve") {
			t.Fatalf("commands %+v", ev.Commands)
		}
	} else {
		if len(ev.Commands) != 3 || ev.Commands[0].Name != "agent" || ev.Commands[1].Name != "agent (turn 1)" || !ev.Commands[1].Succeeded() || !ev.Commands[2].Succeeded() {
			t.Fatalf("commands %+v", ev.Commands)
		}
		if ok := ev.Commands[0].Succeeded(); ok != (mode == contract.SteerQueue) {
			t.Errorf("steer %s: the first run succeeded %v: %+v", mode, ok, ev.Commands[0])
		}
	}
	if files := manifestFiles(u); len(files) != 1 || files["greeting.txt"] != steerChanged+"\n" {
		t.Errorf("the change %v", files)
	}

	reqs := model.Requests()
	for i, r := range reqs {
		if r.Status != 200 {
			t.Errorf("request %d (%s) answered %d", i, r.Path, r.Status)
		}
	}
	// Until the message reached the agent, no request held it; a queued
	// one reached it only after the first run had its answer.
	if len(reqs) <= firstRun {
		t.Fatalf("no request after the first run's held one (%d requests)", len(reqs))
	}
	for i, r := range reqs[:firstRun] {
		if bytes.Contains(r.Input, []byte(steerByBob)) {
			t.Errorf("request %d, before the message was sent, holds it", i)
		}
	}
	next := reqs[firstRun]
	assertHolds(t, "the model's next request", next, steerTask, steerByBob, "@bob says:")
	if holdsReply := bytes.Contains(next.Input, []byte(steerReply)); holdsReply != (mode == contract.SteerQueue) {
		t.Errorf("steer %s: the next request holds the first run's answer: %v", mode, holdsReply)
	}
	if model.Remaining() != 0 {
		t.Errorf("the script was not played out: %d turns left", model.Remaining())
	}
	if got := ch.DeliveredTurns(spec.AttemptID); got != 1 {
		t.Errorf("the supervisor says it has turns up to %d, want 1", got)
	}
}

// realCLIChannel is what a real CLI's supervisor attempt needs: the CLI on
// the host (or the test fails, naming the script that installs it), a
// scripted model that takes only the proxy's key, a session channel whose
// model egress reaches it, and a repository of one file.
func realCLIChannel(t *testing.T, c realCLI) (*fakemodel.Server, *channeltest.Server, string) {
	t.Helper()
	if _, err := exec.LookPath(c.binary); err != nil {
		t.Fatalf("%s is needed (run .ci/ensure-agent-clis): %v", c.binary, err)
	}
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(scriptedModelKey)
	ch := channeltest.New(t)
	serveScriptedModel(ch, model, c.kind)
	return model, ch, ch.Seed(map[string]string{"greeting.txt": "hello\n"})
}
