package metrics

import (
	"net/http"
	"strconv"
)

// Transport counts the requests next sends to service (GitHub,
// Buildkite): by status code, the failures, and the rate-limit headroom
// each answer reports. It sits under the retries and the outbound limiter,
// so every request that reaches the network counts once.
func (m *Metrics) Transport(service string, next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{m: m, service: service, next: next}
}

type transport struct {
	m       *Metrics
	service string
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.m.apiRequests.WithLabelValues(t.service, "error").Inc()
		t.m.apiErrors.WithLabelValues(t.service).Inc()
		return resp, err
	}
	t.m.apiRequests.WithLabelValues(t.service, strconv.Itoa(resp.StatusCode)).Inc()
	remaining, resource, known := rateLimit(resp.Header)
	limited := resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode == http.StatusForbidden && known && remaining == 0)
	if resp.StatusCode >= 500 || limited {
		t.m.apiErrors.WithLabelValues(t.service).Inc()
	}
	if known {
		t.m.apiRemaining.WithLabelValues(t.service, resource).Set(float64(remaining))
	}
	return resp, nil
}

// rateLimit reads an answer's remaining requests: GitHub's
// X-RateLimit-Remaining (with X-RateLimit-Resource: core, search, …) or
// Buildkite's RateLimit-Remaining. A missing or malformed header is not
// known (the value comes from the service, and is only trusted as a number).
func rateLimit(h http.Header) (remaining int64, resource string, known bool) {
	v := h.Get("X-RateLimit-Remaining")
	if v == "" {
		v = h.Get("RateLimit-Remaining")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, "", false
	}
	resource = h.Get("X-RateLimit-Resource")
	switch resource {
	case "core", "search", "graphql", "integration_manifest", "code_scanning_upload", "code_search", "actions_runner_registration", "scim", "dependency_snapshots", "audit_log":
	case "":
		resource = "default"
	default:
		// Label values stay a known, small set.
		resource = "other"
	}
	return n, resource, true
}
