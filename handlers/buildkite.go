package handlers

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

// BuildEvent is what a Buildkite webhook says about a build of the session
// pipeline: which event, which build (its web URL, the id the app recorded
// for the attempt), its state, and the meta-data the executor tagged it
// with. None of it is trusted beyond the webhook's signature: meta-data can
// be set by anyone who can create a build, so the app acts only on a build
// it recorded.
type BuildEvent struct {
	// Event is "build.running", "build.finished" or "job.finished".
	Event string
	// WebURL is the build's web URL.
	WebURL string
	// State is the build's state; for job.finished, "job <state>" when
	// the job has one.
	State    string
	MetaData map[string]string
}

// BuildSink is what the Buildkite webhook hands a build event to: the app,
// which records it on the build's attempt and queues the follow-up work.
type BuildSink interface {
	// AcceptBuildEvent records ev. It returns ErrNotOurs for a build that
	// is no current run of an attempt (acknowledged and ignored); any
	// other error means the event could not be stored and Buildkite
	// should send it again.
	AcceptBuildEvent(ctx context.Context, ev BuildEvent) error
}

// ErrNotOurs is a BuildSink's answer for a build that is not an attempt's
// current run.
var ErrNotOurs = errors.New("not a current run")

// BuildkiteHook authenticates Buildkite's webhooks and hands the build
// events it reads to a BuildSink. Like the GitHub handlers, it decides from
// the request alone and never calls the network: build.running shows in the
// progress comment and check run; build.finished and job.finished queue the
// result's collection, which does nothing if the supervisor's upload came
// first. Other events are acknowledged and ignored.
type BuildkiteHook struct {
	// Secret is buildkite.webhook_token: the webhook's token, or the key
	// of its signature. Empty refuses every webhook.
	Secret string
	Sink   BuildSink
	Now    func() time.Time
	Log    zerolog.Logger
}

// buildkitePayload is the part of a Buildkite webhook we read.
type buildkitePayload struct {
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

// ServeHTTP answers one webhook: 401 until the token or signature checks
// out, 413 past the size cap, 400 for a body that is not a webhook, 503
// when the event could not be stored, 200 otherwise.
func (h *BuildkiteHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.Log.With().Str("buildkite_request", r.Header.Get("X-Buildkite-Request")).Str("event", r.Header.Get("X-Buildkite-Event")).Logger()
	body, err := ReadBody(w, r, buildkiteHookMaxBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read body", http.StatusBadRequest)
		return
	}
	if why := h.refusal(r.Header, body); why != "" {
		log.Warn().Str("why", why).Msg("buildkite webhook refused")
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	var p buildkitePayload
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, "body is not a Buildkite webhook", http.StatusBadRequest)
		return
	}
	if p.Event == "" {
		p.Event = r.Header.Get("X-Buildkite-Event")
	}
	switch p.Event {
	case "build.running", "build.finished", "job.finished":
	default:
		w.WriteHeader(http.StatusOK) // ping and the rest: acknowledged, ignored
		return
	}
	ev := BuildEvent{Event: p.Event, WebURL: p.Build.WebURL, State: p.Build.State, MetaData: p.Build.MetaData}
	if p.Event == "job.finished" && p.Job != nil && p.Job.State != "" {
		ev.State = "job " + p.Job.State
	}
	switch err := h.Sink.AcceptBuildEvent(log.WithContext(r.Context()), ev); {
	case err == nil, errors.Is(err, ErrNotOurs):
		w.WriteHeader(http.StatusOK)
	default:
		// The build's meta-data names the session and attempt (as sent,
		// unverified: the store could not say).
		log.Error().Err(err).Interface("meta_data", ev.MetaData).Msg("buildkite webhook: store unavailable")
		http.Error(w, "try again", http.StatusServiceUnavailable)
	}
}

// refusal checks a webhook's X-Buildkite-Signature
// ("timestamp=<unix>,signature=<hex HMAC-SHA256 of "<unix>.<body>">") or,
// without one, its X-Buildkite-Token, against the secret in constant time.
// It returns why it refuses, or "".
func (h *BuildkiteHook) refusal(hdr http.Header, body []byte) string {
	if h.Secret == "" {
		return "buildkite webhooks are not configured"
	}
	if sig := hdr.Get("X-Buildkite-Signature"); sig != "" {
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
		m := hmac.New(sha256.New, []byte(h.Secret))
		m.Write([]byte(stamp + "."))
		m.Write(body)
		if !hmac.Equal(got, m.Sum(nil)) {
			return "bad signature"
		}
		// Checked after the MAC, so the answer to a forgery does not say
		// whether its timestamp would have passed.
		if age := h.Now().Sub(time.Unix(unix, 0)); age > buildkiteHookMaxAge || age < -buildkiteHookMaxAge {
			return "stale signature"
		}
		return ""
	}
	token := hdr.Get("X-Buildkite-Token")
	if token == "" {
		return "missing X-Buildkite-Token or X-Buildkite-Signature"
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(h.Secret)) != 1 {
		return "bad token"
	}
	return ""
}
