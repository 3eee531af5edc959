package handlers

import (
	"context"

	json "github.com/goccy/go-json"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Status handles `status`: a failing or erroring commit status (from a CI
// system that does not use checks) is a repair candidate. Status payloads
// name no pull request; the worker finds it from the commit.
type Status struct {
	Sink Sink
	Self func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *Status) Handles() []string { return []string{"status"} }

// Handle implements githubapp.EventHandler.
func (h *Status) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev statusPayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	// The sender of a status event is the status's creator: that is how a
	// status of our own bot's is known (policy.CountsAsFailure).
	sender := ev.Sender.sender()
	if counts, _ := policy.CountsAsFailure(policy.CheckFacts{Source: policy.SourceCommitStatus, Result: ev.State,
		CreatorLogin: sender.Login, CreatorType: sender.Type}, h.Self().policy()); !counts {
		return nil
	}
	return acceptFailure(ctx, h.Sink, session.CheckFailure{
		DeliveryID:     deliveryID,
		Event:          eventType,
		Repo:           ev.Repository.repo(),
		InstallationID: ev.Installation.ID,
		HeadSHA:        ev.SHA,
		Name:           ev.Context,
		Conclusion:     ev.State,
		Sender:         sender,
	})
}
