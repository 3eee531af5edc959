// Package collect is the collect_result work's handler: a finished run's
// result taken from the executor when the supervisor's upload has not
// arrived, checked as an upload is, or the session ended runner_lost.
// Reconcile asks it too, for a run the executor reports exited. The
// engine (package app) wires a Handler with what it needs and nothing
// more (decision 0049).
package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/session"
)

// Handler runs collect_result work. Its fields are all it reaches of the
// engine.
type Handler struct {
	// Store reads the session and its attempt.
	Store Store
	// Transitions ends a session whose run left no result it can trust.
	Transitions Transitions
	// Executor holds the runs; nil (the control plane alone) or one that
	// is no runner.ResultFetcher has no result to give.
	Executor runner.Executor
	// RecordResult stores an attempt's validated result, once; first
	// says this call stored it.
	RecordResult func(ctx context.Context, attemptID string, up contract.ResultUpload) (first bool, err error)
	// Wake wakes the workers for the report a recorded result queued.
	Wake func()
	// CommandWord is what a comment starts with to talk to Inspect.
	CommandWord string
}

// Store is what the handler reads of the store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
}

// Transitions is what the handler changes of a session as stored.
type Transitions interface {
	// EndRun ends the session if attemptID is still its attempt.
	EndRun(ctx context.Context, sessionID, attemptID string, outcome session.Outcome, reason, reply string) error
}

// IsWebURL says whether an executor's id for a run is a link to show
// (a Buildkite build's is its web URL).
func IsWebURL(externalID string) bool {
	u, err := url.Parse(externalID)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// Handle is the CollectResult work item: a webhook said the run
// finished.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	return h.Collect(ctx, w.SessionID, w.Payload, runner.AttemptState{Status: runner.StatusExited, ExitCode: -1})
}

// Collect takes a finished run's result from the executor when the
// supervisor's upload has not arrived. store.RecordResult accepts one
// result per attempt, so the upload and this path can race harmlessly.
func (h *Handler) Collect(ctx context.Context, sessionID, attemptID string, st runner.AttemptState) error {
	sess, err := h.Store.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	a, err := h.Store.GetAttempt(ctx, attemptID)
	if err != nil {
		return err
	}
	if sess.State() == session.Done || sess.AttemptID != a.ID || a.State == store.AttemptEnded {
		return nil // reported, ended, or superseded meanwhile
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", a.ID).Logger()
	fetcher, ok := h.Executor.(runner.ResultFetcher)
	if ok && a.State == store.AttemptRunning {
		evidence, manifest, err := fetcher.FetchResult(ctx, a.ExternalID)
		switch {
		case err == nil:
			return h.recordFetchedResult(log.WithContext(ctx), sess, a, evidence, manifest)
		case errors.Is(err, runner.ErrResultTooLarge):
			return h.refuseFetchedResult(ctx, sess, a, err)
		case !errors.Is(err, runner.ErrNoResult):
			return fmt.Errorf("reading the attempt's result from the executor: %w", err)
		}
	}
	log.Warn().Str("status", string(st.Status)).Int("exit_code", st.ExitCode).Str("attempt_state", string(a.State)).
		Msg("runner ended without a result")
	logURL := ""
	if IsWebURL(a.ExternalID) {
		logURL = a.ExternalID
	}
	reply := render.RunnerLostReply(sess.RequesterLogin, logURL, a.State == store.AttemptStarted, h.CommandWord)
	return h.Transitions.EndRun(ctx, sess.ID, a.ID, session.Errored, "runner_lost", reply)
}

// refuseFetchedResult ends a session whose run left a result that fails
// the checks an upload gets (or is too large to read): as a bad upload is
// refused, it cannot be trusted.
func (h *Handler) refuseFetchedResult(ctx context.Context, sess store.Session, a store.Attempt, why error) error {
	zerolog.Ctx(ctx).Warn().Err(why).Msg("the executor's result is invalid")
	return h.Transitions.EndRun(ctx, sess.ID, a.ID, session.Errored, "runner_lost", render.ResultRefusedReply(sess.RequesterLogin, h.CommandWord))
}

// recordFetchedResult checks a result read from the executor exactly as an
// upload over the channel is checked, then records it.
func (h *Handler) recordFetchedResult(ctx context.Context, sess store.Session, a store.Attempt, evidence, manifest []byte) error {
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		return fmt.Errorf("stored spec: %w", err)
	}
	doc := map[string]json.RawMessage{"evidence": evidence}
	if len(bytes.TrimSpace(manifest)) > 0 {
		doc["manifest"] = manifest
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("the executor's evidence is not JSON: %w", err)
	}
	up, err := contract.DecodeResultUpload(bytes.NewReader(raw), spec.Limits.Manifest())
	if err != nil {
		return h.refuseFetchedResult(ctx, sess, a, err)
	}
	first, err := h.RecordResult(ctx, a.ID, up)
	if err != nil {
		return err
	}
	if first {
		zerolog.Ctx(ctx).Info().Str("outcome", string(up.Evidence.Outcome)).Msg("result taken from the executor")
		h.Wake()
	}
	return nil
}

// RunLink is where the session's current attempt runs, when the executor
// gives it a link (a Buildkite build). Best effort: a store error shows
// no link rather than failing the sync.
func (h *Handler) RunLink(ctx context.Context, sess store.Session) render.RunLink {
	if sess.AttemptID == "" {
		return render.RunLink{}
	}
	a, err := h.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || !IsWebURL(a.ExternalID) {
		return render.RunLink{}
	}
	return render.RunLink{URL: a.ExternalID, State: a.ExternalState, Attempt: a.Number}
}
