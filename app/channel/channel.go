// Package channel is the app's side of the session channel: the backend of
// contract.ChannelServer, which serves the routes `inspect runner` (the
// supervisor) calls and makes every check (contract.ChannelRefusals,
// decision 0046). It claims an attempt, serves its spec or snapshot job,
// mints the supervisor's read token, and takes progress and results.
// Claim codes and session tokens are stored only as hashes.
//
// It also owns the egress proxy, the far end of the sandbox's only way
// out, behind the same session-token check. Today that is the model route
// (egress_model.go, over app/modelproxy, which `inspect run` serves too). The registry routes (goproxy, npm, pypi) belong
// beside it, in egress_registry.go, behind that same check.
//
// The channel decides nothing about a session's life. It reads attempts
// and records progress and snapshot results through the narrow Store it
// declares, and is handed the rest at construction: the engine's claim
// and result recording (funcs), the read tokens (ReadTokens), the end of
// a session over its budget (Budget), the workers' wake-up. It must not
// import package app, and it writes nothing to GitHub itself.
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
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
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
	PutAgentState(ctx context.Context, attemptID, sessionID string, data []byte, now time.Time) error
	AgentState(ctx context.Context, attemptID string) ([]byte, error)
	// AppendOutput keeps a live output chunk, and the attempt's last keep
	// bytes of them.
	AppendOutput(ctx context.Context, c store.OutputChunk, keep int64) (bool, error)
	ReserveModelTokens(ctx context.Context, attemptID, id string, tokens int64, lim store.ReserveLimits, now time.Time) (store.Reserved, error)
	SettleModelTokens(ctx context.Context, id string, u store.Usage, now time.Time) (store.Usage, error)
	// RecordProgress stores an attempt's progress event (already cleaned).
	RecordProgress(ctx context.Context, attemptID string, seq int64, message string, now time.Time) (bool, error)
	// RecordSnapshotResult stores a snapshot build's outcome; first is
	// whether this upload was the one that counted.
	RecordSnapshotResult(ctx context.Context, attemptID, resultJSON string, o store.SnapshotOutcome, now time.Time) (first bool, err error)
	// DeliverTurns and TurnsAfter hand a running session's turns to its
	// supervisor (turns.go).
	DeliverTurns(ctx context.Context, sessionID, attemptID string, upto int, now time.Time) error
	TurnsAfter(ctx context.Context, sessionID string, after int) ([]session.Turn, error)
	// SetRecorder keeps an attempt's newest flight recorder (JSON).
	SetRecorder(ctx context.Context, attemptID, recorder string) error
	// BaselineOfAttempt is the baseline a baseline attempt runs
	// (decision 0080); RecordBaselineResult ends the attempt with its
	// upload and finishes the baseline, once.
	BaselineOfAttempt(ctx context.Context, attemptID string) (store.Baseline, error)
	RecordBaselineResult(ctx context.Context, attemptID, resultJSON string, state store.BaselineState, why, evidence string, now time.Time) (first bool, err error)
}

// ReadTokens mints a supervisor's read token and revokes an attempt's
// (*readtoken.Tokens).
type ReadTokens interface {
	// MintFor mints a read-only token for one repository and remembers it
	// under the attempt, to be revoked when it ends.
	MintFor(ctx context.Context, attemptID string, installationID, repoID int64) (token string, expiresAt time.Time, err error)
	// RevokeAttempt revokes the tokens minted for the attempt.
	RevokeAttempt(ctx context.Context, attemptID string)
}

// Budget ends a session whose model tokens passed its budget
// (*transition.Writer).
type Budget interface {
	// EndForBudget ends the attempt's session and stops the attempt.
	EndForBudget(ctx context.Context, a store.Attempt, used store.Usage, budget int64)
	// EndForMoneyBudget ends the attempt's session, its repository's or
	// installation's day's spend having reached a money budget (d, its
	// refusal), and stops the attempt.
	EndForMoneyBudget(ctx context.Context, a store.Attempt, d policy.Decision)
}

// Providers is the server's model providers (agents.providers);
// config.Server implements it.
type Providers = modelproxy.Providers

