package fakegithub

import (
	"net/http"
	"strconv"
	"time"
)

// GitHub answers every REST request made with an installation token with
// the token's primary rate limit (docs: "Rate limits for the REST API",
// headers X-RateLimit-Limit, -Remaining, -Used, -Reset, -Resource). An
// installation gets 5,000 requests an hour; the stand-in counts each
// installation's requests in the clock's current hour. It never runs out
// on its own (Remaining stays at least 1, so the client's outbound limiter
// never holds behind a count only tests reach): RateLimitNext makes it
// run out, when a test asks.
const installationRateLimit = 5000

type rateWindow struct {
	start time.Time
	used  int
}

// countRate counts a request of cred at at, and returns the headers to
// answer it with (none for credentials other than an installation token).
// Callers hold s.mu.
func (s *Server) countRate(cred credential, at time.Time) http.Header {
	id := cred.installationID()
	if id == 0 {
		return nil
	}
	if s.rates == nil {
		s.rates = map[int64]*rateWindow{}
	}
	hour := at.Truncate(time.Hour)
	w := s.rates[id]
	if w == nil || !w.start.Equal(hour) {
		w = &rateWindow{start: hour}
		s.rates[id] = w
	}
	w.used++
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(installationRateLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(1, installationRateLimit-w.used)))
	h.Set("X-RateLimit-Used", strconv.Itoa(w.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(hour.Add(time.Hour).Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	return h
}
