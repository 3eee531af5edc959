package outbound

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/runner/retryafter"
)

// HeaderLimiter marks the synthetic responses inside the limiter's own
// rate-limit errors (the request was never sent); its value says why.
const HeaderLimiter = "X-Inspect-Limiter"

// secondaryFallback is how long an installation is held after a secondary
// limit that named no time: GitHub asks for at least a minute.
const secondaryFallback = time.Minute

// installation is what the limiter knows about one installation on this
// replica. It lives while requests use it or a hold lasts, so the map
// stays as small as the installations currently active.
type installation struct {
	refs int
	// secondary holds every request until then: GitHub sent Retry-After
	// or reported a secondary limit.
	secondary time.Time
	// primary holds one resource's requests ("core", "search", ...) until
	// its X-RateLimit-Reset, after X-RateLimit-Remaining reached 0.
	primary map[string]primaryHold
	fair    fairQueue
}

type primaryHold struct {
	until time.Time
	limit int
}

func (l *Limiter) acquire(id int64) *installation {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.insts[id]
	if st == nil {
		st = &installation{}
		l.insts[id] = st
	}
	st.refs++
	return st
}

func (l *Limiter) release(id int64, st *installation) {
	now := l.cfg.Clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	st.refs--
	if st.refs > 0 {
		return
	}
	for res, h := range st.primary {
		if !h.until.After(now) {
			delete(st.primary, res)
		}
	}
	if len(st.primary) == 0 && !st.secondary.After(now) {
		delete(l.insts, id)
	}
}

// holdFor is the latest active hold on a request for resource, and
// whether it is a primary one (which decides the error's type).
func (st *installation) holdFor(resource string, now time.Time) (until time.Time, primary bool, limit int) {
	until = st.secondary
	if h, ok := st.primary[resource]; ok && !h.until.Before(until) {
		until, primary, limit = h.until, true, h.limit
	}
	if !until.After(now) {
		return time.Time{}, false, 0
	}
	return until, primary, limit
}

// held says a hold applies to a request for resource now.
func (l *Limiter) held(st *installation, resource string) bool {
	now := l.cfg.Clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	until, _, _ := st.holdFor(resource, now)
	return !until.IsZero()
}

// awaitUnblocked waits out the installation's holds that apply to the
// request, or fails with the error GitHub would have sent when a hold
// lasts past deadline.
func (l *Limiter) awaitUnblocked(ctx context.Context, t *transport, st *installation, req *http.Request, resource string, deadline time.Time) error {
	for {
		now := l.cfg.Clock()
		l.mu.Lock()
		until, primary, limit := st.holdFor(resource, now)
		l.mu.Unlock()
		if until.IsZero() {
			return nil
		}
		if until.After(deadline) {
			if primary {
				return rateLimitError(req, t.key, resource, until, limit)
			}
			return abuseError(req, until.Sub(now), fmt.Sprintf("GitHub asked %s to wait until %s; not sent (Inspect's outbound limiter)", t.key, until.UTC().Format(time.RFC3339)))
		}
		l.cfg.Logger.Debug().Str("rate_key", t.key).Dur("wait", until.Sub(now)).Msg("waiting out a GitHub rate limit before sending")
		if err := l.wait(ctx, until.Sub(now)); err != nil {
			return err
		}
	}
}

// observe records the holds a response asks for: Retry-After on a 403 or
// 429 holds everything; X-RateLimit-Remaining 0 holds its resource until
// X-RateLimit-Reset; a secondary limit naming no time holds everything
// for a minute. The response itself goes back to the caller unchanged
// (go-github makes its own error of it).
func (l *Limiter) observe(t *transport, st *installation, resource string, resp *http.Response) {
	now := l.cfg.Clock()
	h := resp.Header
	limited := resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests
	if limited {
		if d, ok := retryafter.Parse(h, now); ok {
			l.holdAll(t, st, now.Add(d), "retry-after")
			return
		}
	}
	reset, hasReset := parseReset(h)
	if h.Get("X-RateLimit-Remaining") == "0" && hasReset {
		if res := h.Get("X-RateLimit-Resource"); res != "" {
			resource = res
		}
		limit, _ := strconv.Atoi(h.Get("X-RateLimit-Limit")) // 0 when absent: the error just lacks it
		l.holdResource(t, st, resource, reset, limit)
		return
	}
	if limited && (resp.StatusCode == http.StatusTooManyRequests || secondaryBody(resp)) {
		until := now.Add(secondaryFallback)
		if hasReset && reset.After(now) {
			until = reset // GitHub sometimes names the time this way instead
		}
		l.holdAll(t, st, until, "secondary rate limit")
	}
}

