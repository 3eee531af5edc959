// Package channel is the session channel: the HTTP routes `inspect runner`
// (the supervisor) calls, with the paths, messages and rules
// contract owns. It claims an attempt, serves its spec or snapshot
// job, mints the supervisor's read token, and takes progress and results.
// Claim codes and session tokens are stored only as hashes.
//
// It also owns the egress proxy, the far end of the sandbox's only way
// out, behind the same session-token check. Today that is the model route
// (egress_model.go, over app/modelproxy, which `inspect run` serves too). The registry routes (goproxy, npm, pypi) belong
// beside it, in egress_registry.go, behind that same check.
//
// The channel decides nothing about a session's life. It reads attempts
// through the narrow Store it declares, and asks the session engine
// (Engine, which package app implements) for every change of state:
// recording progress and results, minting and remembering a read token,
// ending a session over its budget, waking the workers. It must not import
// package app, and it writes nothing to GitHub itself.
package channel

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/clock"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/modelproxy"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// sessionTokenTTLGrace is how long after its deadline an attempt's token
// still works, for the result upload.
const sessionTokenTTLGrace = 10 * time.Minute

// Store is what the channel reads and writes in the store itself: an
// attempt's claim and token, what it runs for, and its model usage.
// *store.Store implements it.
type Store interface {
	AuthenticateAttempt(ctx context.Context, id, sessionToken string) (store.Attempt, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetSnapshotRepo(ctx context.Context, repoID int64) (store.SnapshotRepo, error)
	SessionUsage(ctx context.Context, attemptID string) (store.Usage, error)
	PutArtifact(ctx context.Context, a store.Artifact, maxSessionBytes int64) error
	// AppendOutput keeps a live output chunk, and the attempt's last keep
	// bytes of them.
	AppendOutput(ctx context.Context, c store.OutputChunk, keep int64) (bool, error)
	ReserveModelTokens(ctx context.Context, attemptID, id string, tokens int64, lim store.ReserveLimits, now time.Time) (store.Reserved, error)
	SettleModelTokens(ctx context.Context, id string, u store.Usage, now time.Time) (store.Usage, error)
}

// Engine is what the channel asks of the session engine. The channel
// wakes the workers itself, after each write that gives them work.
type Engine interface {
	// ClaimAttempt exchanges the attempt's claim code for its session
	// token, once (store.ErrClaimRefused otherwise), and moves the session
	// to running.
	ClaimAttempt(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error)
	// WakeWorkers tells the engine's workers there is work.
	WakeWorkers(ctx context.Context)
	// RecordProgress stores an attempt's progress event (already cleaned).
	RecordProgress(ctx context.Context, attemptID string, seq int64, message string) error
	// RecordResult stores a session attempt's result upload, validated.
	RecordResult(ctx context.Context, attemptID string, up contract.ResultUpload) error
	// RecordSnapshotResult stores a snapshot build's outcome; first is
	// whether this upload was the one that counted.
	RecordSnapshotResult(ctx context.Context, attemptID, resultJSON string, o store.SnapshotOutcome) (first bool, err error)
	// MintReadToken mints a read-only token for one repository and
	// remembers it under the attempt, to be revoked when it ends.
	MintReadToken(ctx context.Context, attemptID string, installationID, repoID int64) (token string, expiresAt time.Time, err error)
	// RevokeReadTokens revokes the tokens minted for the attempt.
	RevokeReadTokens(ctx context.Context, attemptID string)
	// EndForBudget ends the attempt's session, whose model tokens passed
	// its budget, and stops the attempt.
	EndForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64)
}

// Providers is the server's model providers (agents.providers);
// config.Server implements it.
type Providers = modelproxy.Providers

