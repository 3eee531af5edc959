package handlers

import (
	"context"
	"fmt"

	json "github.com/goccy/go-json"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// IssueComment handles `issue_comment`: commands in comments on issues and
// pull requests.
type IssueComment struct {
	Sink Sink
	// Fates, when set, hears of humans' comments on pull requests (the
	// review a PR Inspect opened cost).
	Fates       FateSink
	CommandWord string
	Self        func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *IssueComment) Handles() []string { return []string{"issue_comment"} }

// Handle implements githubapp.EventHandler.
func (h *IssueComment) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev issueCommentPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	log := zerolog.Ctx(ctx)
	// Only newly created comments count: an edit must not re-trigger, or
	// editing a typo would start a second session.
	if ev.Action != "created" {
		return nil
	}
	self := h.Self()
	sender := session.Sender{Login: ev.Sender.Login, ID: ev.Sender.ID, Type: ev.Sender.Type}
	if policy.IsOwnApp(sender.Login, sender.Type, self.AppSlug) ||
		(self.AppID != 0 && ev.Comment.PerformedViaGithubApp != nil && ev.Comment.PerformedViaGithubApp.ID == self.AppID) {
		return nil
	}
	if ev.Issue.PullRequest != nil && ev.Comment.PerformedViaGithubApp == nil && sender.Type != "Bot" {
		if err := acceptNews(ctx, h.Fates, h.Self, session.PullRequestNews{DeliveryID: deliveryID, Kind: session.NewsThreadComment,
			Repo: ev.Repository.repo(), InstallationID: ev.Installation.ID, Number: ev.Issue.Number,
			At: firstTime(ev.Comment.CreatedAt), Actor: sender, ItemID: ev.Comment.ID}); err != nil {
			return err
		}
	}
	parsed := policy.Parse(ev.Comment.Body, h.CommandWord)
	if parsed.Kind == policy.Ignore {
		return nil
	}
	t := session.Trigger{
		DeliveryID: deliveryID,
		Event:      eventType,
		Repo: session.Repo{
			ID:            ev.Repository.ID,
			Owner:         ev.Repository.Owner.Login,
			Name:          ev.Repository.Name,
			DefaultBranch: ev.Repository.DefaultBranch,
		},
		InstallationID: ev.Installation.ID,
		Number:         ev.Issue.Number,
		IsPR:           ev.Issue.PullRequest != nil,
		CommentID:      ev.Comment.ID,
		Sender:         sender,
		Command:        parsed,
	}
	if err := validateTrigger(t); err != nil {
		return err
	}
	log.Info().Int64("comment_id", t.CommentID).Str("repo", t.Repo.FullName()).Int("number", t.Number).
		Str("sender", sender.Login).Str("subcommand", string(parsed.Sub)).Msg("command received")
	return h.Sink.AcceptTrigger(ctx, t)
}

// validateTrigger checks that t has what its Kind needs. The comment kinds need
// the issue or pull request and the comment; labels need the issue and the
// label; a check-run button needs the session (its pull request may be
// unknown).
func validateTrigger(t session.Trigger) error {
	switch {
	case t.Repo.ID == 0 || t.Repo.Owner == "" || t.Repo.Name == "":
		return payloadErrorf("repository is missing")
	case t.InstallationID == 0:
		return payloadErrorf("installation is missing: is this delivery from the GitHub App?")
	}
	switch t.Kind {
	case session.KindComment:
		if t.Number == 0 {
			return payloadErrorf("issue number is missing")
		}
		if t.CommentID == 0 {
			return payloadErrorf("comment id is missing")
		}
	case session.KindReviewComment:
		if t.Number == 0 {
			return payloadErrorf("pull request number is missing")
		}
		if t.CommentID == 0 {
			return payloadErrorf("comment id is missing")
		}
	case session.KindLabel, session.KindUnlabel:
		if t.Number == 0 {
			return payloadErrorf("issue number is missing")
		}
		if t.Label == "" {
			return payloadErrorf("label name is missing")
		}
	case session.KindDashboard:
		if t.Number == 0 {
			return payloadErrorf("issue or pull request number is missing")
		}
	case session.KindCheckAction:
		if t.SessionID == "" {
			return payloadErrorf("check run external_id (the session id) is missing")
		}
	default:
		// A handler bug, not the payload's fault.
		return fmt.Errorf("handlers: trigger of unknown kind %q", t.Kind)
	}
	switch {
	case t.Sender.Login == "":
		return payloadErrorf("sender is missing")
	case t.DeliveryID == "":
		return payloadErrorf("X-GitHub-Delivery header is missing")
	}
	return nil
}