// Options are a Channel's parts.
type Options struct {
	Store Store
	// Claim exchanges the attempt's claim code for its session token,
	// once (store.ErrClaimRefused otherwise), and moves the session to
	// running: the engine's claim.
	Claim func(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error)
	// RecordResult stores a session attempt's result upload, validated:
	// the engine's.
	RecordResult func(ctx context.Context, attemptID string, up contract.ResultUpload) error
	ReadTokens   ReadTokens
	Budget       Budget
	// Wake tells the engine's workers there is work.
	Wake   func()
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
	// MoneyBudgets are the server's money budgets per repository and per
	// installation (policy.Limits' DailyMoney*; 0: none), which stop a
	// running session at its next model request, its tokens priced by
	// Cost (config.Server.ModelCost; nil: no money budget is kept).
	MoneyBudgets policy.Limits
	Cost         func(model string, u contract.TokenUsage) (float64, bool)
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
	claim         func(ctx context.Context, attemptID, claimCode, sessionToken string) (store.Attempt, error)
	recordResult  func(ctx context.Context, attemptID string, up contract.ResultUpload) error
	readTokens    ReadTokens
	budget        Budget
	wake          func()
	clock         clock.Clock
	log           zerolog.Logger
	registryProxy *registryproxy.Proxy
	egressIdle    time.Duration
	tokenBudget   int64
	money         policy.Limits
	cost          func(model string, u contract.TokenUsage) (float64, bool)
	maxInFlight   int
	models        *modelproxy.Proxy
	metrics       *metrics.Metrics
}

