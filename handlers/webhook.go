package handlers

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"
)

// GitHubWebhook is the front of every GitHub webhook: load shedding, the
// body's size cap, the signature against every active secret, then
// go-githubapp's dispatcher to the event handlers of this package.
type GitHubWebhook struct {
	// Secrets are the active webhook secrets (two during a rotation).
	Secrets  []string
	Handlers []githubapp.EventHandler
	// MaxBodyBytes caps a body (413 past it).
	MaxBodyBytes int64
	// MaxInflight sheds webhooks with 503 past this many at once (0: no
	// limit), counted in Inflight, which the server owns.
	MaxInflight int64
	Inflight    *atomic.Int64
	Log         zerolog.Logger

	once       sync.Once
	dispatcher http.Handler
}

// StoreError is a sink's failure to persist; the webhook answers 503 so
// GitHub records a failed delivery that can be redelivered.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "store unavailable: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// IsStoreError reports whether err is a StoreError.
func IsStoreError(err error) bool {
	var se *StoreError
	return errors.As(err, &se)
}

// ServeHTTP verifies the signature against every active secret (two during a
// rotation) in constant time, then hands the request to go-githubapp's
// dispatcher. go-githubapp checks one secret only, so it is given none: with
// an empty secret and no signature header go-github's ValidatePayload skips
// the signature (which we have just checked) and still validates content
// type and body. The dispatcher is reachable only through this function,
// and config validation refuses an empty github.webhook_secret, so nothing
// unsigned gets through.
func (h *GitHubWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(func() {
		h.dispatcher = githubapp.NewEventDispatcher(h.Handlers, "",
			githubapp.WithErrorCallback(webhookError),
			githubapp.WithScheduler(githubapp.DefaultScheduler()))
	})
	maxBody := h.MaxBodyBytes
	log := h.Log.With().Str("delivery_id", r.Header.Get("X-GitHub-Delivery")).Str("event", r.Header.Get("X-GitHub-Event")).Logger()
	r = r.WithContext(log.WithContext(r.Context()))
	if limit := h.MaxInflight; limit > 0 {
		// Shed before reading the body: under overload the cheapest
		// answer is the right one. GitHub records the 503 and the
		// redelivery sweep asks for the delivery again.
		if h.Inflight.Add(1) > limit {
			h.Inflight.Add(-1)
			log.Warn().Int64("limit", limit).Msg("overloaded: webhook shed with 503")
			w.Header().Set("Retry-After", "10")
			http.Error(w, "overloaded; redeliver later", http.StatusServiceUnavailable)
			return
		}
		defer h.Inflight.Add(-1)
	}
	body, err := ReadBody(w, r, maxBody)
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
	if matchingSecret(h.Secrets, body, sig) < 0 {
		log.Warn().Msg("webhook signature matches no active secret")
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	// Verified; go-github would re-check any signature header present
	// against the dispatcher's empty secret and fail, so drop them.
	r.Header.Del("X-Hub-Signature-256")
	r.Header.Del("X-Hub-Signature")
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.dispatcher.ServeHTTP(w, r)
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
func webhookError(w http.ResponseWriter, r *http.Request, err error) {
	log := zerolog.Ctx(r.Context())
	var ve githubapp.ValidationError
	switch {
	case errors.As(err, &ve):
		log.Warn().Err(ve.Cause).Msg("invalid webhook")
		http.Error(w, "invalid webhook headers or payload", http.StatusBadRequest)
	case IsPayloadError(err):
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
