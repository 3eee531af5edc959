package handlers

import (
	"context"

	json "github.com/goccy/go-json"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// CheckRun handles `check_run`: another app's failing check run is a
// repair candidate, and the buttons on Inspect's own check runs (Re-run,
// and the requested actions "retry" and "cancel") retry or cancel the
// session the run reports.
type CheckRun struct {
	Sink Sink
	Self func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *CheckRun) Handles() []string { return []string{"check_run"} }

// Handle implements githubapp.EventHandler.
func (h *CheckRun) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev checkRunPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	self := h.Self()
	cr := ev.CheckRun
	switch ev.Action {
	case "completed":
		if counts, _ := policy.CountsAsFailure(policy.CheckFacts{Source: policy.SourceCheckRun, Result: cr.Conclusion,
			AppID: cr.App.ID, AppSlug: cr.App.Slug}, self.policy()); !counts {
			return nil
		}
		return acceptFailure(ctx, h.Sink, session.CheckFailure{
			DeliveryID:     deliveryID,
			Event:          eventType,
			Repo:           ev.Repository.repo(),
			InstallationID: ev.Installation.ID,
			HeadSHA:        cr.HeadSHA,
			Name:           cr.Name,
			CheckRunID:     cr.ID,
			CheckSuiteID:   cr.CheckSuite.ID,
			AppSlug:        cr.App.Slug,
			Conclusion:     cr.Conclusion,
			PullRequests:   pullRefs(cr.PullRequests),
			Sender:         ev.Sender.sender(),
		})
	case "requested_action", "rerequested":
	default:
		return nil
	}

	// A button on a check run: only ours carry a session.
	sender := ev.Sender.sender()
	if !policy.OwnCheck(cr.App.ID, cr.App.Slug, self.AppID, self.AppSlug) || policy.IsOwnApp(sender.Login, sender.Type, self.AppSlug) || cr.ExternalID == "" {
		return nil
	}
	var sub policy.Subcommand
	switch {
	case ev.Action == "rerequested":
		sub = policy.Retry
	case ev.RequestedAction.Identifier == "retry":
		// The one button: GitHub displays a run's actions only once it
		// has completed, so a Cancel button would never be seen (decision
		// 0033); cancelling is `/inspect cancel`.
		sub = policy.Retry
	default:
		return nil
	}
	number := 0
	if len(cr.PullRequests) > 0 {
		number = cr.PullRequests[0].Number
	}
	t := session.Trigger{
		DeliveryID:     deliveryID,
		Event:          eventType,
		Kind:           session.KindCheckAction,
		Repo:           ev.Repository.repo(),
		InstallationID: ev.Installation.ID,
		Number:         number,
		IsPR:           true,
		Sender:         sender,
		Command:        policy.Parsed{Kind: policy.Command, Sub: sub},
		SessionID:      cr.ExternalID,
	}
	if err := validateTrigger(t); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("session_id", t.SessionID).Int64("check_run_id", cr.ID).Str("repo", t.Repo.FullName()).
		Int("number", t.Number).Str("sender", sender.Login).Str("subcommand", string(sub)).Msg("check run action received")
	return h.Sink.AcceptTrigger(ctx, t)
}

// acceptFailure validates f, logs it and hands it to the sink.
func acceptFailure(ctx context.Context, sink Sink, f session.CheckFailure) error {
	if err := validateFailure(f); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("event", f.Event).Str("repo", f.Repo.FullName()).Str("head_sha", f.HeadSHA).
		Str("name", f.Name).Str("app", f.AppSlug).Str("conclusion", f.Conclusion).Int("pull_requests", len(f.PullRequests)).
		Msg("check failure received")
	return sink.AcceptCheckFailure(ctx, f)
}

// validateFailure checks that f names the repository, installation, commit and
// delivery.
func validateFailure(f session.CheckFailure) error {
	switch {
	case f.Repo.ID == 0 || f.Repo.Owner == "" || f.Repo.Name == "":
		return payloadErrorf("repository is missing")
	case f.InstallationID == 0:
		return payloadErrorf("installation is missing: is this delivery from the GitHub App?")
	case f.HeadSHA == "":
		return payloadErrorf("head sha is missing")
	case f.DeliveryID == "":
		return payloadErrorf("X-GitHub-Delivery header is missing")
	}
	return nil
}
