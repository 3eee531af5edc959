package app

import (
	"context"
	"errors"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/handlers"
)

// BuildkiteHookPath is where Buildkite delivers webhooks for the session
// pipeline (handlers.BuildkiteHook serves it).
const BuildkiteHookPath = handlers.BuildkiteHookPath

// buildSink records Buildkite's build events on their attempts: the
// engine's side of handlers.BuildkiteHook.
type buildSink struct{ s *Service }

// AcceptBuildEvent records the build's state on its attempt and queues the
// follow-up (a sync for build.running, a result collection otherwise), in
// one transaction. Nothing is changed for a build that is not the
// attempt's recorded run.
func (b buildSink) AcceptBuildEvent(ctx context.Context, ev handlers.BuildEvent) error {
	s := b.s
	sessionID := ev.MetaData[contract.MetaSession]
	number, err := strconv.Atoi(ev.MetaData[contract.MetaAttempt])
	if sessionID == "" || err != nil {
		return handlers.ErrNotOurs // a build of the pipeline not started by us
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sessionID).Int("attempt", number).Logger()
	ctx = log.WithContext(ctx)
	a, err := s.store.AttemptByNumber(ctx, sessionID, number)
	// Only the attempt's recorded build counts. Meta-data alone proves
	// nothing (anyone who can create a build can set it), so a build whose
	// creation was not recorded is adopted by reconcile, which finds it on
	// the configured pipeline, never from a webhook.
	if errors.Is(err, store.ErrNotFound) || (err == nil && (a.ExternalID == "" || a.ExternalID != ev.WebURL)) {
		log.Info().Msg("buildkite webhook for no current run; ignored")
		return handlers.ErrNotOurs
	}
	if err != nil {
		return err
	}
	if ev.Event == "build.running" && a.ExternalState != "" && a.ExternalState != "scheduled" {
		return nil // late: webhooks may arrive out of order; never go back to running
	}
	kind := store.SyncSession
	if ev.Event != "build.running" {
		kind = store.CollectResult
	}
	var then []store.NewWork
	if a.State != store.AttemptEnded { // once reported, the state is only for show
		then = append(then, store.NewWork{Kind: kind, SessionID: a.SessionID, Payload: a.ID})
	}
	changed, err := s.store.SetAttemptExternalState(ctx, a.ID, ev.State, s.clock.Now(), then...)
	if err != nil || !changed {
		return err // a repeat
	}
	log.Info().Str("build_state", ev.State).Msg("buildkite build changed")
	s.wakeWorkers()
	return nil
}
