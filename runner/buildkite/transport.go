package buildkite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/retryafter"
)

// RateLimitedError (runner's) is returned when Buildkite still answers 429
// Too Many Requests after Config.MaxRetries retries. The transport returns
// it instead of the 429 response because go-buildkite's Client.Do would
// otherwise retry a GET's 429 itself, with real sleeps for up to 15
// minutes, deaf to ctx; a transport error is final for it. Callers should
// try again later, not at once.
type RateLimitedError = runner.RateLimitedError

// maxAdvisedWait bounds the waits a response may advise, so that an absurd
// Retry-After cannot overflow a time.Duration. Config.MaxWait caps the
// waits actually taken far below it.
const maxAdvisedWait = 24 * time.Hour

// discardLimit is how much of a retried response's body is read before it
// is closed, so that a small error body does not cost the connection, and a
// large one is not read at all.
const discardLimit = 4 << 10

// retryTransport retries what Buildkite asks to be retried (429, from any
// method: the rate limiter refuses a request before it is processed) and
// what is safe to retry (408, 502, 503 and 504, for idempotent methods
// only: a POST may have been processed behind a failing proxy, or a proxy
// that gave up waiting, so its caller must find out first, as
// Executor.Start does). Every other answer, and every transport error, goes
// up unchanged, except a 429 left after the last retry, which becomes a
// *RateLimitedError.
//
// It also applies the base client's Timeout to each try, body included,
// rather than to the whole call: a single timeout spanning the retries
// would cut the waits that Buildkite asked for short.
type retryTransport struct {
	base       http.RoundTripper
	tryTimeout time.Duration // 0: none
	wait       func(ctx context.Context, d time.Duration) error
	maxRetries int
	maxWait    time.Duration
	now        func() time.Time
}

// RoundTrip sends req, retrying as described on retryTransport. A request
// with a body is retried only when req.GetBody can replay it.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for retry := 0; ; retry++ {
		try, cancel, err := t.prepare(req, retry)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(try)
		if err != nil {
			cancel()
			return nil, err
		}
		resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
		if !retryable(req.Method, resp.StatusCode) {
			return resp, nil
		}
		wait, advised := advisedWait(resp.Header, t.now())
		if !advised {
			wait = backoff(retry, t.maxWait)
		}
		if retry >= t.maxRetries || !replayable {
			if resp.StatusCode == http.StatusTooManyRequests {
				discard(resp)
				return nil, &RateLimitedError{Service: serviceName, RetryAfter: wait}
			}
			return resp, nil
		}
		discard(resp)
		if err := t.wait(req.Context(), min(wait, t.maxWait)); err != nil {
			return nil, err
		}
	}
}

// prepare makes the request for one try: its own timeout, and a fresh copy
// of the body after the first try (the base transport consumed the
// original). The returned cancel ends the try's context; it runs when the
// response body is closed.
func (t *retryTransport) prepare(req *http.Request, retry int) (*http.Request, context.CancelFunc, error) {
	ctx, cancel := req.Context(), context.CancelFunc(func() {})
	if t.tryTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, t.tryTimeout)
	}
	try := req.WithContext(ctx)
	if retry > 0 && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("buildkite: replaying the request body: %w", err)
		}
		try.Body = body
	}
	return try, cancel, nil
}

// retryable reports whether an answer is worth another try of the same
// request.
func retryable(method string, status int) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusRequestTimeout, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		switch method {
		case http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete:
			return true
		}
	}
	return false
}

// advisedWait reads how long the response asks the client to wait:
// Retry-After (delay-seconds or an HTTP-date, read by retryafter.Parse),
// else the reset of Buildkite's rate limit that ran out: the
// organization's (RateLimit-Reset) or the per-user one
// (RateLimit-User-Reset), each in seconds until its window resets. When
// the *-Remaining headers do not say which ran out, the later reset is
// waited for, which outlasts either. Capped at maxAdvisedWait.
func advisedWait(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := retryafter.Parse(h, now); ok {
		return min(d, maxAdvisedWait), true
	}
	var wait time.Duration
	found, exhausted := false, false
	for _, l := range []struct{ reset, remaining string }{
		{"RateLimit-Reset", "RateLimit-Remaining"},
		{"RateLimit-User-Reset", "RateLimit-User-Remaining"},
	} {
		d, ok := parseSeconds(strings.TrimSpace(h.Get(l.reset)))
		if !ok {
			continue
		}
		out := strings.TrimSpace(h.Get(l.remaining)) == "0"
		switch {
		case out && !exhausted:
			// The first limit known to have run out decides alone...
			wait, exhausted = d, true
		case out || !exhausted:
			// ...with any other that ran out, or, while none is known
			// to have, every one given.
			wait = max(wait, d)
		}
		found = true
	}
	return wait, found
}

// parseSeconds reads a non-negative whole number of seconds, capped at
// maxAdvisedWait.
func parseSeconds(v string) (time.Duration, bool) {
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(min(secs, int64(maxAdvisedWait/time.Second))) * time.Second, true
}

// backoff is the wait before retry number retry+1 when the server gave no
// advice: 1s, 2s, 4s, … capped at maxWait.
func backoff(retry int, maxWait time.Duration) time.Duration {
	if retry >= 32 {
		return maxWait
	}
	d := time.Second << retry
	if d <= 0 || d > maxWait {
		return maxWait
	}
	return d
}

// discard drops a response that will be retried.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, discardLimit)
	_ = resp.Body.Close()
}

// cancelOnClose ends a try's context once its body has been read and
// closed, not when RoundTrip returns, which would cut the body off.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
