package ghclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/runner"
)

func TestClassifyAPIError(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	resp := func(code int, h http.Header) *http.Response {
		return &http.Response{StatusCode: code, Header: h, Request: &http.Request{Method: "GET"}}
	}
	mintErr := func(code int, body string) error {
		r := resp(code, nil)
		r.Body = io.NopCloser(strings.NewReader(body))
		return fmt.Errorf("getting a client: %w", &url.Error{Op: "Get", URL: "https://api.github.com/repos/o/r",
			Err: &ghinstallation.HTTPError{Message: "could not refresh installation id 1's token", Response: r}})
	}
	ghErr := func(code int, h http.Header) error {
		return fmt.Errorf("reading: %w", &github.ErrorResponse{Response: resp(code, h), Message: "Not Found"})
	}
	for name, c := range map[string]struct {
		err       error
		wait      time.Duration
		refusedBy string
		final     bool
	}{
		"plain error":            {err: errors.New("connection reset")},
		"github 500":             {err: ghErr(500, nil)},
		"github 408":             {err: ghErr(408, nil)},
		"github 404 retried":     {err: ghErr(404, nil), refusedBy: "GitHub"},
		"github 422 retried":     {err: ghErr(422, nil), refusedBy: "GitHub"},
		"github 401 final":       {err: ghErr(401, nil), refusedBy: "GitHub", final: true},
		"github 403 final":       {err: ghErr(403, nil), refusedBy: "GitHub", final: true},
		"github 429 retry-after": {err: ghErr(429, http.Header{"Retry-After": {"30"}}), wait: 30 * time.Second},
		"github 429 bare":        {err: ghErr(429, nil), wait: time.Minute},
		"primary rate limit": {err: &github.RateLimitError{Response: resp(403, nil),
			Rate: github.Rate{Reset: github.Timestamp{Time: now.Add(90 * time.Second)}}}, wait: 90 * time.Second},
		"reset in the past": {err: &github.RateLimitError{Response: resp(403, nil),
			Rate: github.Rate{Reset: github.Timestamp{Time: now.Add(-time.Hour)}}}, wait: time.Second},
		"secondary rate limit": {err: &github.AbuseRateLimitError{Response: resp(403, nil), RetryAfter: ptr(2 * time.Minute)}, wait: 2 * time.Minute},
		"mint suspended":       {err: mintErr(403, `{"message":"This installation has been suspended"}`), refusedBy: "GitHub", final: true},
		"mint key refused":     {err: mintErr(401, `{"message":"A JSON web token could not be decoded"}`), refusedBy: "GitHub", final: true},
		"mint not installed":   {err: mintErr(404, `{"message":"Not Found"}`), refusedBy: "GitHub"},
		"mint secondary limit": {err: mintErr(403, `{"message":"You have exceeded a secondary rate limit"}`)},
		"mint 502":             {err: mintErr(502, "bad gateway")},
		"buildkite final":      {err: fmt.Errorf("starting: %w", &runner.FinalError{Service: "Buildkite", Status: 403, Message: "forbidden"}), refusedBy: "Buildkite", final: true},
		"buildkite rate":       {err: &runner.RateLimitedError{Service: "Buildkite", RetryAfter: 5 * time.Hour}, wait: time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			wait, refusal := ClassifyError(c.err, now)
			if wait != c.wait {
				t.Errorf("wait = %v, want %v", wait, c.wait)
			}
			switch {
			case c.refusedBy == "" && refusal != nil:
				t.Errorf("refused: %v", refusal)
			case c.refusedBy != "" && (refusal == nil || refusal.Service != c.refusedBy || refusal.Final != c.final):
				t.Errorf("refusal = %+v, want one by %s, final %v", refusal, c.refusedBy, c.final)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
