package handlers

import (
	"context"

	json "github.com/goccy/go-json"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// PullRequestReviewComment handles `pull_request_review_comment`: commands
// in review comments on a pull request's diff, which carry where in the
// diff they sit. (It is named after its event, like the other handlers;
// session.ReviewComment is that place in the diff.)
type PullRequestReviewComment struct {
	Sink Sink
	// Fates, when set, hears of humans' review comments.
	Fates       FateSink
	CommandWord string
	Self        func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *PullRequestReviewComment) Handles() []string { return []string{"pull_request_review_comment"} }

// Handle implements githubapp.EventHandler.
func (h *PullRequestReviewComment) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev reviewCommentPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	// As for issue comments, an edit must not re-trigger.
	if ev.Action != "created" {
		return nil
	}
	self := h.Self()
	sender := ev.Sender.sender()
	c := ev.Comment
	if policy.IsOwnApp(sender.Login, sender.Type, self.AppSlug) ||
		(self.AppID != 0 && c.PerformedViaGithubApp != nil && c.PerformedViaGithubApp.ID == self.AppID) {
		return nil
	}
	if c.PerformedViaGithubApp == nil && sender.Type != "Bot" {
		if err := acceptNews(ctx, h.Fates, h.Self, session.PullRequestNews{DeliveryID: deliveryID, Kind: session.NewsReviewComment,
			Repo: ev.Repository.repo(), InstallationID: ev.Installation.ID, Number: ev.PullRequest.Number,
			At: firstTime(c.CreatedAt), Actor: sender, ItemID: c.ID}); err != nil {
			return err
		}
	}
	parsed := policy.Parse(c.Body, h.CommandWord)
	if parsed.Kind == policy.Ignore {
		return nil
	}
	line := c.Line
	if line == nil {
		line = c.OriginalLine
	}
	t := session.Trigger{
		DeliveryID:     deliveryID,
		Event:          eventType,
		Kind:           session.KindReviewComment,
		Repo:           ev.Repository.repo(),
		InstallationID: ev.Installation.ID,
		Number:         ev.PullRequest.Number,
		IsPR:           true,
		CommentID:      c.ID,
		Sender:         sender,
		Command:        parsed,
		Review: &session.ReviewComment{
			Path:      c.Path,
			Line:      intOrZero(line),
			StartLine: intOrZero(c.StartLine),
			Side:      c.Side,
			DiffHunk:  c.DiffHunk,
			CommitID:  c.CommitID,
			InReplyTo: c.InReplyTo,
		},
	}
	if err := validateTrigger(t); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Info().Int64("comment_id", t.CommentID).Str("repo", t.Repo.FullName()).Int("number", t.Number).
		Str("path", c.Path).Str("sender", sender.Login).Str("subcommand", string(parsed.Sub)).Msg("review command received")
	return h.Sink.AcceptTrigger(ctx, t)
}

func intOrZero(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
