package handlers

import (
	"context"

	json "github.com/goccy/go-json"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// CheckSuite handles `check_suite`: another app's failing suite is a repair
// candidate. The suite names no check; the worker lists its runs to match
// the repo config's check patterns.
type CheckSuite struct {
	Sink Sink
	Self func() Identity
}

// Handles implements githubapp.EventHandler.
func (h *CheckSuite) Handles() []string { return []string{"check_suite"} }

// Handle implements githubapp.EventHandler.
func (h *CheckSuite) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var ev checkSuitePayload
	if err := json.Unmarshal(payload, &ev); err != nil {
		return &PayloadError{Err: err}
	}
	cs := ev.CheckSuite
	if ev.Action != "completed" {
		return nil
	}
	if counts, _ := policy.CountsAsFailure(policy.CheckFacts{Source: policy.SourceCheckSuite, Result: cs.Conclusion,
		AppID: cs.App.ID, AppSlug: cs.App.Slug}, h.Self().policy()); !counts {
		return nil
	}
	return acceptFailure(ctx, h.Sink, session.CheckFailure{
		DeliveryID:     deliveryID,
		Event:          eventType,
		Repo:           ev.Repository.repo(),
		InstallationID: ev.Installation.ID,
		HeadSHA:        cs.HeadSHA,
		CheckSuiteID:   cs.ID,
		AppSlug:        cs.App.Slug,
		Conclusion:     cs.Conclusion,
		PullRequests:   pullRefs(cs.PullRequests),
		Sender:         ev.Sender.sender(),
	})
}
