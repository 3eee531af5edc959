package app

import (
	"context"

	"github.com/inspecthq/inspect/app/store"
)

// The engine's side of the state machine is app/transition's Writer
// (s.transitions), which the work handlers receive; its package comment
// says who takes which transition. What stays here is the one transition
// the engine itself observes.

// claimAttempt exchanges an attempt's single-use claim code for its session
// token. In the same transaction the session, if this is still its attempt
// and it is preparing or dispatched, becomes running, with a sync queued to
// tell GitHub.
func (s *Service) claimAttempt(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error) {
	a, err := s.store.ClaimAttempt(ctx, attemptID, claimCode, sessionToken, s.clock.Now())
	if err == nil {
		observeAgentStart(s.log.WithContext(ctx), s.store, s.metrics, s.clock.Now(), a)
	}
	return a, err
}
