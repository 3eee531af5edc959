// Package ghwrite is the idempotent writes to GitHub: each verb finds what
// an earlier try made before it makes anything, or is idempotent on
// GitHub's side, so a replayed step repeats nothing visible.
//
// Each verb takes the narrow interface of go-github service methods it
// calls, as Prow's plugins do; *github.IssuesService, *github.GitService,
// *github.PullRequestsService, *github.ChecksService and
// *github.ReactionsService satisfy them as they are, and the tests fake
// them with small structs. The package owns how a write is made safe to
// repeat, and that what it sends fits GitHub's documented limits
// (limits.go: a text too long is cut, with a visible note); it must not
// decide what to write, where a change goes or what
// anything says (that is the engine's in app, policy's and render's), and
// it keeps no state between calls.
package ghwrite

import (
	"errors"

	"github.com/google/go-github/v62/github"
)

// IsStatus tells whether err is GitHub's answer with that HTTP status.
func IsStatus(err error, code int) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == code
}
