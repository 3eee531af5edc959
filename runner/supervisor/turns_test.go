package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// fakeConversations stands in for the CLIs' conversations (the real ones
// are conversation.go's): a resumed run writes the message it was given
// to resumed-<n>.txt, so the change shows what reached the agent and in
// which order.
type fakeConversations struct {
	mu       sync.Mutex
	opened   int
	messages []string
}

func (f *fakeConversations) Open(_ context.Context, agent contract.Agent, p AgentPaths, at ConversationPlace) (Conversation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	return fakeConversation{f}, nil
}

type fakeConversation struct{ f *fakeConversations }

func (c fakeConversation) Resume(_ context.Context, msg string) (Invocation, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.messages = append(c.f.messages, msg)
	name := fmt.Sprintf("resumed-%d.txt", len(c.f.messages))
	// The message is an argument, never part of the script.
	return Invocation{Argv: []string{"sh", "-c", `printf '%s' "$1" > "$2"`, "sh", msg, name}}, nil
}

func (f *fakeConversations) said() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.messages...)
}

// steeredHarness is an attempt whose spec takes turns in mode.
func steeredHarness(t *testing.T, id, mode string, agent []string) (*harness, *fakeConversations) {
	t.Helper()
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec(id, id+"-a1", sha, agent, command("lint", time.Minute, "true"))
	spec.Steer = &contract.Steer{Mode: mode}
	h := newHarness(t, ch, spec)
	conv := &fakeConversations{}
	h.cfg.Conversations = conv
	h.cfg.StopGrace = 2 * time.Second
	return h, conv
}

// runInBackground runs the attempt and returns its report on the channel.
func (h *harness) runInBackground(t *testing.T) <-chan *Report {
	done := make(chan *Report, 1)
	go func() {
		rep, err := Run(context.Background(), h.cfg)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- rep
	}()
	return done
}

// waitForAsk waits until the supervisor asks for the turns after after:
// it then has every turn up to after.
func waitForAsk(t *testing.T, asks <-chan int, after int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case a := <-asks:
			if a >= after {
				return
			}
		case <-timeout:
			t.Fatalf("the supervisor never asked for the turns after %d", after)
		}
	}
}

func manifestFiles(u contract.ResultUpload) map[string]string {
	out := map[string]string{}
	if u.Manifest == nil {
		return out
	}
	for _, f := range u.Manifest.Files {
		out[f.Path] = string(f.Content)
	}
	return out
}

func TestAMessageInterruptsTheAgentAndContinuesItsConversation(t *testing.T) {
	// The marker is put together inside the agent, after first.txt:
	// waitForProcess then knows the agent is under way.
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	marker := "inspect-steer-" + stamp
	h, conv := steeredHarness(t, "sess-steer-1", contract.SteerInterrupt,
		[]string{"sh", "-c", `echo first > first.txt; exec sh agent/hang.sh "inspect-steer-$1"`, "sh", stamp})
	asks := h.ch.TurnAsks(h.spec.AttemptID)
	done := h.runInBackground(t)
	waitForProcess(t, marker)
	waitForAsk(t, asks, 0)
	// The flight recorder says what the agent wrote and runs, while it
	// runs.
	waitForRecorder(t, h, func(r contract.Recorder) bool {
		return len(r.Files) == 1 && r.Files[0] == (contract.RecorderFile{Path: "first.txt", Size: 6}) && strings.HasPrefix(r.Command, "sleep")
	})
	h.ch.AddTurn(h.spec.AttemptID, "bob", "use the new API instead", false)
	rep := <-done
	u := h.result(t, rep)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if got := conv.said(); len(got) != 1 || got[0] != "@bob says:\n\nuse the new API instead" {
		t.Errorf("the agent was told %q", got)
	}
	if len(ev.Commands) != 3 || ev.Commands[0].Name != "agent" || ev.Commands[0].Succeeded() || ev.Commands[1].Name != "agent (turn 1)" || !ev.Commands[1].Succeeded() {
		t.Fatalf("commands %+v", ev.Commands)
	}
	if ev.Commands[0].Signal == "SIGKILL" {
		t.Errorf("the interrupted agent was killed, not stopped gently: %+v", ev.Commands[0])
	}
	files := manifestFiles(u)
	if files["first.txt"] != "first\n" || files["resumed-1.txt"] != "@bob says:\n\nuse the new API instead" {
		t.Errorf("the change %v", files)
	}
	if got := h.ch.DeliveredTurns(h.spec.AttemptID); got != 1 {
		t.Errorf("the supervisor says it has turns up to %d, want 1", got)
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("processes of the interrupted run are left: %v", pids)
	}
	// When a run ends, its recorder counts the lines of what it wrote.
	counted := false
	for _, r := range h.ch.Attempt(h.spec.AttemptID).Recorders {
		for _, f := range r.Files {
			counted = counted || (f.Path == "first.txt" && f.Lines != nil && *f.Lines == 1)
		}
	}
	if !counted {
		t.Errorf("no recorder counted first.txt's line: %+v", h.ch.Attempt(h.spec.AttemptID).Recorders)
	}
}

