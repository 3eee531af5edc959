// Package handlers turns GitHub webhook payloads into Triggers, one file per
// event. Handlers decide from the payload and local state only: they never
// call the network during the request (ARCHITECTURE.md, "Accept").
package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/inspecthq/inspect/policy"
)

// Repo identifies a repository as the payload describes it.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	DefaultBranch string
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Sender is who caused the event.
type Sender struct {
	Login string
	ID    int64
	Type  string // "User", "Bot", "Organization"
}

// Trigger is a comment command, ready to be accepted.
type Trigger struct {
	DeliveryID     string
	Event          string
	Repo           Repo
	InstallationID int64
	Number         int
	IsPR           bool
	CommentID      int64
	Sender         Sender
	Command        policy.Parsed
}

// ConfigPush says a repo's config (or an owner's org-wide config) changed on
// its default branch.
type ConfigPush struct {
	DeliveryID     string
	Repo           Repo
	InstallationID int64
	// OrgWide is true when the push was to the owner's `.github` repository,
	// whose config is the fallback for every repo of that owner.
	OrgWide bool
}

// Sink accepts what handlers produce. The app implements it; it must
// persist durably before returning nil.
type Sink interface {
	AcceptTrigger(ctx context.Context, t Trigger) error
	AcceptConfigPush(ctx context.Context, p ConfigPush) error
	// DefaultBranchMoved says a repo's default branch got new commits, so
	// its snapshot may be rebuilt sooner. Best effort: an error is logged
	// by the sink, never failed back to GitHub.
	DefaultBranchMoved(ctx context.Context, repo Repo)
}

// Identity is our own app, so its events are ignored.
type Identity struct {
	AppID   int64
	AppSlug string
}

// PayloadError is a payload that cannot be understood; the server answers
// 400 and GitHub's delivery log shows why.
type PayloadError struct{ Err error }

func (e *PayloadError) Error() string { return "malformed payload: " + e.Err.Error() }
func (e *PayloadError) Unwrap() error { return e.Err }

func payloadErrorf(format string, args ...any) error {
	return &PayloadError{Err: fmt.Errorf(format, args...)}
}

// IsPayloadError reports whether err came from a bad payload.
func IsPayloadError(err error) bool {
	var pe *PayloadError
	return errors.As(err, &pe)
}