// Options are a Channel's parts.
type Options struct {
	Store  Store
	Engine Engine
	Clock  clock.Clock
	Logger zerolog.Logger
	// RegistryProxy answers the registry route's requests once the
	// attempt is known (nil: one that reaches no upstream).
	RegistryProxy *registryproxy.Proxy
	// EgressIdleTimeout bounds an egress request's silences
	// (egress.idle_timeout; DefaultEgressIdleTimeout when 0).
	EgressIdleTimeout time.Duration
	// Providers are the model providers the egress proxy reaches.
	Providers Providers
	// TokenBudget is the per-session model token budget (0: none).
	TokenBudget int64
	// MaxModelRequestsInFlight caps a session's model requests at once
	// (agents.max_requests_in_flight; 0: config's default).
	MaxModelRequestsInFlight int
	// MaxModelRequestBytes and OutputReservation are the model proxy's
	// (modelproxy.Options).
	MaxModelRequestBytes, OutputReservation int64
	// ModelClient is the egress proxy's client to providers; nil is
	// modelproxy.NewClient's.
	ModelClient *http.Client
	// Metrics counts egress, tokens and snapshot builds (nil: nothing).
	Metrics *metrics.Metrics
}

// Channel serves the session channel's routes.
type Channel struct {
	store         Store
	engine        Engine
	clock         clock.Clock
	log           zerolog.Logger
	registryProxy *registryproxy.Proxy
	egressIdle    time.Duration
	tokenBudget   int64
	maxInFlight   int
	models        *modelproxy.Proxy
	metrics       *metrics.Metrics
}

// New wires a Channel.
func New(o Options) *Channel {
	c := &Channel{
		store: o.Store, engine: o.Engine, clock: o.Clock, log: o.Logger,
		registryProxy: o.RegistryProxy, egressIdle: o.EgressIdleTimeout, tokenBudget: o.TokenBudget,
		maxInFlight: o.MaxModelRequestsInFlight, metrics: o.Metrics,
		models: modelproxy.New(modelproxy.Options{Providers: o.Providers, Client: o.ModelClient,
			MaxRequestBytes: o.MaxModelRequestBytes, OutputReservation: o.OutputReservation, MaxInFlight: o.MaxModelRequestsInFlight}),
	}
	if c.maxInFlight <= 0 {
		c.maxInFlight = config.DefaultMaxModelRequestsInFlight
	}
	if c.registryProxy == nil {
		c.registryProxy = registryproxy.New(registryproxy.Options{})
	}
	return c
}

// Routes registers the channel's routes on mux.
func (c *Channel) Routes(mux *http.ServeMux) {
	mux.HandleFunc(contract.RouteClaim, c.handleClaim)
	mux.HandleFunc(contract.RouteSpec, c.authed(c.handleSpec))
	mux.HandleFunc(contract.RouteRepoToken, c.authed(c.handleRepoToken))
	mux.HandleFunc(contract.RouteProgress, c.authed(c.handleProgress))
	mux.HandleFunc(contract.RouteOutput, c.authed(c.handleOutput))
	mux.HandleFunc(contract.RouteResult, c.authed(c.handleResult))
	mux.HandleFunc(contract.RouteArtifact, c.authed(c.handleArtifact))
	mux.HandleFunc(contract.RouteSnapshotJob, c.authed(c.handleSnapshotJob))
	mux.HandleFunc(contract.RouteSnapshotResult, c.authed(c.handleSnapshotResult))
	mux.HandleFunc(contract.PathEgressModel, c.authed(c.metrics.Egress(metrics.EgressModel, c.handleEgressModel)))
	mux.HandleFunc(contract.PathEgressRegistry, c.authed(c.metrics.Egress(metrics.EgressRegistry, c.handleEgressRegistry)))
}

// channelLog is a request's logger: its attempt, and once authed, the
// attempt's session and the delivery that started it.
func (c *Channel) channelLog(r *http.Request) *zerolog.Logger {
	lc := c.log.With().Str("attempt_id", r.PathValue(contract.PathValueAttempt)).Str("channel", r.URL.Path)
	if a, ok := r.Context().Value(attemptKey{}).(store.Attempt); ok && a.SessionID != "" {
		lc = lc.Str("session_id", a.SessionID).Str("delivery_id", a.DeliveryID)
	}
	l := lc.Logger()
	return &l
}