func TestAQueuedMessageWaitsForTheRunToEnd(t *testing.T) {
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	marker := "inspect-queue-" + stamp
	// The run holds until the test ends the process carrying the marker;
	// then it writes first.txt and exits 0.
	h, conv := steeredHarness(t, "sess-steer-2", contract.SteerQueue,
		[]string{"sh", "-c", `sh -c 'while :; do sleep 1; done' "inspect-queue-$1"; echo first > first.txt`, "sh", stamp})
	asks := h.ch.TurnAsks(h.spec.AttemptID)
	done := h.runInBackground(t)
	waitForProcess(t, marker)
	waitForAsk(t, asks, 0)
	h.ch.AddTurn(h.spec.AttemptID, "carol", "also update the docs", false)
	// Asking for what follows turn 1 says the loop has it; queued, it
	// leaves the run alone.
	waitForAsk(t, asks, 1)
	pids := channeltest.ProcessesWith(marker)
	if len(pids) == 0 {
		t.Fatal("a queued message stopped the run")
	}
	if got := conv.said(); len(got) != 0 {
		t.Fatalf("the agent was resumed while its run went on: %q", got)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	u := h.result(t, <-done)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if len(ev.Commands) != 3 || !ev.Commands[0].Succeeded() || ev.Commands[1].Name != "agent (turn 1)" {
		t.Fatalf("commands %+v", ev.Commands)
	}
	files := manifestFiles(u)
	if files["first.txt"] != "first\n" || files["resumed-1.txt"] != "@carol says:\n\nalso update the docs" {
		t.Errorf("the change %v", files)
	}
}

func TestStopEndsTheAgentsTurnAndVerifiesWhatTheWorkspaceHolds(t *testing.T) {
	stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
	marker := "inspect-stop-" + stamp
	h, conv := steeredHarness(t, "sess-steer-3", contract.SteerInterrupt,
		[]string{"sh", "-c", `echo partial > partial.txt; exec sh agent/hang.sh "inspect-stop-$1"`, "sh", stamp})
	asks := h.ch.TurnAsks(h.spec.AttemptID)
	done := h.runInBackground(t)
	waitForProcess(t, marker)
	waitForAsk(t, asks, 0)
	h.ch.AddTurn(h.spec.AttemptID, "bob", "", true)
	u := h.result(t, <-done)
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("a stopped agent's session goes on to verify: outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if got := conv.said(); len(got) != 0 {
		t.Errorf("a stop resumed the agent with %q", got)
	}
	if len(ev.Commands) != 2 || ev.Commands[0].Name != "agent" || ev.Commands[1].Name != "lint" {
		t.Errorf("commands %+v", ev.Commands)
	}
	if files := manifestFiles(u); files["partial.txt"] != "partial\n" || len(files) != 1 {
		t.Errorf("the change %v", files)
	}
	if pids := channeltest.ProcessesWith(marker); len(pids) > 0 {
		t.Errorf("processes of the stopped run are left: %v", pids)
	}
}

func TestWithoutSteerTheSupervisorNeverAsksForTurns(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-steer-4", "sess-steer-4-a1", sha, []string{"sh", "-c", "echo done > done.txt"}, command("lint", time.Minute, "true"))
	h := newHarness(t, ch, spec)
	h.cfg.Conversations = &fakeConversations{}
	asks := ch.TurnAsks(spec.AttemptID)
	ch.AddTurn(spec.AttemptID, "bob", "never seen", false)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK || len(u.Evidence.Commands) != 2 {
		t.Fatalf("outcome %s, commands %+v", u.Evidence.Outcome, u.Evidence.Commands)
	}
	select {
	case a := <-asks:
		t.Errorf("a spec without steer asked for the turns after %d", a)
	default:
	}
}

// waitForRecorder waits until the channel has a flight recorder that ok
// accepts.
func waitForRecorder(t *testing.T, h *harness, ok func(contract.Recorder) bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for {
		for _, r := range h.ch.Attempt(h.spec.AttemptID).Recorders {
			if ok(r) {
				return
			}
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no flight recorder as expected; got %+v", h.ch.Attempt(h.spec.AttemptID).Recorders)
		}
	}
}
