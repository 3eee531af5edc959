package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/appsetup"
	"github.com/inspecthq/inspect/app/ghclient"
)

// StartBackoff is how `inspect serve` waits for GitHub at start: Initial
// after the first failure, doubling up to Max.
type StartBackoff struct {
	Initial, Max time.Duration
}

// DefaultStartBackoff rides out a GitHub incident or a network that comes
// up after the server: 1s, 2s, 4s ... then every 30s, until GitHub answers
// or the server is stopped.
var DefaultStartBackoff = StartBackoff{Initial: time.Second, Max: 30 * time.Second}

// WaitForGitHub asks GitHub who this App is (GET /app, with the App's
// JWT) until it answers, and returns the App's slug. A server that cannot
// reach GitHub must not look ready: it could accept webhooks and never act
// on them. Failures that waiting cannot mend (401: the key or app_id is
// wrong; 404: no such App) end it at once; everything else (no network,
// 5xx, rate limits) is retried with backoff until ctx ends.
func WaitForGitHub(ctx context.Context, gh ghclient.GitHubClients, b StartBackoff, log zerolog.Logger) (string, error) {
	wait := b.Initial
	for attempt := 1; ; attempt++ {
		slug, events, err := askApp(ctx, gh)
		if err == nil {
			if missing := appsetup.MissingEvents(events); len(missing) > 0 {
				log.Warn().Strs("missing_events", missing).Msg("the App is not subscribed to every event Inspect handles: " +
					"tick them in the App's settings (Permissions & events), as docs/deploy.md's upgrade section says")
			}
			return slug, nil
		}
		if permanent(err) {
			return "", fmt.Errorf("asking GitHub who this App is (GET /app): %w (check github.app_id, github.private_key and github.api_url)", err)
		}
		log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).Msg("GitHub did not answer at start; retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("waiting for GitHub at start: %w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
		if wait *= 2; wait > b.Max {
			wait = b.Max
		}
	}
}

func askApp(ctx context.Context, gh ghclient.GitHubClients) (slug string, events []string, err error) {
	c, err := gh.App(ctx)
	if err != nil {
		return "", nil, err
	}
	app, _, err := c.Apps.Get(ctx, "")
	if err != nil {
		return "", nil, err
	}
	if app.GetSlug() == "" {
		return "", nil, errors.New("GET /app answered without a slug")
	}
	return app.GetSlug(), app.Events, nil
}

func permanent(err error) bool {
	var rl *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &rl) || errors.As(err, &abuse) {
		return false
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusUnauthorized, http.StatusNotFound:
			return true
		}
	}
	return false
}
