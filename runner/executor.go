package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ErrNoResult is returned by an executor asked for a finished attempt's
// result (its evidence) when the attempt left none.
var ErrNoResult = errors.New("the attempt left no result")

// Attempt is what an executor needs to start `inspect runner` for one
// attempt of a session. It carries no standing credential: ClaimCode is
// good for one claim on the session channel, which exchanges it for the
// attempt's session token. Executors hand it to the supervisor through the
// environment names in package contract (EnvChannelURL, EnvClaimCode, …),
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

// The optional capabilities. Executor is all an executor must do; each of
// these is something an executor may also do, found by a type assertion on
// the Executor the app was given. The app does without a missing one: it
// then relies on the session channel, and on deadlines, alone.
type (
	// RunningLister lists the attempts running on this host (external id
	// → attempt id): the local executor's, so that the app can stop a
	// supervisor whose attempt the store has already ended.
	RunningLister interface {
		Running(ctx context.Context) map[string]string
	}
	// AttemptFinder finds an attempt's run by the session and attempt
	// number it was started with, so a replayed dispatch adopts a run that
	// started rather than making a second one (Buildkite, by meta-data).
	AttemptFinder interface {
		Find(ctx context.Context, sessionID string, number int) (externalID string, found bool, err error)
	}
	// ResultFetcher reads a finished attempt's evidence and manifest from
	// the executor's own storage (a Buildkite build's artifacts): the slow
	// path, for when the supervisor's upload never arrived. It returns
	// ErrNoResult when the attempt left none, and an error wrapping
	// ErrResultTooLarge when what it left is over the contract's caps.
	ResultFetcher interface {
		FetchResult(ctx context.Context, externalID string) (evidence, manifest []byte, err error)
	}
	// Closer stops every attempt the executor runs on this host, when the
	// app drains (the local executor's children): their supervisors get
	// SIGTERM while the channel still answers, so they upload partial
	// evidence.
	Closer interface {
		Close(ctx context.Context) error
	}
	// RunAnnotator writes the session's outcome onto the executor's run
	// (a Buildkite build's annotation).
	RunAnnotator interface {
		Annotate(ctx context.Context, externalID, style, body string) error
	}
)

// The error kinds an executor returns, so that the app can tell what to do
// without knowing which executor it has.
var (
	// ErrAtCapacity is returned by Start when the executor runs as many
	// attempts as it may (the local executor's cap). The app tries the
	// dispatch again later; it is not the attempt's failure.
	ErrAtCapacity = errors.New("executor at capacity")
	// ErrResultTooLarge is what a ResultFetcher's error wraps when the
	// evidence or manifest it found is larger than the contract allows.
	ErrResultTooLarge = errors.New("the attempt's result is larger than the contract allows")
)

// FinalError is an executor's service refusing a request for good: a bad
// token, a missing scope, a pipeline that does not exist. Retrying cannot
// help; the app ends the session api_refused and says why.
type FinalError struct {
	// Service names the service for people ("Buildkite").
	Service string
	// Status is the HTTP status it answered; Message is its own
	// explanation, with any credential already redacted.
	Status  int
	Message string
}

// Error says what the service answered.
func (e *FinalError) Error() string {
	return fmt.Sprintf("%s answered %d %s: %s", strings.ToLower(e.Service), e.Status, http.StatusText(e.Status), e.Message)
}

// RateLimitedError is an executor's service still answering "too many
// requests" after the executor's own retries. Callers should try again
// later, not at once.
type RateLimitedError struct {
	// Service names the service for people ("Buildkite").
	Service string
	// RetryAfter is how long the service last asked to wait, or the next
	// backoff step when it did not say. It is advice for whoever schedules
	// the next try, not capped.
	RetryAfter time.Duration
}

// Error says how long to wait.
func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%s: rate limited; retry after %s", strings.ToLower(e.Service), e.RetryAfter)
}
