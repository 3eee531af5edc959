package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/contract"
)

// BuildkiteHookPath is where Buildkite delivers webhooks (build.running,
// build.finished, job.finished) for the session pipeline.
const BuildkiteHookPath = "/api/buildkite/hook"

// Limits of Buildkite webhooks.
const (
	// buildkiteHookMaxBytes caps a webhook body: a build payload with its
	// pipeline is a few KiB; 1 MiB leaves room and bounds memory.
	buildkiteHookMaxBytes = 1 << 20
	// buildkiteHookMaxAge is how far a signed webhook's timestamp may be
	// from our clock, either way, before it is refused as a replay.
	buildkiteHookMaxAge = 5 * time.Minute
)

// buildkiteEvent is the part of a Buildkite webhook we read.
type buildkiteEvent struct {
	Event string `json:"event"`
	Build struct {
		WebURL   string            `json:"web_url"`
		State    string            `json:"state"`
		MetaData map[string]string `json:"meta_data"`
	} `json:"build"`
	Job *struct {
		State string `json:"state"`
	} `json:"job"`
}

// handleBuildkiteHook authenticates a Buildkite webhook, then records the
// build's state on its attempt: build.running shows in the progress comment
// and check run; build.finished and job.finished queue the result's
// collection, which does nothing if the supervisor's upload came first.
// Other events are acknowledged and ignored. Nothing here is trusted until
// the token or signature checks out, and nothing is changed for a build
// that is not the attempt's current run.
func (s *Service) handleBuildkiteHook(w http.ResponseWriter, r *http.Request) {
	log := s.log.With().Str("buildkite_request", r.Header.Get("X-Buildkite-Request")).Str("event", r.Header.Get("X-Buildkite-Event")).Logger()
	body, err := readBody(w, r, buildkiteHookMaxBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read body", http.StatusBadRequest)
		return
	}
	if why := s.buildkiteHookRefusal(r.Header, body); why != "" {
		log.Warn().Str("why", why).Msg("buildkite webhook refused")
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	var ev buildkiteEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "body is not a Buildkite webhook", http.StatusBadRequest)
		return
	}
	if ev.Event == "" {
		ev.Event = r.Header.Get("X-Buildkite-Event")
	}
	switch ev.Event {
	case "build.running", "build.finished", "job.finished":
	default:
		w.WriteHeader(http.StatusOK) // ping and the rest: acknowledged, ignored
		return
	}
	sessionID := ev.Build.MetaData[contract.MetaSession]
	number, err := strconv.Atoi(ev.Build.MetaData[contract.MetaAttempt])
	if sessionID == "" || err != nil {
		w.WriteHeader(http.StatusOK) // a build of the pipeline not started by us
		return
	}
	log = log.With().Str("session_id", sessionID).Int("attempt", number).Logger()
	ctx := log.WithContext(r.Context())
	a, err := s.store.AttemptByNumber(ctx, sessionID, number)
	// Only the attempt's recorded build counts. Meta-data alone proves
	// nothing (anyone who can create a build can set it), so a build whose
	// creation was not recorded is adopted by reconcile, which finds it on
	// the configured pipeline, never from a webhook.
	if errors.Is(err, store.ErrNotFound) || (err == nil && (a.ExternalID == "" || a.ExternalID != ev.Build.WebURL)) {
		log.Info().Msg("buildkite webhook for no current run; ignored")
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		log.Error().Err(err).Msg("buildkite webhook: store unavailable")
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	if err := s.onBuildkiteEvent(ctx, a, ev); err != nil {
		log.Error().Err(err).Msg("buildkite webhook: store unavailable")
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Service) onBuildkiteEvent(ctx context.Context, a store.Attempt, ev buildkiteEvent) error {
	state := ev.Build.State
	if ev.Event == "job.finished" && ev.Job != nil && ev.Job.State != "" {
		state = "job " + ev.Job.State
	}
	if ev.Event == "build.running" && a.ExternalState != "" && a.ExternalState != "scheduled" {
		return nil // late: webhooks may arrive out of order; never go back to running
	}
	kind := store.SyncSession
	if ev.Event != "build.running" {
		kind = store.CollectResult
	}
	var then []store.NewWork
	if a.State != store.AttemptEnded { // once reported, the state is only for show
		then = append(then, store.NewWork{Kind: kind, SessionID: a.SessionID, Payload: a.ID})
	}
	changed, err := s.store.SetAttemptExternalState(ctx, a.ID, state, s.clock.Now(), then...)
	if err != nil || !changed {
		return err // a repeat
	}
	zerolog.Ctx(ctx).Info().Str("build_state", state).Msg("buildkite build changed")
	s.wakeWorkers()
	return nil
}

// buildkiteHookRefusal checks a webhook's X-Buildkite-Signature
// ("timestamp=<unix>,signature=<hex HMAC-SHA256 of "<unix>.<body>">") or,
// without one, its X-Buildkite-Token, against buildkite.webhook_token in
// constant time. It returns why it refuses, or "".
func (s *Service) buildkiteHookRefusal(h http.Header, body []byte) string {
	secret := s.cfg.Buildkite.WebhookToken
	if secret == "" {
		return "buildkite webhooks are not configured"
	}
	if sig := h.Get("X-Buildkite-Signature"); sig != "" {
		var stamp, mac string
		for _, part := range strings.Split(sig, ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "timestamp":
				stamp = v
			case "signature":
				mac = v
			}
		}
		unix, err := strconv.ParseInt(stamp, 10, 64)
		got, hexErr := hex.DecodeString(mac)
		if err != nil || hexErr != nil || len(got) != sha256.Size {
			return "malformed signature"
		}
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(stamp + "."))
		m.Write(body)
		if !hmac.Equal(got, m.Sum(nil)) {
			return "bad signature"
		}
		// Checked after the MAC, so the answer to a forgery does not say
		// whether its timestamp would have passed.
		if age := s.clock.Now().Sub(time.Unix(unix, 0)); age > buildkiteHookMaxAge || age < -buildkiteHookMaxAge {
			return "stale signature"
		}
		return ""
	}
	token := h.Get("X-Buildkite-Token")
	if token == "" {
		return "missing X-Buildkite-Token or X-Buildkite-Signature"
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(secret)) != 1 {
		return "bad token"
	}
	return ""
}
