package buildkite

import (
	"net/http"
	"testing"
	"time"
)

// TestAdvisedWait covers what advisedWait adds to retryafter.Parse, whose
// own test covers the forms of Retry-After: the cap, and RateLimit-Reset
// when Retry-After gives no answer.
func TestAdvisedWait(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		header  http.Header
		want    time.Duration
		advised bool
	}{
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second, true},
		{http.Header{"Retry-After": {"0"}}, 0, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After": {"99999999999999999"}}, maxAdvisedWait, true},
		{http.Header{"Retry-After": {now.Add(48 * time.Hour).Format(http.TimeFormat)}}, maxAdvisedWait, true},
		{http.Header{"Retry-After": {"5"}, "Ratelimit-Reset": {"12"}}, 5 * time.Second, true},
		{http.Header{"Retry-After": {"soon"}, "Ratelimit-Reset": {"12"}}, 12 * time.Second, true},
		{http.Header{"Ratelimit-Reset": {"12"}}, 12 * time.Second, true},
		// The per-user limit (50 a minute) has its own reset.
		{http.Header{"Ratelimit-User-Reset": {"40"}}, 40 * time.Second, true},
		{http.Header{"Ratelimit-Reset": {"12"}, "Ratelimit-Remaining": {"180"}, "Ratelimit-User-Reset": {"40"}, "Ratelimit-User-Remaining": {"0"}}, 40 * time.Second, true},
		{http.Header{"Ratelimit-Reset": {"12"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-User-Reset": {"40"}, "Ratelimit-User-Remaining": {"3"}}, 12 * time.Second, true},
		{http.Header{"Ratelimit-Reset": {"12"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-User-Reset": {"40"}, "Ratelimit-User-Remaining": {"0"}}, 40 * time.Second, true},
		{http.Header{"Ratelimit-Reset": {"50"}, "Ratelimit-User-Reset": {"40"}}, 50 * time.Second, true}, // neither says: the later
		{http.Header{"Retry-After": {"5"}, "Ratelimit-User-Reset": {"40"}}, 5 * time.Second, true},
		{http.Header{"Retry-After": {"-3"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, advised := advisedWait(c.header, now)
		if got != c.want || advised != c.advised {
			t.Errorf("advisedWait(%v) = %v, %v; want %v, %v", c.header, got, advised, c.want, c.advised)
		}
	}
}

func TestBackoff(t *testing.T) {
	var got []time.Duration
	for retry := range 8 {
		got = append(got, backoff(retry, 60*time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("backoff = %v, want %v seconds", got, want)
		}
	}
	if d := backoff(200, time.Minute); d != time.Minute {
		t.Fatalf("backoff(200) = %v", d)
	}
}

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		method string
		status int
		want   bool
	}{
		{"POST", 429, true}, {"GET", 429, true},
		{"GET", 503, true}, {"PUT", 502, true}, {"PATCH", 504, true}, {"DELETE", 503, true},
		{"GET", 408, true}, {"PUT", 408, true}, {"PATCH", 408, true}, {"DELETE", 408, true},
		{"POST", 503, false}, {"POST", 408, false}, {"GET", 500, false}, {"GET", 404, false}, {"GET", 200, false},
	} {
		if got := retryable(c.method, c.status); got != c.want {
			t.Errorf("retryable(%s, %d) = %v", c.method, c.status, got)
		}
	}
}

func TestFinalStatus(t *testing.T) {
	for status, want := range map[int]bool{
		400: true, 401: true, 403: true, 404: true, 422: true,
		408: false, 200: false, 302: false, 500: false, 503: false,
	} {
		if got := finalStatus(status); got != want {
			t.Errorf("finalStatus(%d) = %v, want %v", status, got, want)
		}
	}
}
