// Package runner will hold the executors (local and Buildkite), the
// supervisor and its sandbox, and runner/contract with every session schema.
// It must never import app, nor let a credential into the sandbox. Issue 3
// builds it.
package runner
