package app

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/handlers"
)

// startGate holds webhooks and workers back until GitHub has named the
// App (GET /app): before that, only /healthz (200: the process is alive)
// and /readyz (503) answer, and every other route 503 with Retry-After,
// so no webhook is taken before the App's slug tells our own events apart
// (decision 0067). GitHub redelivers what fails meanwhile, as in any
// outage.
type startGate struct {
	// await is how the gate learns the App's slug; nil: nothing to wait
	// for, the gate is open from the start.
	await func(ctx context.Context) (slug string, err error)
	// started is closed once the slug is known.
	started chan struct{}
}

func newStartGate(await func(context.Context) (string, error)) *startGate {
	g := &startGate{await: await, started: make(chan struct{})}
	if await == nil {
		close(g.started)
	}
	return g
}

// startRetryAfter (seconds) is a third of the start backoff's 30 s ceiling.
const startRetryAfter = "10"

// learn waits for GitHub (nothing to wait for without await), keeps the
// slug in self unless the config named another, and opens the gate.
func (g *startGate) learn(ctx context.Context, self *atomic.Pointer[handlers.Identity], log zerolog.Logger) error {
	if g.await == nil {
		return nil
	}
	slug, err := g.await(ctx)
	if err != nil {
		return err
	}
	id := *self.Load()
	if id.AppSlug != "" && id.AppSlug != slug {
		log.Warn().Str("configured", id.AppSlug).Str("github", slug).Msg("github.app_slug differs from the App's slug on GitHub; using the configured one")
	} else {
		id.AppSlug = slug
		self.Store(&id)
	}
	close(g.started)
	return nil
}

// wrap answers for next once the gate is open, and as above before.
func (g *startGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-g.started:
			next.ServeHTTP(w, r)
			return
		default:
		}
		getOrHead := r.Method == http.MethodGet || r.Method == http.MethodHead
		switch {
		case r.URL.Path == "/healthz" && getOrHead:
			_, _ = io.WriteString(w, "ok\n") // a failed write to a gone client needs no handling
		case r.URL.Path == "/readyz" && getOrHead:
			http.Error(w, "not ready: waiting for GitHub to answer GET /app (the App's slug is not known yet)", http.StatusServiceUnavailable)
		default:
			w.Header().Set("Retry-After", startRetryAfter)
			http.Error(w, "starting: waiting for GitHub to answer GET /app; retry later", http.StatusServiceUnavailable)
		}
	})
}
