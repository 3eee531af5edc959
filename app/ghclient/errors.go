package ghclient

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/retryafter"
)

// Bounds on waiting out a rate limit: at least a second (a reset in the
// past or a missing header), at most an hour (GitHub's window).
const (
	minRateWait = time.Second
	maxRateWait = time.Hour
)

// Refusal is a request an API refused: a 4xx other than 408 and 429.
// A final one (bad request, bad credentials, forbidden, gone) ends the
// session at once, since no retry changes it. Others (404, 409, 422) may
// be GitHub's eventual consistency just after a write, so they are retried
// like any failure, and end the session with this clear message only when
// the retries run out.
type Refusal struct {
	// Service names who refused, for people ("GitHub", "Buildkite").
	Service string
	Status  int
	// Message is the service's own explanation.
	Message string
	// Final: no retry changes it; the session ends at once.
	Final bool
}

func (e *Refusal) Error() string {
	return fmt.Sprintf("%s refused a request: %d %s", e.Service, e.Status, e.Message)
}

// ClassifyError says how the worker treats a failed step's error: a
// rate limit is waited out (wait > 0, uncounted), a refusal ends the
// session at once, anything else is retried with backoff.
func ClassifyError(err error, now time.Time) (wait time.Duration, refusal *Refusal) {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	var refused *Refusal
	var execFinal *runner.FinalError
	var execRate *runner.RateLimitedError
	var mint *ghinstallation.HTTPError
	switch {
	case errors.As(err, &refused):
		return 0, refused
	case errors.As(err, &mint) && mint.Response != nil:
		if r := mintRefusal(mint.Response); r != nil {
			return 0, r
		}
		return 0, nil // a rate limit or a blip: retried with backoff
	case errors.As(err, &execFinal):
		return 0, &Refusal{Service: execFinal.Service, Status: execFinal.Status, Message: execFinal.Message, Final: true}
	case errors.As(err, &execRate):
		return clampWait(execRate.RetryAfter), nil
	case errors.As(err, &rate):
		return clampWait(rate.Rate.Reset.Time.Sub(now)), nil
	case errors.As(err, &abuse):
		if d := abuse.GetRetryAfter(); d > 0 {
			return clampWait(d), nil
		}
		return time.Minute, nil
	case errors.As(err, &resp) && resp.Response != nil:
		code := resp.Response.StatusCode
		if code == http.StatusTooManyRequests {
			if d, ok := retryafter.Parse(resp.Response.Header, now); ok {
				return clampWait(d), nil
			}
			return time.Minute, nil
		}
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout {
			retryable := code == http.StatusNotFound || code == http.StatusConflict || code == http.StatusUnprocessableEntity
			return 0, &Refusal{Service: "GitHub", Status: code, Message: resp.Message, Final: !retryable}
		}
	}
	return 0, nil
}

func clampWait(d time.Duration) time.Duration {
	return min(max(d, minRateWait), maxRateWait)
}

// mintRefusal reads GitHub's refusal to mint an installation token. 401
// (the App's key or JWT refused) and 403 "suspended" end the session now,
// cleanly: no retry changes them. 404 (uninstalled, or an installation
// too new to be seen yet) is retried like any 404. Any other 403 (a
// secondary rate limit comes without headers sometimes) is no refusal.
// ghinstallation leaves the response body open; it is read and closed
// here.
func mintRefusal(resp *http.Response) *Refusal {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 4<<10)) // a short read only shortens the check
		_ = resp.Body.Close()                                  // nothing more to read
		resp.Body = io.NopCloser(bytes.NewReader(body))        // for anyone reading it after us
	}
	const msg = "the installation's access token could not be created"
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized:
		return &Refusal{Service: "GitHub", Status: code, Message: msg + " (the App's credentials were refused)", Final: true}
	case code == http.StatusForbidden && bytes.Contains(bytes.ToLower(body), []byte("suspended")):
		return &Refusal{Service: "GitHub", Status: code, Message: msg + " (the installation is suspended)", Final: true}
	case code == http.StatusNotFound:
		return &Refusal{Service: "GitHub", Status: code, Message: msg + " (the App is not installed there)"}
	}
	return nil
}
