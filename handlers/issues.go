package handlers

import (
	"context"

	json "github.com/goccy/go-json"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Issues handles `issues`: a label added to an issue asks for a session, and
// the label removed cancels it. Which label triggers is the repo config's
// choice, so every label is handed on and the sink matches it against the
// cached config.
type Issues struct {
	Sink Sink
	Self func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *Issues) Handles() []string { return []string{"issues"} }

// Handle implements githubapp.EventHandler.
func (h *Issues) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev issuesPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	var kind session.TriggerKind
	var sub policy.Subcommand
	switch ev.Action {
	case "labeled":
		kind, sub = session.KindLabel, policy.Run
	case "unlabeled":
		kind, sub = session.KindUnlabel, policy.Cancel
	default:
		return nil
	}
	sender := ev.Sender.sender()
	if policy.IsOwnApp(sender.Login, sender.Type, h.Self().AppSlug) {
		return nil
	}
	// GitHub sends `issues` for issues only, but a pull request is an issue
	// too in its API; labels on pull requests are not a trigger.
	if ev.Issue.PullRequest != nil {
		return nil
	}
	t := session.Trigger{
		DeliveryID:     deliveryID,
		Event:          eventType,
		Kind:           kind,
		Repo:           ev.Repository.repo(),
		InstallationID: ev.Installation.ID,
		Number:         ev.Issue.Number,
		IsPR:           false,
		Sender:         sender,
		Command:        policy.Parsed{Kind: policy.Command, Sub: sub},
		Label:          ev.Label.Name,
		IssueTitle:     ev.Issue.Title,
	}
	if err := validateTrigger(t); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Info().Str("kind", string(kind)).Str("repo", t.Repo.FullName()).Int("number", t.Number).
		Str("label", t.Label).Str("sender", sender.Login).Str("subcommand", string(sub)).Msg("label trigger received")
	return h.Sink.AcceptTrigger(ctx, t)
}