// New wires a Channel.
func New(o Options) *Channel {
	c := &Channel{
		store: o.Store, claim: o.Claim, recordResult: o.RecordResult, readTokens: o.ReadTokens, budget: o.Budget, wake: o.Wake,
		clock: o.Clock, log: o.Logger,
		registryProxy: o.RegistryProxy, egressIdle: o.EgressIdleTimeout, tokenBudget: o.TokenBudget,
		money: policy.Limits{DailyMoneyPerRepo: o.MoneyBudgets.DailyMoneyPerRepo, DailyMoneyPerInstallation: o.MoneyBudgets.DailyMoneyPerInstallation}, cost: o.Cost,
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

// Routes registers the channel's routes on mux: contract's one session
// channel (contract.ChannelServer, its checks in contract.ChannelRefusals'
// order) over this backend.
func (c *Channel) Routes(mux *http.ServeMux) {
	contract.NewChannelServer[store.Attempt](c, contract.ChannelServerOptions{Now: c.clock.Now, OnRefusal: c.refused}).Register(mux)
}

// refused logs a refused request: a supervisor that does not speak the
// channel as the app does, or a caller without the attempt's token.
func (c *Channel) refused(r *http.Request, status int, err error) {
	l := c.log.Warn().Str("attempt_id", r.PathValue(contract.PathValueAttempt)).Str("channel", r.URL.Path).Int("status", status)
	if status >= http.StatusInternalServerError {
		l = c.log.Error().Str("attempt_id", r.PathValue(contract.PathValueAttempt)).Str("channel", r.URL.Path).Int("status", status)
	}
	l.Err(err).Msg("channel request refused")
}

// attemptLog is the logger of a request for attempt a: its attempt, its
// session and the delivery that started it, and the route.
func (c *Channel) attemptLog(ctx context.Context, a store.Attempt) *zerolog.Logger {
	lc := c.log.With().Str("attempt_id", a.ID).Str("channel", contract.ChannelRouteOf(ctx))
	if a.SessionID != "" {
		lc = lc.Str("session_id", a.SessionID).Str("delivery_id", a.DeliveryID)
	}
	l := lc.Logger()
	return &l
}

// Serves serves every route: the app is the channel's whole far end.
func (c *Channel) Serves(string) error { return nil }

// Claim exchanges the claim code for a new session token, and wakes the
// workers for the session that now runs.
func (c *Channel) Claim(ctx context.Context, id, claimCode string) (contract.ClaimResponse, error) {
	token := contract.NewSecret()
	a, err := c.claim(ctx, id, claimCode, token)
	switch {
	case errors.Is(err, store.ErrClaimRefused):
		return contract.ClaimResponse{}, contract.ErrClaimRefused
	case err != nil:
		// Nothing was spent: the transaction rolled back.
		return contract.ClaimResponse{}, err
	}
	c.wake()
	return contract.ClaimResponse{SessionToken: token, ExpiresAt: a.Deadline.Add(sessionTokenTTLGrace), Kind: contract.AttemptKind(a.Kind)}, nil
}

// Authenticate checks the session token of a claimed attempt, and says
// whether it has ended (cancelled, timed out, reported).
func (c *Channel) Authenticate(ctx context.Context, id, sessionToken string) (store.Attempt, contract.ChannelAttempt, error) {
	a, err := c.store.AuthenticateAttempt(ctx, id, sessionToken)
	if err != nil {
		return store.Attempt{}, contract.ChannelAttempt{}, err
	}
	return a, contract.ChannelAttempt{Kind: contract.AttemptKind(a.Kind), Ended: a.State == store.AttemptEnded,
		Expires: a.Deadline.Add(sessionTokenTTLGrace)}, nil
}

// Spec is the attempt's spec, stored already encoded and validated at
// dispatch.
func (c *Channel) Spec(_ context.Context, a store.Attempt) ([]byte, error) {
	return []byte(a.Spec), nil
}

// SnapshotJob is the build's job, stored encoded and validated at
// dispatch.
func (c *Channel) SnapshotJob(_ context.Context, a store.Attempt) ([]byte, error) {
	return []byte(a.Spec), nil
}

// Egress hands an egress route's request to the model or the registry
// proxy.
func (c *Channel) Egress(_ context.Context, a store.Attempt, route string) http.Handler {
	if route == contract.PathEgressModel {
		return c.metrics.Egress(metrics.EgressModel, func(w http.ResponseWriter, r *http.Request) { c.handleEgressModel(w, r, a) })
	}
	return c.metrics.Egress(metrics.EgressRegistry, func(w http.ResponseWriter, r *http.Request) { c.handleEgressRegistry(w, r, a) })
}

// RepoToken mints a read-only token for the one repository, for the
// supervisor's own fetch. It is never given to the sandbox.
func (c *Channel) RepoToken(ctx context.Context, a store.Attempt) (contract.RepoTokenResponse, error) {
	var installationID, repoID int64
	switch a.Kind {
	case string(contract.KindSnapshot):
		sr, err := c.store.GetSnapshotRepo(ctx, a.RepoID)
		if err != nil {
			return contract.RepoTokenResponse{}, err
		}
		installationID, repoID = sr.InstallationID, sr.RepoID
	case string(contract.KindBaseline):
		b, err := c.store.BaselineOfAttempt(ctx, a.ID)
		if err != nil {
			return contract.RepoTokenResponse{}, err
		}
		installationID, repoID = b.InstallationID, b.RepoID
	default:
		sess, err := c.store.GetSession(ctx, a.SessionID)
		if err != nil {
			return contract.RepoTokenResponse{}, err
		}
		installationID, repoID = sess.InstallationID, sess.RepoID
	}
	tok, expires, err := c.readTokens.MintFor(ctx, a.ID, installationID, repoID)
	if err != nil {
		c.attemptLog(ctx, a).Error().Err(err).Msg("minting the repo token failed")
		return contract.RepoTokenResponse{}, contract.Refusal(http.StatusServiceUnavailable, contract.ErrorInvalid, "could not mint a repository token")
	}
	return contract.RepoTokenResponse{Token: tok, ExpiresAt: expires}, nil
}

// Progress records a progress event, its message cleaned for GitHub.
func (c *Channel) Progress(ctx context.Context, a store.Attempt, ev contract.ProgressEvent) error {
	_, err := c.store.RecordProgress(ctx, a.ID, ev.Seq, contract.CleanProgressMessage(ev.Message), c.clock.Now())
	return err
}

// Output keeps a chunk of a session attempt's live output for the
// dashboard. The supervisor redacted it; the store keeps only the
// attempt's tail (contract.MaxLiveOutputBytes).
func (c *Channel) Output(ctx context.Context, a store.Attempt, o contract.OutputChunk) error {
	chunk := store.OutputChunk{SessionID: a.SessionID, AttemptID: a.ID, Seq: o.Seq, Phase: string(o.Phase),
		Command: o.Command, Text: o.Text, CreatedAt: c.clock.Now()}
	if _, err := c.store.AppendOutput(ctx, chunk, contract.MaxLiveOutputBytes); err != nil {
		c.attemptLog(ctx, a).Warn().Err(err).Msg("storing live output failed")
		return err
	}
	return nil
}

// Result records a session attempt's result and wakes the workers to
// report it.
func (c *Channel) Result(ctx context.Context, a store.Attempt, up contract.ResultUpload, _ []byte) error {
	// The comparison with the base is the app's, made at report time
	// (decision 0080): a supervisor's word on it is dropped.
	up.Evidence.Baseline = nil
	if a.Kind == string(contract.KindBaseline) {
		return c.baselineResult(ctx, a, up)
	}
	// The state first: a failure is retried with the whole upload, and a
	// continuation dispatched once the result is in finds it.
	if err := c.keepAgentState(ctx, a, up); err != nil {
		return err
	}
	up.AgentState = nil // kept once, as an artifact; the result is the evidence and the change
	if err := c.recordResult(ctx, a.ID, up); err != nil {
		return err
	}
	c.wake()
	return nil
}

// baselineResult records a baseline attempt's result on its baseline
// (decision 0080): done with the base's commands and tests when its verify
// ran (ok or verify_failed), failed saying why otherwise. It ends the
// attempt, revokes its read token and wakes the workers for the reports
// that wait for it; it never reports to GitHub.
func (c *Channel) baselineResult(ctx context.Context, a store.Attempt, up contract.ResultUpload) error {
	ev := up.Evidence
	state, why := store.BaselineDone, ""
	switch ev.Outcome {
	case contract.OutcomeOK, contract.OutcomeVerifyFailed:
	default:
		state, why = store.BaselineFailed, "the base's verify ended "+string(ev.Outcome)
		if ev.Reason != "" {
			why += ": " + ev.Reason
		}
		why = contract.CleanProgressMessage(why)
	}
	up.Manifest, up.AgentState, up.Evidence.Diff = nil, nil, nil // a baseline has no change and no agent
	contract.NewRedactor().RedactStrings(&up)
	body, err := json.Marshal(up)
	if err != nil {
		return contract.Refusal(http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
	}
	base := ""
	if state == store.BaselineDone {
		b, err := json.Marshal(store.BaseEvidence{Outcome: ev.Outcome, Commands: ev.Commands, Tests: ev.Tests})
		if err != nil {
			return contract.Refusal(http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
		}
		base = string(b)
	}
	first, err := c.store.RecordBaselineResult(ctx, a.ID, string(body), state, why, base, c.clock.Now())
	if err != nil || !first {
		return err
	}
	log := c.attemptLog(ctx, a).With().Int64("repo_id", a.RepoID).Str("baseline", a.BaselineDigest).Logger()
	c.readTokens.RevokeAttempt(log.WithContext(ctx), a.ID)
	log.Info().Str("outcome", string(ev.Outcome)).Str("state", string(state)).Msg("the base's verify reported")
	c.wake()
	return nil
}

// SnapshotResult records a snapshot build's outcome on the repo's
// schedule, once, and collects old snapshots after a new one.
func (c *Channel) SnapshotResult(ctx context.Context, a store.Attempt, res contract.SnapshotResult) error {
	var job contract.SnapshotJob
	if err := json.Unmarshal([]byte(a.Spec), &job); err != nil || (res.Digest != "" && res.SHA != job.SHA) {
		return contract.Refusal(http.StatusBadRequest, contract.ErrorInvalid, "the result is not for this job's commit")
	}
	// The supervisor redacted the log, the error and the egress audit's
	// paths with the build's token; the patterns go over the whole result
	// again before any of it is stored, logged or shown.
	contract.NewRedactor().RedactStrings(&res)
	body, err := json.Marshal(res)
	if err != nil {
		return contract.Refusal(http.StatusInternalServerError, contract.ErrorInvalid, "could not store the result")
	}
	// The store keeps the commit, branch and footprint only with a digest.
	o := store.SnapshotOutcome{Digest: res.Digest, Error: res.Error, Log: res.Log, Egress: res.Egress,
		SHA: res.SHA, Branch: job.Repo.DefaultBranch, Size: res.Size, Layers: res.Layers}
	first, err := c.store.RecordSnapshotResult(ctx, a.ID, string(body), o, c.clock.Now())
	if err != nil {
		return err
	}
	if first {
		// From the build attempt's creation: its dispatch and its run.
		c.metrics.SnapshotBuilt(res.Digest != "", c.clock.Now().Sub(a.CreatedAt))
		log := c.attemptLog(ctx, a).With().Int64("repo_id", a.RepoID).Logger()
		c.readTokens.RevokeAttempt(log.WithContext(ctx), a.ID)
		if res.Digest == "" {
			log.Error().Str("error", res.Error).Msg("snapshot build failed; the previous snapshot stays")
		} else {
			log.Info().Str("digest", res.Digest).Str("sha", res.SHA).Msg("snapshot built")
			c.wake() // to collect the old ones
		}
	}
	return nil
}
