package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// The turn loop of a served agent (decision 0084): one run of `opencode
// serve` holds the whole agent phase, and every turn, the first request
// too, is a message posted to it (opencodeserver.go). "interrupt" aborts
// the server's run and posts the message at once; "queue" posts it when
// the run ends; a stop aborts the run and ends the agent's turn. The
// phase ends when a run ends with nothing more to say: the server is then
// stopped, and the agent's command counts as the conversation ended (exit
// 0, or 1 when OpenCode reported an error), not as the server's signal.

const (
	// openCodeStartTimeout bounds the server's start: about 2 s measured
	// in the sandbox (BENCHMARKS.md), minutes only on a starved host.
	openCodeStartTimeout = 3 * time.Minute
	// openCodeReadyPoll is how often the server is asked whether it is up
	// while it starts: it says so on no channel the supervisor has.
	openCodeReadyPoll = 50 * time.Millisecond
	// openCodeReadyAsk bounds one of those asks.
	openCodeReadyAsk = time.Second
	// openCodeAbortWait bounds the wait for an aborted run to end before
	// the next message is posted (OpenCode queues it behind the run).
	openCodeAbortWait = 30 * time.Second
)

// servedEnd is how a served conversation ended.
type servedEnd struct {
	// run is the server's run when it ended by itself (it failed, or the
	// sandbox did), before the conversation did.
	run *agentRun
	// stopped says a stop message or the turn's deadline ended the
	// agent's turn.
	stopped bool
	// failure is what went wrong with the conversation ("" for nothing):
	// OpenCode's own error for its last run, or the server's API failing.
	failure string
}

// runServed runs the agent as a server for the whole agent phase; in
// brings the messages people send the session (listenTurns).
func (s *session) runServed(ctx context.Context, inv Invocation, in <-chan []contract.Turn, interrupt bool, turnTimeout time.Duration) agentRun {
	dir, err := s.egress.agentSocketDir(int(s.cfg.SandboxUID), int(s.cfg.SandboxGID))
	if err != nil {
		s.fail(ctx, "opening the way to the agent's server", err)
		return agentRun{}
	}
	serve := openCodeServeInvocation(inv)
	s.invocation, s.agentSocketDir = &serve, dir
	defer func() { s.agentSocketDir = "" }()

	stop := make(chan struct{})
	var once sync.Once
	stopRun := func() { once.Do(func() { close(stop) }) }
	done := make(chan agentRun, 1)
	go func() { done <- s.runOnce(ctx, "agent", serve, 0, stop) }()

	oc := newOpenCodeClient(dir)
	cctx, cancel := context.WithCancel(ctx)
	end := s.converse(cctx, oc, in, done, interrupt, turnTimeout)
	cancel() // ends the event stream
	oc.close()
	stopRun()
	var run agentRun
	if end.run != nil {
		run = *end.run
	} else {
		run = <-done
	}
	if !run.ok || end.run != nil {
		return run
	}
	if end.failure != "" {
		s.log.Warn().Str("error", s.red.Redact(end.failure)).Msg("the served agent's conversation failed")
	}
	if end.stopped {
		run.stopped = true
		return run
	}
	// The supervisor stopped the server: its ending is the conversation's.
	if n := len(s.ev.Commands); n > 0 && s.ev.Commands[n-1].Phase == contract.PhaseAgent {
		c := &s.ev.Commands[n-1]
		c.ExitCode, c.Signal = 0, ""
		if end.failure != "" {
			c.ExitCode = 1
			line := cleanText(s.red.Redact("the conversation ended with OpenCode's error: "+end.failure), 1<<10)
			tail, cut := contract.TailOutput([]byte(strings.TrimLeft(c.OutputTail+"\n"+line, "\n")), int(s.spec.Limits.MaxOutputBytes))
			c.OutputTail, c.OutputTruncated = tail, c.OutputTruncated || cut
		}
		run.result = *c
	}
	return run
}

