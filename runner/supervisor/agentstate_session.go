package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// A session's agent state (decision 0072): a continuation's spec names
// the state an earlier attempt kept, which is downloaded over the channel
// and restored into the agent's emptied home before its first run (the
// preset's files are then written over it); after the agent's runs, its
// CLI's state is packed and uploaded with the result. Whatever goes wrong
// on the way starts the agent fresh, or keeps nothing, and the evidence
// says so: a conversation is worth having, never worth failing a session.

// agentStateTimeout bounds the state's download.
const agentStateTimeout = 2 * time.Minute

// restoreAgentState downloads the state the spec names and restores it
// into home (relative to the workspace, emptied), returning the
// conversation to resume; ok is false when the agent starts fresh.
func (s *session) restoreAgentState(ctx context.Context, home string) (ConversationState, bool) {
	ref := s.spec.AgentState
	if ref == nil || keptState(s.spec.Agent.Preset) == nil {
		return ConversationState{}, false
	}
	note := &contract.AgentStateNote{}
	s.ev.AgentState = note
	fresh := func(why string) (ConversationState, bool) {
		note.Fresh = cleanText(s.red.Redact(why), 1<<10)
		s.log.Warn().Str("from_attempt", ref.AttemptID).Str("why", note.Fresh).Msg("the agent starts a new conversation")
		return ConversationState{}, false
	}
	rctx, cancel := context.WithTimeout(ctx, agentStateTimeout)
	defer cancel()
	data, gone, err := s.ch.agentState(rctx)
	switch {
	case err != nil:
		return fresh("the earlier conversation could not be downloaded: " + err.Error())
	case gone:
		return fresh("the earlier conversation is no longer kept")
	}
	root, err := OpenAgentHome(s.ws.work, home)
	if err != nil {
		return fresh("the agent's home could not be opened: " + err.Error())
	}
	defer func() { _ = root.Close() }() // written through; nothing buffered
	st, why, err := RestoreAgentState(root, s.spec.Agent, data, s.cfg.Now(), MaxAgentStateAge, int(s.cfg.SandboxUID), int(s.cfg.SandboxGID))
	switch {
	case err != nil:
		return fresh(err.Error())
	case why != "":
		return fresh(why)
	}
	note.Restored = ref.AttemptID
	s.log.Info().Str("from_attempt", ref.AttemptID).Int("bytes", len(data)).Msg("the agent resumes its earlier conversation")
	return st, true
}

// startedFresh says, after all, that the agent started a new conversation
// and why: its restored state was whole, but the CLI did not have the
// conversation it named (served.go).
func (s *session) startedFresh(why string) {
	note := s.ev.AgentState
	if note == nil {
		note = &contract.AgentStateNote{}
		s.ev.AgentState = note
	}
	note.Restored, note.Fresh = "", cleanText(s.red.Redact(why), 1<<10)
	s.log.Warn().Str("why", note.Fresh).Msg("the agent starts a new conversation")
}

// keepAgentState packs the agent's conversation state after its runs, for
// the result's upload; the evidence says how big it is, or why none is
// kept.
func (s *session) keepAgentState() {
	if keptState(s.spec.Agent.Preset) == nil || s.ws == nil {
		return
	}
	note := s.ev.AgentState
	if note == nil {
		note = &contract.AgentStateNote{}
		s.ev.AgentState = note
	}
	data, err := s.packAgentState()
	if err != nil {
		note.NotKept = cleanText(s.red.Redact(err.Error()), 1<<10)
		s.log.Warn().Str("why", note.NotKept).Msg("the agent's conversation is not kept")
		return
	}
	s.agentState, note.KeptBytes = data, int64(len(data))
}

func (s *session) packAgentState() ([]byte, error) {
	root, err := OpenAgentHome(s.ws.work, filepath.Join(inspectDir, "home"))
	if err != nil {
		return nil, fmt.Errorf("the agent's home could not be opened: %w", err)
	}
	defer func() { _ = root.Close() }() // read-only
	var st ConversationState
	if s.served != nil {
		// A served agent's conversation is the one the supervisor started
		// or resumed through its server (served.go).
		st = *s.served
	} else if st, err = CaptureConversation(s.spec.Agent, root); err != nil {
		return nil, fmt.Errorf("the agent left no conversation to keep: %w", err)
	}
	data, skipped, err := PackAgentState(root, st, s.red, s.cfg.Now())
	if errors.Is(err, ErrAgentStateTooBig) {
		return nil, fmt.Errorf("the agent's conversation is over the %d-byte cap", contract.MaxAgentStateBytes)
	}
	if err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		s.log.Info().Strs("skipped", skipped).Msg("left out of the agent's kept state: not regular files")
	}
	return data, nil
}