func (c *Channel) handleClaim(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue(contract.PathValueAttempt)
	req, err := contract.DecodeClaimRequest(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid claim request")
		return
	}
	if req.SpecVersion != contract.SpecVersion {
		contract.WriteError(w, http.StatusConflict, contract.ErrorVersionMismatch, "this server sends "+contract.SpecVersion)
		return
	}
	if req.AttemptID != id {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "attempt id mismatch")
		return
	}
	token := contract.NewSecret()
	a, err := c.engine.ClaimAttempt(r.Context(), id, req.ClaimCode, token)
	switch {
	case errors.Is(err, store.ErrClaimRefused):
		c.channelLog(r).Warn().Msg("claim refused")
		contract.WriteError(w, http.StatusUnauthorized, contract.ErrorClaimUsed, "claim refused")
		return
	case err != nil:
		// Nothing was spent: the transaction rolled back. Try again.
		c.channelLog(r).Error().Err(err).Msg("claim failed")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	c.engine.WakeWorkers(r.Context())
	contract.WriteJSON(w, 0, contract.ClaimResponse{SessionToken: token, ExpiresAt: a.Deadline.Add(sessionTokenTTLGrace), Kind: contract.AttemptKind(a.Kind)})
}

type attemptKey struct{}

// authed checks the session token of a claimed attempt and refuses it once
// the attempt has ended (cancelled, timed out, reported).
func (c *Channel) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := c.store.AuthenticateAttempt(r.Context(), r.PathValue(contract.PathValueAttempt), r.Header.Get(contract.HeaderSessionToken))
		if err != nil {
			contract.WriteError(w, http.StatusUnauthorized, contract.ErrorUnauthorized, "bad session token")
			return
		}
		// A session's routes serve sessions, a snapshot build's serve
		// snapshot builds: a token of one kind is no key to the other.
		// The repo token and the registry route serve both: a snapshot
		// build clones, and its setup downloads what its job allows.
		snapshotRoute := r.Pattern == contract.RouteSnapshotJob || r.Pattern == contract.RouteSnapshotResult
		shared := r.Pattern == contract.RouteRepoToken || r.Pattern == contract.PathEgressRegistry
		if snapshotRoute != (a.Kind == string(contract.KindSnapshot)) && !shared {
			contract.WriteError(w, http.StatusConflict, contract.ErrorInvalid, "not a route for this kind of attempt")
			return
		}
		if a.State == store.AttemptEnded && r.Pattern != contract.RouteResult && r.Pattern != contract.RouteSnapshotResult {
			contract.WriteError(w, http.StatusGone, contract.ErrorAttemptEnded, "the attempt has ended")
			return
		}
		if c.clock.Now().After(a.Deadline.Add(sessionTokenTTLGrace)) {
			contract.WriteError(w, http.StatusGone, contract.ErrorAttemptEnded, "the attempt's token has expired")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), attemptKey{}, a)))
	}
}

func attemptOf(r *http.Request) store.Attempt { return r.Context().Value(attemptKey{}).(store.Attempt) }

func (c *Channel) handleSpec(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", contract.ContentTypeJSON)
	_, _ = w.Write([]byte(attemptOf(r).Spec)) // stored already encoded and validated at dispatch
}

// handleRepoToken mints a read-only token for the one repository, for the
// supervisor's own fetch. It is never given to the sandbox.
func (c *Channel) handleRepoToken(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	var installationID, repoID int64
	if a.Kind == string(contract.KindSnapshot) {
		sr, err := c.store.GetSnapshotRepo(r.Context(), a.RepoID)
		if err != nil {
			contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
			return
		}
		installationID, repoID = sr.InstallationID, sr.RepoID
	} else {
		sess, err := c.store.GetSession(r.Context(), a.SessionID)
		if err != nil {
			contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
			return
		}
		installationID, repoID = sess.InstallationID, sess.RepoID
	}
	tok, expires, err := c.engine.MintReadToken(r.Context(), a.ID, installationID, repoID)
	if err != nil {
		c.channelLog(r).Error().Err(err).Msg("minting the repo token failed")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "could not mint a repository token")
		return
	}
	contract.WriteJSON(w, 0, contract.RepoTokenResponse{Token: tok, ExpiresAt: expires})
}