// converse drives the served agent's conversation until it ends (see
// servedEnd); done brings the server's run if it ends first.
func (s *session) converse(ctx context.Context, oc *openCodeClient, in <-chan []contract.Turn, done <-chan agentRun, interrupt bool, turnTimeout time.Duration) servedEnd {
	began := time.Now()
	if end, ok := s.awaitServer(ctx, oc, done); !ok {
		return end
	}
	s.log.Info().Int64("start_ms", time.Since(began).Milliseconds()).Msg("the agent's server is up")
	evs, err := oc.events(ctx)
	if err != nil {
		return servedEnd{failure: "subscribing to OpenCode's events: " + err.Error()}
	}
	var id string
	if s.resumed != nil {
		id = s.resumed.ID
	} else if id, err = oc.newSession(ctx); err != nil {
		return servedEnd{failure: "starting OpenCode's conversation: " + err.Error()}
	}
	s.served = &ConversationState{Preset: contract.PresetOpenCode, ID: id}
	first, err := s.readPrompt()
	if err != nil {
		return servedEnd{failure: "reading the prompt: " + err.Error()}
	}

	var (
		last     int // the newest turn taken
		pending  []contract.Turn
		failure  string
		seenBusy bool // the run of the message posted last has begun
		deadline *time.Timer
		expired  <-chan time.Time
	)
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	post := func(msg string) error {
		seenBusy, failure = false, ""
		if turnTimeout > 0 {
			if deadline != nil {
				deadline.Stop()
			}
			deadline = time.NewTimer(turnTimeout)
			expired = deadline.C
		}
		if err := oc.prompt(ctx, id, msg); err != nil {
			return fmt.Errorf("posting the message to OpenCode: %w", err)
		}
		return nil
	}
	deliver := func() error {
		msg, n := turnsMessage(pending), pending[0].Seq
		pending = nil
		// The run's goroutine reads s.turn and s.phase: neither is
		// written while it runs (the phase stays the agent's).
		if rec := s.recorder.Load(); rec != nil {
			rec.setTurn(n)
		}
		s.progress(contract.PhaseAgent, fmt.Sprintf("running the agent on turn %d", n))
		return post(msg)
	}
	abort := func() {
		actx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
		if err := oc.abort(actx, id); err != nil {
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("OpenCode's run could not be aborted; the server is stopped with the turn")
		}
	}
	if err := post(first); err != nil {
		var missing *errOpenCodeStatus
		if s.resumed == nil || !errors.As(err, &missing) || missing.status != http.StatusNotFound {
			return servedEnd{failure: err.Error()}
		}
		// The restored database has no such conversation: the agent
		// starts a new one, as a CLI whose state cannot be restored does
		// (agentstate_session.go), and the evidence says so.
		if id, err = oc.newSession(ctx); err != nil {
			return servedEnd{failure: "starting OpenCode's conversation: " + err.Error()}
		}
		s.served = &ConversationState{Preset: contract.PresetOpenCode, ID: id}
		s.startedFresh(fmt.Sprintf("OpenCode's restored state holds no conversation %s", s.resumed.ID))
		if err := post(first); err != nil {
			return servedEnd{failure: err.Error()}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return servedEnd{}
		case r := <-done:
			return servedEnd{run: &r}
		case <-expired:
			s.log.Info().Dur("turn_timeout", turnTimeout).Msg("the agent's turn ran out of time; going on to verify")
			abort()
			return servedEnd{stopped: true}
		case ev, ok := <-evs:
			if !ok {
				return servedEnd{failure: "OpenCode's event stream ended"}
			}
			actx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			asked, err := oc.answerAsk(actx, ev)
			cancel()
			if err != nil {
				return servedEnd{failure: "answering OpenCode's " + ev.Type + ": " + err.Error()}
			}
			if asked {
				s.log.Info().Str("event", ev.Type).Msg("answered the agent's server as `opencode run --auto` would")
				continue
			}
			if f := ev.failure(id); f != "" {
				failure = f
			}
			if ev.busy(id) {
				seenBusy = true
			}
			if !ev.idle(id) || !seenBusy {
				continue // an aborted run's end, or another conversation's
			}
			if len(pending) == 0 {
				more, stop, err := s.turnsNow(ctx, last)
				if err != nil {
					s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("asking for the last messages failed; the agent's turn ends")
					return servedEnd{failure: failure}
				}
				if stop {
					return servedEnd{stopped: true}
				}
				for _, t := range more {
					last = max(last, t.Seq)
				}
				pending = more
			}
			if len(pending) == 0 {
				return servedEnd{failure: failure}
			}
			if err := deliver(); err != nil {
				return servedEnd{failure: err.Error()}
			}
		case turns := <-in:
			more, stop := s.takeTurns(turns, &last)
			if stop {
				abort()
				return servedEnd{stopped: true}
			}
			pending = append(pending, more...)
			if !interrupt || len(pending) == 0 {
				continue
			}
			abort()
			if err := s.awaitAborted(ctx, oc, id, evs); err != nil {
				return servedEnd{failure: err.Error()}
			}
			if err := deliver(); err != nil {
				return servedEnd{failure: err.Error()}
			}
		}
	}
}

// awaitServer asks the server whether it is up until it is; ok is false
// when it never was (end says why).
func (s *session) awaitServer(ctx context.Context, oc *openCodeClient, done <-chan agentRun) (servedEnd, bool) {
	give := time.NewTimer(openCodeStartTimeout)
	defer give.Stop()
	tick := time.NewTicker(openCodeReadyPoll)
	defer tick.Stop()
	for {
		// Each ask is short: while it starts, the server can take a
		// connection and never answer it (measured: a first ask hung for
		// 30 s while a later one was answered).
		hctx, cancel := context.WithTimeout(ctx, openCodeReadyAsk)
		err := oc.healthy(hctx)
		cancel()
		if err == nil {
			return servedEnd{}, true
		}
		select {
		case <-ctx.Done():
			return servedEnd{}, false
		case r := <-done:
			return servedEnd{run: &r}, false
		case <-give.C:
			return servedEnd{failure: fmt.Sprintf("OpenCode's server did not answer within %s: %v", openCodeStartTimeout, err)}, false
		case <-tick.C:
		}
	}
}

// awaitAborted waits, after an abort, until the conversation's run has
// ended, so that its end is not taken for the next message's; OpenCode
// would queue the message behind the run anyway.
func (s *session) awaitAborted(ctx context.Context, oc *openCodeClient, id string, evs <-chan openCodeEvent) error {
	busy, err := oc.busy(ctx, id)
	if err != nil {
		return fmt.Errorf("asking OpenCode whether its run ended: %w", err)
	}
	if !busy {
		return nil
	}
	bound := time.NewTimer(openCodeAbortWait)
	defer bound.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bound.C:
			s.log.Warn().Dur("waited", openCodeAbortWait).Msg("OpenCode's aborted run has not ended; the message is posted behind it")
			return nil
		case ev, ok := <-evs:
			if !ok {
				return errors.New("OpenCode's event stream ended")
			}
			if ev.idle(id) {
				return nil
			}
		}
	}
}

// readPrompt is the agent's prompt file as the supervisor wrote it (the
// first request, or a continuation's message), read through an os.Root:
// .inspect/ is the agent's to write.
func (s *session) readPrompt() (string, error) {
	root, err := os.OpenRoot(s.ws.work)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }() // read-only
	b, err := root.ReadFile(strings.TrimPrefix(PromptFile, "/workspace/"))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
