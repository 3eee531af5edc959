// Package ghsync is the sync_session work's handler: it brings GitHub in
// line with a session as stored, the one place that does (Prow's crier
// plays this part for jobs). Every transition queues a sync_session item
// in its own transaction; the Handler then updates the check run (status,
// conclusion, buttons), edits the progress comment, posts the one final
// reply, moves the labels of a label session and annotates the executor's
// run. The engine (package app) wires it with what it needs and nothing
// more (decision 0049).
package ghsync

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// ActionRetry is the identifier of the check run's one button (a
// requested action), which handlers.CheckRun maps back to the retry
// command.
const ActionRetry = "retry"

// Handler runs sync_session work. Its fields are all it reaches of the
// engine.
type Handler struct {
	// Store reads the session and its attempt.
	Store Store
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// Now is the engine's clock (a concluded check run's completion).
	Now func() time.Time
	// Thread is the session's conversation on GitHub (its review thread,
	// when it came from one).
	Thread func(c *github.Client, sess store.Session) ghwrite.Thread
	// RunLink is where the session's current attempt runs, when the
	// executor gives it a link.
	RunLink func(ctx context.Context, sess store.Session) render.RunLink
	// SignInHint is the dashboard's sign-in link for the requester, or "".
	SignInHint func(ctx context.Context, sess store.Session) string
	// Runs annotates the executor's runs; nil when the executor cannot.
	Runs RunAnnotator
	// CommandWord is the server's command word (/inspect).
	CommandWord string
	// CheckRunName is the name of Inspect's check run.
	CheckRunName string
	// Cost prices a session's tokens of a model (config.Server.ModelCost);
	// nil prices nothing.
	Cost func(model string, u contract.TokenUsage) (float64, bool)
	// SessionURL is the session's page, nil without web.public_url; nil
	// itself links nothing.
	SessionURL func(id string) *string
	// Provenance is the session's attempt's provenance link and the
	// keys' URL ("", "" when it has none; decision 0078); nil links
	// nothing.
	Provenance func(ctx context.Context, sess store.Session) (url, keysURL string)
}

// Store is what the handler reads of the store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	SessionUsage(ctx context.Context, attemptID string) (store.Usage, error)
}

// RunAnnotator writes the session's outcome onto the executor's run (a
// Buildkite build's annotation); runner.RunAnnotator is one.
type RunAnnotator interface {
	Annotate(ctx context.Context, externalID, style, body string) error
}

// Handle brings GitHub in line with a session's stored state: the check
// run, and the progress comment, or one final reply when there is none.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	sess, err := h.Store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	c, err := h.Installation(ctx, sess.InstallationID)
	if err != nil {
		return err
	}
	// Each update is tried whatever became of the others: a check run
	// GitHub refuses must not keep the requester from reading the outcome
	// in the comment, nor the reverse. The errors come back together, so
	// the work item is retried (every update is idempotent).
	var errs []error
	if sess.CheckRunID != 0 && sess.State() == session.Running {
		title, summary := render.RunningCheckRun(sess)
		errs = append(errs, ghwrite.StartCheckRun(ctx, c.Checks, sess.RepoOwner, sess.RepoName, sess.CheckRunID, github.UpdateCheckRunOptions{
			Name:    h.CheckRunName,
			Output:  &github.CheckRunOutput{Title: github.String(title), Summary: github.String(summary)},
			Actions: CheckActions(sess),
		}))
	}
	if sess.CheckRunID != 0 && sess.State() == session.Done {
		ev, x := h.evidence(ctx, sess)
		title, summary := render.DoneCheckRun(sess, ev, x)
		errs = append(errs, ghwrite.ConcludeCheckRun(ctx, c.Checks, sess.RepoOwner, sess.RepoName, sess.CheckRunID, github.UpdateCheckRunOptions{
			Name: h.CheckRunName,
			// The verdict's conclusion of the stored outcome and reason
			// (decision 0081): the one the report decided, whichever sync
			// draws it, with or without the evidence at hand.
			Conclusion:  github.String(verdict.Conclusion(sess.Outcome, sess.Reason)),
			CompletedAt: &github.Timestamp{Time: h.Now()},
			Output: &github.CheckRunOutput{
				Title:   github.String(title),
				Summary: github.String(summary),
			},
			Actions: CheckActions(sess),
		}))
	}
	if sess.State() == session.Done {
		h.annotateRun(ctx, sess)
	}
	errs = append(errs, h.syncComment(ctx, c, sess))
	if sess.State() == session.Done {
		// After the comment: a label GitHub refuses must not keep the
		// requester from reading the outcome.
		errs = append(errs, h.syncLabels(ctx, c, sess))
	}
	return errors.Join(errs...)
}

