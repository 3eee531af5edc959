package runner

import (
	"context"
	"errors"
	"time"
)

// ErrNoResult is returned by an executor asked for a finished attempt's
// result (its evidence) when the attempt left none.
var ErrNoResult = errors.New("the attempt left no result")

// Attempt is what an executor needs to start `inspect runner` for one
// attempt of a session. It carries no standing credential: ClaimCode is
// good for one claim on the session channel, which exchanges it for the
// attempt's session token. Executors hand it to the supervisor through the
// environment names in runner/contract (EnvChannelURL, EnvClaimCode, …),
// never on a command line.
type Attempt struct {
	SessionID string
	AttemptID string
	// ChannelURL is the base URL of the session channel: loopback for the
	// local executor, the app's public URL on Buildkite.
	ChannelURL string
	ClaimCode  string
	// Number counts the session's attempts from 1; a re-dispatch of a lost
	// attempt is 2. With SessionID it names the attempt to an executor that
	// must find it again (Buildkite meta-data).
	Number int
	// RequesterLogin and RequesterID name who asked for the session (an
	// executor may show them, as a Buildkite build's message and author).
	RequesterLogin string
	RequesterID    int64
	// Deadline is the session's deadline. The supervisor enforces it
	// itself (it is also in the spec); an executor may use it as a
	// backstop, for an attempt whose supervisor stopped answering.
	Deadline time.Time
}

// Status is where an attempt is, as its executor sees it.
type Status string

// Statuses.
const (
	// StatusPending: accepted but not yet running (a Buildkite build that
	// waits for an agent).
	StatusPending Status = "pending"
	// StatusRunning: the supervisor is running.
	StatusRunning Status = "running"
	// StatusExited: the supervisor ended; AttemptState.ExitCode says how.
	StatusExited Status = "exited"
	// StatusLost: the executor does not know the attempt (any more): a
	// restarted host, a build that vanished. The app treats it as ended
	// without a result.
	StatusLost Status = "lost"
)

// AttemptState is an executor's view of one attempt.
type AttemptState struct {
	Status Status
	// ExitCode is the supervisor's exit status once Status is
	// StatusExited; -1 when a signal ended it (Signal names it).
	ExitCode int
	Signal   string
}

// Executor starts attempts, cancels them, and answers for them.
//
// Results never come through an executor: the supervisor uploads its
// evidence and change manifest over the session channel. The app asks an
// executor for State only when the channel has gone silent (the reconcile
// loop), to tell an attempt that is still working from one that is gone.
//
// Implementations: runner/local (a child process per attempt on the app's
// host) and runner/buildkite (a build per attempt).
type Executor interface {
	// Start launches the attempt and returns the executor's id for it,
	// which the app records and passes back to Cancel and State. It does
	// not wait for the attempt to finish.
	Start(ctx context.Context, a Attempt) (externalID string, err error)
	// Cancel asks the attempt to stop. The supervisor gets SIGTERM and
	// still uploads partial evidence; it is killed if it has not stopped
	// after a grace period. Cancel returns once the request is made, not
	// when the attempt has ended; cancelling an ended or unknown attempt
	// is not an error.
	Cancel(ctx context.Context, externalID string) error
	// State reports where the attempt is.
	State(ctx context.Context, externalID string) (AttemptState, error)
}
