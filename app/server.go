package app

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/handlers"
)

// WebhookPath is where GitHub delivers webhooks.
const WebhookPath = githubapp.DefaultWebhookRoute

// Handler returns the app's HTTP routes: the webhook, /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	eventHandlers := []githubapp.EventHandler{
		&handlers.IssueComment{Sink: s, CommandWord: s.cfg.CommandWord, Self: s.Identity},
		&handlers.PullRequestReviewComment{Sink: s, CommandWord: s.cfg.CommandWord, Self: s.Identity},
		&handlers.Issues{Sink: s, Self: s.Identity},
		&handlers.CheckRun{Sink: s, Self: s.Identity},
		&handlers.CheckSuite{Sink: s, Self: s.Identity},
		&handlers.Status{Sink: s, Self: s.Identity},
		&handlers.Push{Sink: s},
		handlers.Ping{},
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+WebhookPath, s.webhook(eventHandlers))
	s.sessionChannel().Routes(mux)
	if s.cfg.Buildkite.WebhookToken != "" {
		mux.Handle("POST "+BuildkiteHookPath, &handlers.BuildkiteHook{Secret: s.cfg.Buildkite.WebhookToken, Sink: buildSink{s}, Now: s.clock.Now, Log: s.log})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n") // a failed write to a gone client needs no handling
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			s.log.Warn().Err(err).Msg("not ready: database does not answer")
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ready\n") // as above
	})
	return mux
}

// webhook verifies the signature against every active secret (two during a
// rotation) in constant time, then hands the request to go-githubapp's
// dispatcher. go-githubapp checks one secret only, so it is given none: with
// an empty secret and no signature header go-github's ValidatePayload skips
// the signature (which we have just checked) and still validates content type and body. The
// dispatcher is reachable only through this function, and config validation
// refuses an empty github.webhook_secret, so nothing unsigned gets through.
func (s *Service) webhook(eventHandlers []githubapp.EventHandler) http.Handler {
	secrets := s.cfg.WebhookSecrets()
	dispatcher := githubapp.NewEventDispatcher(eventHandlers, "",
		githubapp.WithErrorCallback(s.webhookError),
		githubapp.WithScheduler(githubapp.DefaultScheduler()))
	maxBody := s.cfg.HTTP.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.With().Str("delivery_id", r.Header.Get("X-GitHub-Delivery")).Str("event", r.Header.Get("X-GitHub-Event")).Logger()
		r = r.WithContext(log.WithContext(r.Context()))
		if limit := int64(s.cfg.HTTP.MaxInflightWebhooks); limit > 0 {
			// Shed before reading the body: under overload the cheapest
			// answer is the right one. GitHub records the 503 and the
			// redelivery sweep asks for the delivery again.
			if s.inflightWebhooks.Add(1) > limit {
				s.inflightWebhooks.Add(-1)
				log.Warn().Int64("limit", limit).Msg("overloaded: webhook shed with 503")
				w.Header().Set("Retry-After", "10")
				http.Error(w, "overloaded; redeliver later", http.StatusServiceUnavailable)
				return
			}
			defer s.inflightWebhooks.Add(-1)
		}
		body, err := handlers.ReadBody(w, r, maxBody)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				log.Warn().Int64("limit", maxBody).Msg("webhook body too large")
				http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "could not read body", http.StatusBadRequest)
			return
		}
		sig := r.Header.Get("X-Hub-Signature-256")
		if sig == "" {
			log.Warn().Msg("webhook without X-Hub-Signature-256")
			http.Error(w, "missing signature", http.StatusUnauthorized)
			return
		}
		if matchingSecret(secrets, body, sig) < 0 {
			log.Warn().Msg("webhook signature matches no active secret")
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Verified; go-github would re-check any signature header present
		// against the dispatcher's empty secret and fail, so drop them.
		r.Header.Del("X-Hub-Signature-256")
		r.Header.Del("X-Hub-Signature")
		r.Body = io.NopCloser(bytes.NewReader(body))
		dispatcher.ServeHTTP(w, r)
	})
}

