package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// The agent phase as a conversation of turns (decision 0071). While the
// agent runs, the supervisor listens on the session channel for messages
// people send the session (contract.PathTurns, a long poll: never GitHub).
// With steer "interrupt" a message stops the agent's run at once (its
// processes get SIGTERM, the sandbox is killed after a grace) and the
// agent's conversation continues with it; with "queue" it waits until the
// run ends. A stop message ends the agent's turn: the session goes on to
// collect, verify and report what the workspace holds.
//
// What continuing a CLI's conversation takes (its session id, the argv
// that resumes it) is the Conversation's; this file only decides when.

// Conversation is an agent CLI's conversation, as the turn loop needs it.
type Conversation interface {
	// Resume returns how to run the agent again so that it continues its
	// conversation with msg as the next user message, after its last run
	// ended (finished or stopped). msg is untrusted text: it reaches the
	// CLI as a file or an argument, never a shell string.
	Resume(ctx context.Context, msg string) (Invocation, error)
}

// Conversations opens the conversation of a session's agent. The per-CLI
// primitive's OpenConversation (conversation.go) is one, adapted as
//
//	func (cliConversations) Open(_ context.Context, a contract.Agent, p AgentPaths, at ConversationPlace) (Conversation, error) {
//		return OpenConversation(a, p, at.Workspace, at.HostWork, at.UID, at.GID)
//	}
type Conversations interface {
	// Open returns the conversation the agent's first run (with paths)
	// starts, before it runs.
	Open(ctx context.Context, agent contract.Agent, paths AgentPaths, at ConversationPlace) (Conversation, error)
}

// ConversationsFunc is a func as Conversations, for wiring one in
// (`inspect runner`'s config) without a type of its own.
type ConversationsFunc func(ctx context.Context, agent contract.Agent, paths AgentPaths, at ConversationPlace) (Conversation, error)

// Open calls f.
func (f ConversationsFunc) Open(ctx context.Context, agent contract.Agent, paths AgentPaths, at ConversationPlace) (Conversation, error) {
	return f(ctx, agent, paths, at)
}

// ConversationPlace is where the agent runs: the workspace as it sees it
// ("/workspace") and on the host, and the sandbox's ids, which own what
// the conversation writes there.
type ConversationPlace struct {
	Workspace, HostWork string
	UID, GID            int
}

// turnRetryDelay is how long the listener waits after a failed turns
// request before it asks again.
const turnRetryDelay = time.Second

// agentRun is how the agent phase ended.
type agentRun struct {
	// result is the last run's.
	result contract.CommandResult
	// ok is false when the sandbox itself failed (the outcome is set).
	ok bool
	// stopped says a stop message (or the turn timeout) ended the agent's
	// turn: its exit status says nothing of the session.
	stopped bool
}

// runAgent runs the agent, and again for each message that steers it.
func (s *session) runAgent(ctx context.Context, inv Invocation) agentRun {
	var turnTimeout time.Duration
	if st := s.spec.Steer; st != nil {
		turnTimeout = st.TurnTimeout.Std()
	}
	if s.spec.Steer == nil || s.cfg.Conversations == nil {
		return s.runOnce(ctx, "agent", inv, turnTimeout, nil)
	}
	// OpenCode is steered through its own server (served.go, decision
	// 0084); the other CLIs are stopped and resumed.
	served := servedAgent(s.spec.Agent, s.spec.Steer) && s.egress != nil
	var conv Conversation
	if !served {
		var err error
		conv, err = s.cfg.Conversations.Open(ctx, s.spec.Agent, s.agentPaths(),
			ConversationPlace{Workspace: "/workspace", HostWork: s.ws.work, UID: int(s.cfg.SandboxUID), GID: int(s.cfg.SandboxGID)})
		if err != nil {
			// The agent still runs; messages wait for the session's end and
			// continue it then (decision 0072).
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("the agent's conversation cannot be continued; its messages wait for the session's end")
			return s.runOnce(ctx, "agent", inv, turnTimeout, nil)
		}
	}
	interrupt := s.spec.Steer.Mode == contract.SteerInterrupt

	lctx, cancel := context.WithCancel(ctx)
	in := make(chan []contract.Turn)
	var listening sync.WaitGroup
	listening.Add(1)
	go func() {
		defer listening.Done()
		s.listenTurns(lctx, in)
	}()
	defer func() {
		cancel()
		listening.Wait()
	}()

	if served {
		return s.runServed(ctx, inv, in, interrupt, turnTimeout)
	}

	var (
		last    int // the newest turn taken
		pending []contract.Turn
		name    = "agent"
	)
	for {
		stop := make(chan struct{})
		var once sync.Once
		stopRun := func() { once.Do(func() { close(stop) }) }
		done := make(chan agentRun, 1)
		go func(inv Invocation) { done <- s.runOnce(ctx, name, inv, turnTimeout, stop) }(inv)
		stopped := false
		var run agentRun
	running:
		for {
			select {
			case run = <-done:
				break running
			case turns := <-in:
				more, stop := s.takeTurns(turns, &last)
				if stop {
					stopped = true
					stopRun()
					continue
				}
				pending = append(pending, more...)
				if interrupt && len(more) > 0 {
					stopRun()
				}
			}
		}
		if !run.ok || run.stopped {
			return run
		}
		if stopped {
			run.stopped = true
			return run
		}
		if len(pending) == 0 {
			// The run ended by itself: a message that came meanwhile (the
			// listener may be between two asks) is asked for once more,
			// which also says the supervisor has every turn up to last.
			more, stop, err := s.turnsNow(ctx, last)
			if err != nil {
				s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("asking for the last messages failed; the agent's turn ends")
				return run
			}
			if stop {
				run.stopped = true
				return run
			}
			for _, t := range more {
				last = max(last, t.Seq)
			}
			pending = more
		}
		if len(pending) == 0 {
			return run
		}
		msg := turnsMessage(pending)
		first := pending[0].Seq
		pending = nil
		next, err := conv.Resume(ctx, msg)
		if err != nil {
			s.fail(ctx, "continuing the agent's conversation", err)
			run.ok = false
			return run
		}
		inv = next
		s.invocation = &inv
		s.turn = first
		name = fmt.Sprintf("agent (turn %d)", first)
		s.enter(contract.PhaseAgent, fmt.Sprintf("running the agent on turn %d", first))
	}
}

