package app

import (
	"context"

	"github.com/rs/zerolog"
)

// stopAttempt ends an attempt so its token stops working and a late result
// is ignored, and asks the executor to kill it. Best effort: the attempt's
// own deadline stops it anyway. The read token's life is app/readtoken's.
func (s *Service) stopAttempt(ctx context.Context, attemptID string) {
	if attemptID == "" {
		return
	}
	log := zerolog.Ctx(ctx)
	if err := s.store.EndAttempt(ctx, attemptID, s.clock.Now()); err != nil {
		log.Warn().Err(err).Msg("ending the attempt failed")
	}
	// Revoked whatever else fails below: a token minted for an attempt that
	// never got an external id is still a live token.
	s.readTokens.RevokeAttempt(ctx, attemptID)
	a, err := s.store.GetAttempt(ctx, attemptID)
	if err != nil || a.ExternalID == "" || s.executor == nil {
		return
	}
	if err := s.executor.Cancel(ctx, a.ExternalID); err != nil {
		log.Warn().Err(err).Str("attempt_id", attemptID).Msg("cancelling the attempt failed")
	}
}