// matchingSecret returns the index of the secret that signed body, or -1.
// Every secret is checked, in constant time per comparison.
func matchingSecret(secrets []string, body []byte, header string) int {
	got, err := hex.DecodeString(strings.TrimPrefix(header, "sha256="))
	if err != nil || !strings.HasPrefix(header, "sha256=") {
		return -1
	}
	found := -1
	for i, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if hmac.Equal(mac.Sum(nil), got) && found < 0 {
			found = i
		}
	}
	return found
}

// webhookError maps failures to status codes GitHub's delivery log shows:
// a bad payload 400, a store that cannot write 503 (so the delivery can be
// redelivered), anything else 500. No internals reach the response.
func (s *Service) webhookError(w http.ResponseWriter, r *http.Request, err error) {
	log := zerolog.Ctx(r.Context())
	var ve githubapp.ValidationError
	switch {
	case errors.As(err, &ve):
		log.Warn().Err(ve.Cause).Msg("invalid webhook")
		http.Error(w, "invalid webhook headers or payload", http.StatusBadRequest)
	case handlers.IsPayloadError(err):
		log.Warn().Err(err).Msg("malformed webhook payload")
		http.Error(w, "malformed payload", http.StatusBadRequest)
	case IsStoreError(err):
		log.Error().Err(err).Msg("could not persist webhook")
		http.Error(w, "temporarily unable to accept; redeliver later", http.StatusServiceUnavailable)
	default:
		log.Error().Err(err).Msg("webhook failed")
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
	}
}

// Serve runs the HTTP server and the workers until ctx is cancelled (SIGTERM),
// then drains: the listener stops taking requests, in-flight requests finish,
// workers stop claiming and finish what they hold, all within
// http.shutdown_timeout.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HTTP.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.HTTP.ReadTimeout,
		WriteTimeout:      s.cfg.HTTP.WriteTimeout,
		IdleTimeout:       s.cfg.HTTP.IdleTimeout,
	}
	stopWorkers := make(chan struct{})
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	workersDone := make(chan struct{})
	go func() {
		defer close(workersDone)
		s.RunWorkers(stopWorkers, workCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	var err error
	served := false
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		served = true
	}
	s.log.Info().Msg("draining")
	// Workers stop claiming at once and finish what they hold, while the
	// HTTP server finishes its requests, both within the same deadline.
	close(stopWorkers)
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.HTTP.ShutdownTimeout)
	defer cancel()
	// Before the attempts are stopped: their sessions are given to the
	// fleet, so the stop reads as a handback, not as the sessions' end.
	s.handBack(drainCtx)
	if closer, ok := s.executor.(interface{ Close(context.Context) error }); ok {
		// Running attempts are stopped while the channel still answers, so
		// their supervisors can upload partial evidence (the local
		// executor's children would not outlive this process anyway).
		if err := closer.Close(drainCtx); err != nil {
			s.log.Warn().Err(err).Msg("attempts still running at the drain deadline")
		}
	}
	if shutErr := srv.Shutdown(drainCtx); shutErr != nil {
		s.log.Warn().Err(shutErr).Msg("requests still running at the drain deadline")
	}
	select {
	case <-workersDone:
	case <-drainCtx.Done():
		// Work still held is cut short and released (uncounted), so the
		// next start or another replica picks it up at once.
		cancelWork()
		<-workersDone
	}
	if !served {
		err = <-serveErr
	}
	// Gone cleanly: nobody has to wait out this replica's heartbeat. Its
	// own short deadline: the drain's may be spent by now.
	leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelLeave()
	if leaveErr := s.fleet.Leave(leaveCtx); leaveErr != nil {
		s.log.Warn().Err(leaveErr).Msg("could not record leaving the fleet")
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