func (c *Channel) handleProgress(w http.ResponseWriter, r *http.Request) {
	ev, err := contract.DecodeProgressEvent(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid progress event")
		return
	}
	if err := c.engine.RecordProgress(r.Context(), attemptOf(r).ID, ev.Seq, contract.CleanProgressMessage(ev.Message)); err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleOutput keeps a chunk of a session attempt's live output for the
// dashboard. The supervisor redacted it; the store keeps only the
// attempt's tail (contract.MaxLiveOutputBytes).
func (c *Channel) handleOutput(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r) // a session's: authed refuses a snapshot build's
	o, err := contract.DecodeOutputChunk(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid output chunk")
		return
	}
	chunk := store.OutputChunk{SessionID: a.SessionID, AttemptID: a.ID, Seq: o.Seq, Phase: string(o.Phase),
		Command: o.Command, Text: o.Text, CreatedAt: c.clock.Now()}
	if _, err := c.store.AppendOutput(r.Context(), chunk, contract.MaxLiveOutputBytes); err != nil {
		c.channelLog(r).Warn().Err(err).Msg("storing live output failed")
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *Channel) handleResult(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "stored spec unreadable")
		return
	}
	up, err := contract.DecodeResultUpload(r.Body, spec.Limits.Manifest())
	var tooLarge *contract.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		contract.WriteError(w, http.StatusRequestEntityTooLarge, contract.ErrorTooLarge, "result too large")
		return
	case err != nil:
		c.channelLog(r).Warn().Err(err).Msg("invalid result")
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid result: "+err.Error())
		return
	}
	if err := c.engine.RecordResult(r.Context(), a.ID, up); err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	c.engine.WakeWorkers(r.Context())
	w.WriteHeader(http.StatusNoContent)
}

func (c *Channel) handleSnapshotJob(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", contract.ContentTypeJSON)
	_, _ = w.Write([]byte(attemptOf(r).Spec)) // the job, stored encoded and validated at dispatch
}

// handleSnapshotResult records a snapshot build's outcome on the repo's
// schedule, once, and collects old snapshots after a new one.
func (c *Channel) handleSnapshotResult(w http.ResponseWriter, r *http.Request) {
	a := attemptOf(r)
	res, err := contract.DecodeSnapshotResult(r.Body)
	if err != nil {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "invalid snapshot result: "+err.Error())
		return
	}
	var job contract.SnapshotJob
	if err := json.Unmarshal([]byte(a.Spec), &job); err != nil || (res.Digest != "" && res.SHA != job.SHA) {
		contract.WriteError(w, http.StatusBadRequest, contract.ErrorInvalid, "the result is not for this job's commit")
		return
	}
	// The supervisor redacted the log and the error with the build's
	// token; the patterns go over the whole result again before any of it
	// is stored, logged or shown.
	contract.NewRedactor().RedactStrings(&res)
	body, err := json.Marshal(res)
	if err != nil {
		contract.WriteError(w, http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
		return
	}
	// The store keeps the commit, branch and footprint only with a digest.
	o := store.SnapshotOutcome{Digest: res.Digest, Error: res.Error, Log: res.Log,
		SHA: res.SHA, Branch: job.Repo.DefaultBranch, Size: res.Size, Layers: res.Layers}
	first, err := c.engine.RecordSnapshotResult(r.Context(), a.ID, string(body), o)
	if err != nil {
		contract.WriteError(w, http.StatusServiceUnavailable, contract.ErrorInvalid, "try again")
		return
	}
	if first {
		// From the build attempt's creation: its dispatch and its run.
		c.metrics.SnapshotBuilt(res.Digest != "", c.clock.Now().Sub(a.CreatedAt))
		log := c.channelLog(r).With().Int64("repo_id", a.RepoID).Logger()
		c.engine.RevokeReadTokens(log.WithContext(r.Context()), a.ID)
		if res.Digest == "" {
			log.Error().Str("error", res.Error).Msg("snapshot build failed; the previous snapshot stays")
		} else {
			log.Info().Str("digest", res.Digest).Str("sha", res.SHA).Msg("snapshot built")
			c.engine.WakeWorkers(r.Context()) // to collect the old ones
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
