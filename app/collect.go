package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/contract"
)

// What the app asks of an executor beyond Start and Cancel. Each is
// optional: runner/local has State only; runner/buildkite has all four.
type (
	// stateReporter says where an attempt is.
	stateReporter interface {
		State(ctx context.Context, externalID string) (runner.AttemptState, error)
	}
	// attemptFinder finds an attempt's run by the session and attempt
	// number it was started with, so a replayed dispatch adopts a run that
	// started rather than making a second one.
	attemptFinder interface {
		Find(ctx context.Context, sessionID string, number int) (externalID string, found bool, err error)
	}
	// resultFetcher reads a finished attempt's evidence and manifest from
	// the executor's own storage (a Buildkite build's artifacts): the slow
	// path, for when the supervisor's upload never arrived.
	resultFetcher interface {
		FetchResult(ctx context.Context, externalID string) (evidence, manifest []byte, err error)
	}
	// runAnnotator writes the session's outcome onto the executor's run
	// (a Buildkite build's annotation).
	runAnnotator interface {
		Annotate(ctx context.Context, externalID, style, body string) error
	}
)

func isNoResult(err error) bool { return errors.Is(err, runner.ErrNoResult) }

// isWebURL says whether an executor's id for a run is a link to show
// (a Buildkite build's is its web URL).
func isWebURL(externalID string) bool {
	u, err := url.Parse(externalID)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// minRedispatchTime is the least time before the deadline for which a lost
// attempt is re-dispatched: less cannot fetch, run and report.
const minRedispatchTime = 2 * time.Minute

// executorChecks rate-limits how often reconcile asks the executor about
// every unfinished attempt: each question is an API call on Buildkite.
type executorChecks struct {
	mu   sync.Mutex
	last time.Time
}

func (s *Service) executorCheckDue() bool {
	s.checks.mu.Lock()
	defer s.checks.mu.Unlock()
	now := s.clock.Now()
	if !s.checks.last.IsZero() && now.Sub(s.checks.last) < s.executorCheckInterval() {
		return false
	}
	s.checks.last = now
	return true
}

// executorCheckInterval is buildkite.reconcile_interval on Buildkite;
// asking the local executor costs nothing, so it is asked every time.
func (s *Service) executorCheckInterval() time.Duration {
	if s.cfg.Executor.Kind == "buildkite" {
		return s.cfg.Buildkite.ReconcileInterval
	}
	return 0
}

// reconcileAttempts asks the executor about sessions whose attempt has not
// reported. A run that finished without uploading has its result read from
// the executor (or the session ends `runner_lost`); a run the executor lost
// is re-dispatched once while the deadline allows, and otherwise left for
// the deadline to end.
func (s *Service) reconcileAttempts(ctx context.Context) error {
	states, ok := s.executor.(stateReporter)
	if !ok || !s.executorCheckDue() {
		return nil
	}
	active, err := s.store.SessionsRunning(ctx, 100)
	if err != nil {
		return err
	}
	for _, sess := range active {
		a, err := s.store.GetAttempt(ctx, sess.AttemptID)
		if err != nil || a.State == store.AttemptEnded {
			continue // its result is being reported
		}
		if a.ExternalID == "" {
			// Started, but the start was not recorded (the executor's
			// answer was lost, or the app stopped): find the run.
			if _, err := s.adoptRun(ctx, a); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Str("session_id", sess.ID).Str("attempt_id", a.ID).Msg("looking for the attempt's run failed")
			}
			continue
		}
		st, err := states.State(ctx, a.ExternalID)
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("session_id", sess.ID).Str("attempt_id", a.ID).Msg("asking the executor about an attempt failed")
			continue
		}
		switch st.Status {
		case runner.StatusExited:
			if err := s.collect(ctx, sess.ID, a.ID, st); err != nil {
				return err
			}
		case runner.StatusLost:
			if err := s.redispatch(ctx, sess, a); err != nil {
				return err
			}
		}
	}
	return nil
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
	if sess.State == store.Done || sess.AttemptID != a.ID || a.State == store.AttemptEnded {
		return nil // reported, ended, or superseded meanwhile
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", a.ID).Logger()
	fetcher, ok := s.executor.(resultFetcher)
	if ok && a.State == store.AttemptRunning {
		evidence, manifest, err := fetcher.FetchResult(ctx, a.ExternalID)
		switch {
		case err == nil:
			return s.recordFetchedResult(log.WithContext(ctx), sess, a, evidence, manifest)
		case !isNoResult(err):
			return fmt.Errorf("reading the attempt's result from the executor: %w", err)
		}
	}
	log.Warn().Str("status", string(st.Status)).Int("exit_code", st.ExitCode).Str("attempt_state", string(a.State)).
		Msg("runner ended without a result")
	where := ""
	if isWebURL(a.ExternalID) {
		where = fmt.Sprintf(" Its log is at %s.", a.ExternalID)
	}
	if a.State == store.AttemptStarted {
		where = " It never reached Inspect (is `inspect` installed on the agent, and can it reach the app's URL?)." + where
	}
	reply := fmt.Sprintf("⚠️ @%s, the session's runner stopped without reporting a result, so nothing was pushed.%s "+
		"You can try again with `%s retry`.", sess.RequesterLogin, where, s.cfg.CommandWord)
	if err := s.end(ctx, sess.ID, store.Errored, "runner_lost", reply); err != nil {
		return err
	}
	s.stopAttempt(ctx, a.ID)
	return nil
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
		// As a bad upload is refused: the run's result cannot be trusted.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("the executor's result is invalid")
		if err := s.end(ctx, sess.ID, store.Errored, "runner_lost", fmt.Sprintf(
			"⚠️ @%s, the session's runner left a result Inspect could not accept, so nothing was pushed. You can try again with `%s retry`.",
			sess.RequesterLogin, s.cfg.CommandWord)); err != nil {
			return err
		}
		s.stopAttempt(ctx, a.ID)
		return nil
	}
	body, err := json.Marshal(up)
	if err != nil {
		return err
	}
	first, err := s.store.RecordResult(ctx, a.ID, string(body), s.clock.Now())
	if err != nil {
		return err
	}
	if first {
		zerolog.Ctx(ctx).Info().Str("outcome", string(up.Evidence.Outcome)).Msg("result taken from the executor")
		s.wakeWorkers()
	}
	return nil
}

