// Package runner holds what runs a session's attempt: the Executor
// interface the app dispatches through, and, in its sub-packages, the local
// executor (runner/local), the supervisor that `inspect runner` is
// (runner/supervisor), the bubblewrap sandbox (runner/sandbox) and every
// schema that crosses between the app and the supervisor (runner/contract).
//
// It must never import app, nor let a credential into the sandbox.
package runner
