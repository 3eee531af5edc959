// Package retryafter reads the Retry-After header (RFC 9110, section
// 10.2.3), which a server sends with a 429, a 503 or a 3xx to say how long
// the client should wait before its next request. It is shared by the
// Buildkite executor's transport, the app's outbound limiter and its error
// classification, so that all read the header, and wait it out, the same
// way.
//
// It is production code, under runner/ so that runner/buildkite may import
// it (runner never imports app) and app/outbound may too (decision 0016).
// It imports only the standard library, and must import nothing of this
// module: both sides lean on it, so it leans on neither.
package retryafter

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSeconds is the largest delay-seconds a time.Duration can hold.
const maxSeconds = int64(1<<63-1) / int64(time.Second)

// Parse reads h's Retry-After as a wait from now. The header is either
// delay-seconds (a whole number of seconds, digits only) or an HTTP-date,
// read with http.ParseTime; a date in the past is a wait of 0, as the
// server asked for no wait at all. ok is false when the header is absent
// or is neither form (a sign, a fraction, a unit, an unparseable date), so
// that the caller falls back to its own backoff rather than trusting a
// guess.
//
// The wait is not capped, beyond saturating at the largest
// time.Duration: how long is too long to wait is the caller's to decide.
func Parse(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > maxSeconds {
			// All digits, so the only failure is a number too big for
			// int64: a wait longer than any Duration, all the same.
			secs = maxSeconds
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	// Time.Sub saturates, so a date centuries away cannot overflow.
	return max(at.Sub(now), 0), true
}

// isDigits reports whether s is ASCII digits only. strconv.ParseInt alone
// would also take a sign, which delay-seconds does not allow.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Sleep waits d, or until ctx is done (then it returns ctx's error), with a
// timer and no goroutine: how the transports wait out a Retry-After.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