// redispatch replaces an attempt the executor lost with a new one, once
// per session and only while the deadline leaves time to run; otherwise
// the session waits for its deadline, where reconcile ends it timed_out
// (the run may only be out of sight, and a deadline is what was promised).
func (s *Service) redispatch(ctx context.Context, sess store.Session, a store.Attempt) error {
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", a.ID).Logger()
	if a.Number >= 2 || sess.Deadline.Sub(s.clock.Now()) < minRedispatchTime {
		log.Warn().Int("number", a.Number).Msg("attempt lost; not re-dispatched, the deadline will end the session")
		return nil
	}
	log.Warn().Msg("attempt lost; re-dispatching it")
	s.stopAttempt(ctx, a.ID)
	_, err := s.store.MutateSession(ctx, sess.ID, s.clock.Now(), func(x *store.Session) error {
		if x.State != store.Dispatched && x.State != store.Running || x.AttemptID != a.ID {
			return errAlreadyDone
		}
		x.State = store.Preparing
		return nil
	}, store.NewWork{Kind: store.SyncSession}, store.NewWork{Kind: store.DispatchSession})
	if errors.Is(err, errAlreadyDone) {
		return nil
	}
	if err == nil {
		s.wakeWorkers()
	}
	return err
}

// runOf is where the session's current attempt runs, when the executor
// gives it a link (a Buildkite build). Best effort: a store error shows
// no link rather than failing the sync.
func (s *Service) runOf(ctx context.Context, sess store.Session) runLink {
	if sess.AttemptID == "" {
		return runLink{}
	}
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || !isWebURL(a.ExternalID) {
		return runLink{}
	}
	label := "build"
	if a.ExternalState != "" {
		label += " (" + a.ExternalState + ")"
	}
	if a.Number > 1 {
		label += fmt.Sprintf(", attempt %d", a.Number)
	}
	return runLink{URL: a.ExternalID, State: label}
}

// annotateRun writes the session's outcome onto its run (a Buildkite
// build's annotation), so people who look at the build see what came of
// it. Best effort: the session has ended whatever this does.
func (s *Service) annotateRun(ctx context.Context, sess store.Session) {
	ann, ok := s.executor.(runAnnotator)
	if !ok || sess.State != store.Done || sess.AttemptID == "" {
		return
	}
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.ExternalID == "" {
		return
	}
	style := "info"
	switch checkConclusion(sess.Outcome) {
	case "success":
		style = "success"
	case "failure", "timed_out":
		style = "error"
	case "action_required":
		style = "warning"
	}
	body := fmt.Sprintf("**Inspect** session `%s` for @%s: **%s**\n\n%s", sess.ID, sess.RequesterLogin, sess.Outcome, sess.Detail)
	if err := ann.Annotate(ctx, a.ExternalID, style, body); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("session_id", sess.ID).Msg("annotating the run failed")
	}
}

// targetChecks rate-limits reconcileTargets, one GitHub read per active
// session per interval.
type targetChecks struct {
	mu   sync.Mutex
	last time.Time
}

// reconcileTargets cancels active sessions whose target went away: a pull
// request that was closed (or merged), or a repository the installation can
// no longer read (removed from it, or deleted). Their results would have
// nowhere to go. It runs every buildkite.reconcile_interval, whatever the
// executor: the check is about GitHub, not about where sessions run.
func (s *Service) reconcileTargets(ctx context.Context) error {
	s.targets.mu.Lock()
	now := s.clock.Now()
	due := s.targets.last.IsZero() || now.Sub(s.targets.last) >= s.cfg.Buildkite.ReconcileInterval
	if due {
		s.targets.last = now
	}
	s.targets.mu.Unlock()
	if !due {
		return nil
	}
	active, err := s.store.SessionsRunning(ctx, 100)
	if err != nil {
		return err
	}
	for _, sess := range active {
		why, err := s.targetGone(ctx, sess)
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("session_id", sess.ID).Msg("checking the session's target failed")
			continue
		}
		if why == "" {
			continue
		}
		zerolog.Ctx(ctx).Info().Str("session_id", sess.ID).Str("reason", why).Msg("target gone; cancelling the session")
		reply := "The pull request was closed, so Inspect cancelled the session. Nothing was pushed."
		if why == "repo_removed" {
			reply = "Inspect can no longer reach this repository, so it cancelled the session. Nothing was pushed."
		}
		if err := s.end(ctx, sess.ID, store.Cancelled, why, reply); err != nil {
			return err
		}
		s.stopAttempt(ctx, sess.AttemptID)
	}
	return nil
}

// targetGone says why a session's target is gone ("pr_closed",
// "repo_removed"), or "" when it is still there.
func (s *Service) targetGone(ctx context.Context, sess store.Session) (string, error) {
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return "", err
	}
	var resp *github.Response
	if sess.IsPR {
		var pr *github.PullRequest
		pr, resp, err = c.PullRequests.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number)
		if err == nil && pr.GetState() == "closed" {
			return "pr_closed", nil
		}
	} else {
		_, resp, err = c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
	}
	if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden) {
		return "repo_removed", nil
	}
	if err != nil {
		return "", err
	}
	return "", nil
}