// syncComment edits the progress comment to the session's state, or posts
// the one final reply of a session that has none.
func (h *Handler) syncComment(ctx context.Context, c *github.Client, sess store.Session) error {
	if !sess.Target().HasThread() {
		// A branch has no thread: its session's page and check run are
		// where it answers, even to say it failed (decision 0009).
		return nil
	}
	run := h.RunLink(ctx, sess)
	th := h.Thread(c, sess)
	progressID := sess.ProgressCommentID
	if progressID == 0 {
		// An attempt may have posted it and died before recording it.
		var err error
		if progressID, err = th.Find(ctx, render.SessionMarker(sess.ID)); err != nil {
			return err
		}
	}
	if progressID != 0 {
		origin := render.OriginOf(sess)
		origin.SignIn = h.SignInHint(ctx, sess)
		return th.Edit(ctx, progressID, render.SessionMarker(sess.ID), render.ProgressBody(sess, origin, h.CommandWord, run))
	}
	if sess.State() == session.Done && sess.Detail != "" && sess.Outcome != session.Cancelled {
		// A cancelled session's news is the cancel command's own reply.
		_, err := th.PostOnce(ctx, render.FinalMarker(sess.ID), sess.Detail, true)
		return err
	}
	return nil
}

// CheckActions are the buttons the session's check run offers. GitHub
// displays a run's actions only once it has completed (and sends
// requested_action only for a displayed one), so an active session offers
// none: it is cancelled with the cancel command, which the progress
// comment names (decision 0033). A done one offers Retry, unless it was
// refused: its request came from someone who may not run Inspect.
func CheckActions(sess store.Session) []*github.CheckRunAction {
	if sess.Active() || sess.Outcome == session.Refused {
		return nil
	}
	b := render.RetryButton()
	return []*github.CheckRunAction{{Label: b.Label, Description: b.Description, Identifier: ActionRetry}}
}

// syncLabels shows a label session's end on its issue: the trigger label
// comes off (so adding it again starts a new session) and an outcome label
// goes on, replacing the other one. A refusal changes no label (it is one
// reply and nothing else), and neither does a cancel: someone stopped it on
// purpose, by taking the label off or otherwise. Each call is idempotent,
// so a replayed sync repeats nothing visible.
func (h *Handler) syncLabels(ctx context.Context, c *github.Client, sess store.Session) error {
	ti := sess.Info()
	if ti.Label == "" || sess.Outcome == session.Refused || sess.Outcome == session.Cancelled {
		return nil
	}
	outcome, other := config.OutcomeLabelFailed, config.OutcomeLabelDone
	if sess.Outcome == session.Changed || sess.Outcome == session.NoChange {
		outcome, other = other, outcome
	}
	return ghwrite.SyncLabels(ctx, ghwrite.DocumentedLabels{Client: c}, sess.RepoOwner, sess.RepoName, sess.Number, []string{ti.Label, other}, outcome)
}

// evidence is the session's last attempt's evidence as the upload carried
// it, with the model proxy's counts of the session as its usage (the
// supervisor's word is never its usage), and the Extras of the check run's
// summary: its cost and its page. The cost is there without an upload too
// (a session a budget stopped spent money). A nil evidence when there is
// none or it cannot be read; the summary then goes without what it says.
func (h *Handler) evidence(ctx context.Context, sess store.Session) (*contract.Evidence, render.Extras) {
	url := ""
	if h.SessionURL != nil {
		if u := h.SessionURL(sess.ID); u != nil {
			url = *u
		}
	}
	x := render.Extras{SessionURL: url}
	if sess.AttemptID == "" {
		return nil, x
	}
	a, err := h.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil {
		return nil, x
	}
	var usage *contract.TokenUsage
	if used, err := h.Store.SessionUsage(ctx, a.ID); err == nil && used.Requests > 0 {
		tokens := used.Tokens()
		usage = &tokens
	}
	var spec struct {
		Agent struct {
			Model string `json:"model"`
		} `json:"agent"`
	}
	if json.Unmarshal([]byte(a.Spec), &spec) == nil {
		x = render.ExtrasOf(h.Cost, spec.Agent.Model, usage, url)
	}
	if h.Provenance != nil {
		x.ProvenanceURL, x.KeysURL = h.Provenance(ctx, sess)
	}
	if a.Result == "" {
		return nil, x
	}
	var up struct {
		Evidence contract.Evidence `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("reading the evidence for the check run")
		return nil, x
	}
	up.Evidence.Usage = usage
	return &up.Evidence, x
}

// annotateRun writes the session's outcome onto its run (a Buildkite
// build's annotation), so people who look at the build see what came of
// it. Best effort: the session has ended whatever this does.
func (h *Handler) annotateRun(ctx context.Context, sess store.Session) {
	if h.Runs == nil || sess.State() != session.Done || sess.AttemptID == "" {
		return
	}
	a, err := h.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.ExternalID == "" {
		return
	}
	style := "info"
	switch verdict.Conclusion(sess.Outcome, sess.Reason) {
	case "success":
		style = "success"
	case "failure", "timed_out":
		style = "error"
	case "action_required":
		style = "warning"
	}
	if err := h.Runs.Annotate(ctx, a.ExternalID, style, render.RunAnnotation(sess)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("session_id", sess.ID).Msg("annotating the run failed")
	}
}
