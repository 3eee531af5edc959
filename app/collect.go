package app

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

func isNoResult(err error) bool { return errors.Is(err, runner.ErrNoResult) }

// isWebURL says whether an executor's id for a run is a link to show
// (a Buildkite build's is its web URL).
func isWebURL(externalID string) bool {
	u, err := url.Parse(externalID)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// collectResult is the CollectResult work item: a webhook said the run
// finished.
func (s *Service) collectResult(ctx context.Context, w *store.Work) error {
	return s.collect(ctx, w.SessionID, w.Payload, runner.AttemptState{Status: runner.StatusExited, ExitCode: -1})
}

// collect takes a finished run's result from the executor when the
// supervisor's upload has not arrived. store.RecordResult accepts one
// result per attempt, so the upload and this path can race harmlessly.
func (s *Service) collect(ctx context.Context, sessionID, attemptID string, st runner.AttemptState) error {
	sess, err := s.store.GetSession(ctx, sessionID)
	if err != nil {
		return err
	}
	a, err := s.store.GetAttempt(ctx, attemptID)
	if err != nil {
		return err
	}
	if sess.State() == session.Done || sess.AttemptID != a.ID || a.State == store.AttemptEnded {
		return nil // reported, ended, or superseded meanwhile
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", a.ID).Logger()
	fetcher, ok := s.executor.(runner.ResultFetcher)
	if ok && a.State == store.AttemptRunning {
		evidence, manifest, err := fetcher.FetchResult(ctx, a.ExternalID)
		switch {
		case err == nil:
			return s.recordFetchedResult(log.WithContext(ctx), sess, a, evidence, manifest)
		case errors.Is(err, runner.ErrResultTooLarge):
			return s.refuseFetchedResult(ctx, sess, a, err)
		case !isNoResult(err):
			return fmt.Errorf("reading the attempt's result from the executor: %w", err)
		}
	}
	log.Warn().Str("status", string(st.Status)).Int("exit_code", st.ExitCode).Str("attempt_state", string(a.State)).
		Msg("runner ended without a result")
	logURL := ""
	if isWebURL(a.ExternalID) {
		logURL = a.ExternalID
	}
	reply := render.RunnerLostReply(sess.RequesterLogin, logURL, a.State == store.AttemptStarted, s.cfg.CommandWord)
	return s.transitions.EndRun(ctx, sess.ID, a.ID, session.Errored, "runner_lost", reply)
}

// refuseFetchedResult ends a session whose run left a result that fails
// the checks an upload gets (or is too large to read): as a bad upload is
// refused, it cannot be trusted.
func (s *Service) refuseFetchedResult(ctx context.Context, sess store.Session, a store.Attempt, why error) error {
	zerolog.Ctx(ctx).Warn().Err(why).Msg("the executor's result is invalid")
	return s.transitions.EndRun(ctx, sess.ID, a.ID, session.Errored, "runner_lost", render.ResultRefusedReply(sess.RequesterLogin, s.cfg.CommandWord))
}

// recordFetchedResult checks a result read from the executor exactly as an
// upload over the channel is checked, then records it.
func (s *Service) recordFetchedResult(ctx context.Context, sess store.Session, a store.Attempt, evidence, manifest []byte) error {
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
		return s.refuseFetchedResult(ctx, sess, a, err)
	}
	first, err := s.recordResult(ctx, a.ID, up)
	if err != nil {
		return err
	}
	if first {
		zerolog.Ctx(ctx).Info().Str("outcome", string(up.Evidence.Outcome)).Msg("result taken from the executor")
		s.wakeWorkers()
	}
	return nil
}

// runOf is where the session's current attempt runs, when the executor
// gives it a link (a Buildkite build). Best effort: a store error shows
// no link rather than failing the sync.
func (s *Service) runOf(ctx context.Context, sess store.Session) render.RunLink {
	if sess.AttemptID == "" {
		return render.RunLink{}
	}
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || !isWebURL(a.ExternalID) {
		return render.RunLink{}
	}
	return render.RunLink{URL: a.ExternalID, State: a.ExternalState, Attempt: a.Number}
}
