// Package handlers turns GitHub webhook payloads into the session
// package's Trigger, CheckFailure and ConfigPush, one file per event, and
// hands them to a Sink. Handlers decide from the payload and local state
// only: they never call the network during the request (ARCHITECTURE.md,
// "Accept").
package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Sink accepts what handlers produce. The app implements it; it must
// persist durably before returning nil.
type Sink interface {
	AcceptTrigger(ctx context.Context, t session.Trigger) error
	AcceptConfigPush(ctx context.Context, p session.ConfigPush) error
	// AcceptCheckFailure considers a failing check for repair. It stores
	// nothing for a repo whose cached config turns repairs off or names
	// no matching check.
	AcceptCheckFailure(ctx context.Context, f session.CheckFailure) error
	// DefaultBranchMoved says a repo's default branch got new commits, so
	// its snapshot may be rebuilt sooner. Best effort: an error is logged
	// by the sink, never failed back to GitHub.
	DefaultBranchMoved(ctx context.Context, repo session.Repo)
}

// Identity is our own app, so its events are ignored.
type Identity struct {
	AppID   int64
	AppSlug string
}

// policy is the identity as policy's rules take it.
func (i Identity) policy() policy.AppIdentity {
	return policy.AppIdentity{ID: i.AppID, Slug: i.AppSlug}
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
