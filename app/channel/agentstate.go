package channel

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// AgentState serves the agent state the attempt's spec names
// (contract.PathAgentState): a continuation's agent resumes the
// conversation an earlier attempt kept (decision 0072). One pruned past
// artifacts.retention, or never kept, is gone: the agent starts fresh.
func (c *Channel) AgentState(ctx context.Context, a store.Attempt) ([]byte, error) {
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		return nil, contract.Refusal(http.StatusInternalServerError, contract.ErrorInvalid, "stored spec unreadable")
	}
	if spec.AgentState == nil {
		return nil, contract.ErrAgentStateGone
	}
	data, err := c.store.AgentState(ctx, spec.AgentState.AttemptID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, contract.ErrAgentStateGone
	case err != nil:
		c.attemptLog(ctx, a).Warn().Err(err).Msg("reading the agent state")
		return nil, err
	}
	return data, nil
}

// keepAgentState keeps the state a result carried, for a continuation.
func (c *Channel) keepAgentState(ctx context.Context, a store.Attempt, up contract.ResultUpload) error {
	if len(up.AgentState) == 0 {
		return nil
	}
	if err := c.store.PutAgentState(ctx, a.ID, a.SessionID, up.AgentState, c.clock.Now()); err != nil {
		c.attemptLog(ctx, a).Warn().Err(err).Msg("keeping the agent state")
		return err
	}
	return nil
}
