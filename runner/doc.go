// Package runner holds what runs a session's attempt. This package is the
// executor contract, in one place: Executor (executor.go), what every
// executor must do; the optional capabilities the app looks for
// (RunningLister, AttemptFinder, ResultFetcher, RunAnnotator, Closer); the
// error kinds it understands (ErrAtCapacity, ErrResultTooLarge, FinalError,
// RateLimitedError, ErrNoResult); and the snapshot builder's signature
// (snapshot.go). The app imports only this package (never the sandbox, not
// even through it) and the shared schema, package contract; cmd/inspect
// picks the concrete executor.
//
// The sub-packages: the executors (runner/local on the app's host,
// runner/buildkite), the supervisor that `inspect runner` is
// (runner/supervisor), the bubblewrap sandbox (runner/sandbox), `inspect
// run`'s engine (runner/checkoutrun), and the Retry-After reader both sides
// use (runner/retryafter). Every schema that crosses between the app and
// the supervisor is package contract, below runner in the layer order
// (docs/ARCHITECTURE.md, "Layers").
//
// It must never import app or handlers, nor let a credential into the
// sandbox.
package runner