// takeTurns takes the turns after *last from a batch the listener brought,
// moving *last on: the messages, and whether a stop was among them (the
// agent's turn then ends, and the messages with it).
func (s *session) takeTurns(turns []contract.Turn, last *int) ([]contract.Turn, bool) {
	var out []contract.Turn
	for _, t := range turns {
		if t.Seq <= *last {
			continue
		}
		*last = t.Seq
		s.log.Info().Int("turn", t.Seq).Str("author", t.Author).Bool("stop", t.Stop).Msg("a message for the agent")
		if t.Stop {
			return nil, true
		}
		out = append(out, t)
	}
	return out, false
}

// turnsNow asks for the turns after after without waiting; stop says one
// of them is a stop (the others are then dropped: the agent's turn ends).
func (s *session) turnsNow(ctx context.Context, after int) ([]contract.Turn, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	turns, err := s.ch.turns(rctx, after, 0)
	if err != nil {
		return nil, false, err
	}
	var out []contract.Turn
	for _, t := range turns {
		if t.Stop {
			return nil, true, nil
		}
		out = append(out, t)
	}
	return out, false, nil
}

// listenTurns asks for the session's turns, a long poll at a time, and
// hands each batch to in until ctx ends. A failed ask is retried after
// turnRetryDelay; an ended attempt stops it (the run is being stopped).
func (s *session) listenTurns(ctx context.Context, in chan<- []contract.Turn) {
	after := 0
	for {
		rctx, cancel := context.WithTimeout(ctx, contract.MaxTurnsWait+s.cfg.RequestTimeout)
		turns, err := s.ch.turns(rctx, after, contract.MaxTurnsWait)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if isAttemptEnded(err) {
				return
			}
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("asking for messages failed; asking again")
			t := time.NewTimer(turnRetryDelay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if len(turns) == 0 {
			continue
		}
		after = turns[len(turns)-1].Seq
		select {
		case in <- turns:
		case <-ctx.Done():
			return
		}
	}
}

// runOnce runs the agent once, as name, ended early when stop closes (a
// message that interrupts it) or after turnTimeout.
func (s *session) runOnce(ctx context.Context, name string, inv Invocation, turnTimeout time.Duration, stop <-chan struct{}) agentRun {
	r, ok := s.commandStoppable(ctx, name, inv.Argv, turnTimeout, stop)
	run := agentRun{result: r, ok: ok}
	if ok && r.TimedOut && turnTimeout > 0 && ctx.Err() == nil {
		// The turn's own deadline, not the session's: the turn ends, and
		// the session goes on with what the workspace holds.
		s.log.Info().Dur("turn_timeout", turnTimeout).Msg("the agent's turn ran out of time; going on to verify")
		run.stopped = true
	}
	return run
}

// turnsMessage is what the agent is told for the messages in turns, each
// with its author: several people may steer one session.
func turnsMessage(turns []contract.Turn) string {
	if len(turns) == 1 {
		return fmt.Sprintf("@%s says:\n\n%s", turns[0].Author, turns[0].Message)
	}
	var b strings.Builder
	for i, t := range turns {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "@%s says:\n\n%s", t.Author, t.Message)
	}
	return b.String()
}