func (l *Limiter) holdAll(t *transport, st *installation, until time.Time, why string) {
	l.mu.Lock()
	longer := until.After(st.secondary)
	if longer {
		st.secondary = until
	}
	l.mu.Unlock()
	if longer {
		l.cfg.Logger.Info().Str("rate_key", t.key).Str("reason", why).Time("until", until).Msg("GitHub asked us to hold off; holding this installation's requests on this replica")
	}
}

func (l *Limiter) holdResource(t *transport, st *installation, resource string, until time.Time, limit int) {
	l.mu.Lock()
	if st.primary == nil {
		st.primary = map[string]primaryHold{}
	}
	longer := until.After(st.primary[resource].until)
	if longer {
		st.primary[resource] = primaryHold{until: until, limit: limit}
	}
	l.mu.Unlock()
	if longer {
		l.cfg.Logger.Info().Str("rate_key", t.key).Str("resource", resource).Time("until", until).Msg("GitHub rate limit exhausted; holding this installation's requests on this replica")
	}
}

func parseReset(h http.Header) (time.Time, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}, false
	}
	return time.Unix(v, 0), true
}

// secondaryBody says a 403 is a secondary rate limit by its message (as
// go-github reads it: the documentation URL), leaving the body readable.
// A 403 for a missing permission must not hold the installation.
func secondaryBody(resp *http.Response) bool {
	if resp.StatusCode != http.StatusForbidden || resp.Body == nil {
		return false
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	resp.Body = replayBody(buf, resp.Body)
	if err != nil {
		return false // the caller meets the read error itself
	}
	s := strings.ToLower(string(buf))
	return strings.Contains(s, "secondary-rate-limits") || strings.Contains(s, "secondary rate limit") || strings.Contains(s, "abuse-rate-limits")
}

// resources names go-github's rate-limit categories as GitHub's
// X-RateLimit-Resource header does.
var resources = [...]string{
	github.CoreCategory:                      "core",
	github.SearchCategory:                    "search",
	github.GraphqlCategory:                   "graphql",
	github.IntegrationManifestCategory:       "integration_manifest",
	github.SourceImportCategory:              "source_import",
	github.CodeScanningUploadCategory:        "code_scanning_upload",
	github.ActionsRunnerRegistrationCategory: "actions_runner_registration",
	github.ScimCategory:                      "scim",
	github.DependencySnapshotsCategory:       "dependency_snapshots",
	github.CodeSearchCategory:                "code_search",
	github.AuditLogCategory:                  "audit_log",
}

// resourceOf is the primary limit a request counts against: an exhausted
// search budget must not hold the installation's other requests.
func resourceOf(req *http.Request) string {
	if c := int(github.GetRateLimitCategory(req.Method, apiPath(req.URL.Path))); c < len(resources) {
		return resources[c]
	}
	return "core"
}

// synthetic is the response inside the limiter's errors: go-github's
// error types print the request from it, and ghclient.ClassifyError reads the
// wait from the error's fields.
func synthetic(req *http.Request, h http.Header, why string) *http.Response {
	h.Set(HeaderLimiter, why)
	return &http.Response{
		Status: "403 Forbidden", StatusCode: http.StatusForbidden,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: http.NoBody, Request: req,
	}
}

// rateLimitError is GitHub's primary-limit error, made without asking
// GitHub: the budget is known to be spent until until.
func rateLimitError(req *http.Request, key, resource string, until time.Time, limit int) error {
	h := http.Header{}
	if limit > 0 {
		h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	}
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(until.Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
	return &github.RateLimitError{
		Rate:     github.Rate{Limit: limit, Remaining: 0, Reset: github.Timestamp{Time: until}},
		Response: synthetic(req, h, "primary"),
		Message:  fmt.Sprintf("API rate limit (%s) exhausted for %s; not sent (Inspect's outbound limiter)", resource, key),
	}
}

// abuseError is GitHub's secondary-limit error with a Retry-After of
// wait, made without asking GitHub.
func abuseError(req *http.Request, wait time.Duration, msg string) error {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
	return &github.AbuseRateLimitError{
		Response:   synthetic(req, h, "secondary"),
		Message:    msg,
		RetryAfter: &wait,
	}
}
