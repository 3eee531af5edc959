package app

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/runner/buildkite"
)

// Bounds on waiting out a rate limit: at least a second (a reset in the
// past or a missing header), at most an hour (GitHub's window).
const (
	minRateWait = time.Second
	maxRateWait = time.Hour
)

// apiRefusal is a request an API refused for good: a 4xx other than 429
// (and 408), which no retry will change. The session ends with it.
type apiRefusal struct {
	service string
	status  int
	message string
}

func (e *apiRefusal) Error() string {
	return fmt.Sprintf("%s refused a request: %d %s", e.service, e.status, e.message)
}

// classifyAPIError says how the worker treats a failed step's error: a
// rate limit is waited out (wait > 0, uncounted), a refusal ends the
// session at once, anything else is retried with backoff.
func classifyAPIError(err error, now time.Time) (wait time.Duration, refusal *apiRefusal) {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	var refused *apiRefusal
	var bkFinal *buildkite.FinalError
	var bkRate *buildkite.RateLimitedError
	switch {
	case errors.As(err, &refused):
		return 0, refused
	case errors.As(err, &bkFinal):
		return 0, &apiRefusal{service: "Buildkite", status: bkFinal.Status, message: bkFinal.Message}
	case errors.As(err, &bkRate):
		return clampWait(bkRate.RetryAfter), nil
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
			if d, ok := retryAfter(resp.Response.Header, now); ok {
				return d, nil
			}
			return time.Minute, nil
		}
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout {
			return 0, &apiRefusal{service: "GitHub", status: code, message: resp.Message}
		}
	}
	return 0, nil
}

// retryAfter reads Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var secs int
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil {
		return clampWait(time.Duration(secs) * time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampWait(t.Sub(now)), true
	}
	return 0, false
}

func clampWait(d time.Duration) time.Duration {
	return min(max(d, minRateWait), maxRateWait)
}

// refusalReply is what the requester is told when an API refused the
// session's request for good.
func refusalReply(login string, r *apiRefusal) string {
	return fmt.Sprintf("⚠️ @%s, %s refused a request this session needed (`%d`: %s), so Inspect stopped it; retrying would not help. "+
		"Operators can check the App's permissions and installation.", login, r.service, r.status, cell(r.message))
}
