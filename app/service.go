// Package app is Inspect's session engine: it stores what the webhook
// handlers hand over, runs the session state machine in workers, and brings
// GitHub in line with the store. Decisions come from package policy, words
// from app/render; app does the I/O, through its rooms (app/ghwrite,
// app/channel, app/snapshots, app/fleet, …). docs/ARCHITECTURE.md, "Where
// things live", maps each question to its file.
package app

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/baselines"
	"github.com/inspecthq/inspect/app/clock"
	"github.com/inspecthq/inspect/app/dashboard"
	"github.com/inspecthq/inspect/app/fates"
	"github.com/inspecthq/inspect/app/fleet"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/app/readtoken"
	"github.com/inspecthq/inspect/app/reconcile"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/app/repoconfig"
	"github.com/inspecthq/inspect/app/snapshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/transition"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/handlers"
)

// CheckRunName is the name of Inspect's check run.
const CheckRunName = "Inspect"

// Service accepts triggers and runs the work they create.
type Service struct {
	cfg   config.Server
	store *store.Store
	gh    ghclient.GitHubClients
	clock clock.Clock
	log   zerolog.Logger
	self  atomic.Pointer[handlers.Identity]
	// gate holds webhooks and workers until GitHub names the App
	// (Options.AwaitGitHub, Started).
	gate *startGate
	wake chan struct{}
	// executor runs attempts; nil accepts and prepares sessions but never
	// dispatches them (the control plane alone).
	executor   Executor
	channelURL string
	// readTokens mints and revokes the supervisors' and builds' read
	// tokens (app/readtoken).
	readTokens *readtoken.Tokens
	// repoConfigs reads repos' configs, cached and fresh (app/repoconfig).
	repoConfigs *repoconfig.Configs
	// snapshots is the snapshot scheduler (app/snapshots).
	snapshots *snapshots.Scheduler
	// baselines links session attempts to the base's verify and starts
	// baseline attempts (app/baselines, decision 0080).
	baselines *baselines.Dispatcher
	version   string
	// fleet is this replica's membership of the fleet: heartbeats, the
	// periodic schedule, the redelivery sweep.
	fleet *fleet.Fleet
	// registryProxy answers the registry egress for every attempt, with
	// this replica's artifact cache.
	registryProxy *registryproxy.Proxy
	// inflightWebhooks counts webhooks being accepted, for load shedding.
	inflightWebhooks atomic.Int64
	// defaultBranches guesses each repository's default branch, so its
	// config is read beside the repository (decisionreads.go).
	defaultBranches defaultBranchMemo
	// metrics is the registry /metrics serves (app/metrics), on
	// metricsLn when set.
	metrics   *metrics.Metrics
	metricsLn net.Listener
	// WorkerName identifies this replica's workers in leases.
	WorkerName string
	// dash is the dashboard, built once on first use (app/dashboard).
	dash *dashboard.Dashboard
	// transitions makes every change of a session's state (app/transition).
	transitions *transition.Writer
	// reconciler is the periodic reconcile pass (app/reconcile).
	reconciler *reconcile.Reconciler
	// work runs each kind of work item (worker.go's workTable).
	work map[store.WorkKind]workHandler
	// fates keeps what became of the PRs Inspect opened (app/fates).
	fates *fates.Recorder
	// prov signs each attempt that reports a change (app/provenance);
	// nil without provenance keys.
	prov *provenance.Attester
}

// Options are a Service's parts.
type Options struct {
	Config     config.Server
	Store      *store.Store
	GitHub     ghclient.GitHubClients
	Clock      clock.Clock
	Logger     zerolog.Logger
	WorkerName string
	Executor   Executor
	// ChannelURL overrides config's channel_url (tests, the demo).
	ChannelURL string
	// SnapshotExecutor, when set (Buildkite), starts snapshot builds as
	// attempts on the executor instead of building in this process.
	SnapshotExecutor Executor
	// Version is `inspect version`, for user agents and snapshot labels.
	Version string
	// SnapshotBuilder builds snapshots on this host (supervisor.BuildSnapshot
	// with the local executor); nil means snapshot builds fail with a clear
	// error and sessions clone cold.
	SnapshotBuilder SnapshotBuilder
	// RegistryCache keeps registry artifacts for this replica's attempts
	// (egress.cache; cmd opens it); nil keeps none.
	RegistryCache *registryproxy.Cache
	// Metrics is the registry, when transports built before the service
	// (GitHub's, Buildkite's) record into it; nil: the service makes one.
	Metrics *metrics.Metrics
	// MetricsListener, when set, is where Serve serves /metrics
	// (metrics.listen; cmd opens it); nil serves no metrics.
	MetricsListener net.Listener
	// OnFleetSize, when set, hears after each heartbeat how many replicas
	// are alive (ghclient.ShareConcurrency: this replica's share of
	// github.outbound.max_concurrent).
	OnFleetSize func(live int)
	// AwaitGitHub, when set, is how Serve learns the App's slug (GET /app,
	// retried until GitHub answers): Serve listens at once but answers
	// only /healthz and /readyz until it returns (decision 0067). nil: the
	// identity is known already (config, ResolveIdentity).
	AwaitGitHub func(ctx context.Context) (slug string, err error)
}

// NewService wires a Service.
func NewService(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	if o.WorkerName == "" {
		o.WorkerName = fleet.ReplicaName()
	}
	s := &Service{
		cfg: o.Config, store: o.Store, gh: o.GitHub, clock: o.Clock, log: o.Logger,
		wake: make(chan struct{}, 1), WorkerName: o.WorkerName,
		executor: o.Executor, channelURL: o.ChannelURL,
		version: o.Version, fleet: newFleet(o),
		registryProxy: registryproxy.New(registryproxy.Options{Upstreams: o.Config, Cache: o.RegistryCache, Now: o.Clock.Now,
			MaxInFlightPerAttempt: o.Config.Egress.MaxRegistryRequestsPerAttempt, MaxInFlight: o.Config.Egress.MaxRegistryRequests}),
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.channelURL == "" {
		s.channelURL = o.Config.ChannelURL
	}
	s.transitions = &transition.Writer{Store: o.Store, Now: o.Clock.Now, StopAttempt: s.stopAttempt, Wake: s.wakeWorkers, Log: o.Logger}
	s.metrics, s.metricsLn = newMetrics(o, s), o.MetricsListener
	s.readTokens = readtoken.New(o.GitHub)
	s.repoConfigs = &repoconfig.Configs{
		Store: o.Store, Loader: config.NewRepoLoader(), Now: o.Clock.Now, MaxAge: o.Config.RepoConfigMaxAge,
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
	}
	s.snapshots = newSnapshots(s, o)
	s.repoConfigs.Schedule = s.snapshots.Schedule
	s.dash = dashboard.New(dashboard.Options{
		Config: o.Config, Store: o.Store, Commands: s, Now: o.Clock.Now, Log: o.Logger,
		AsUser: func(ctx context.Context, userID int64, token string) (*github.Client, error) {
			return s.gh.AsUser(ctx, userID, token)
		},
		Installation: func(ctx context.Context, id int64) (*github.Client, error) { return s.gh.Installation(ctx, id) },
	})
	s.fates = newFates(s)
	s.baselines = &baselines.Dispatcher{Store: o.Store, Executor: o.Executor, ChannelURL: s.channelURL, Enabled: o.Config.Sessions.Baseline,
		Now: o.Clock.Now, NewID: newID, Wake: s.wakeWorkers, StopAttempt: s.stopAttempt, PollInterval: o.Config.Workers.PollInterval,
		Postpone: func(after time.Duration, why string) error { return &postponed{after: after, why: why} }}
	if hostsAttempts(o.Executor, o.Config.Executor.Kind) {
		// Its baseline sandboxes live and die with this replica, as its
		// sessions' do (see replaceDeadHostAttempt).
		s.baselines.Host = o.WorkerName
	}
	if keys, err := provenance.LoadKeyring(o.Config.Provenance); err != nil {
		// `inspect serve` refuses to start on this (serveWith); a
		// service built otherwise says it loudly and attests nothing.
		o.Logger.Error().Err(err).Msg("the provenance keys could not be read: no attempt is attested")
	} else if keys != nil {
		s.prov = &provenance.Attester{Keys: keys, Store: o.Store, Now: o.Clock.Now, PublicURL: o.Config.Web.PublicURL}
	}
	s.reconciler = newReconciler(s)
	s.work = workTable(s)
	s.self.Store(&handlers.Identity{AppID: o.Config.GitHub.AppID, AppSlug: o.Config.GitHub.AppSlug})
	s.gate = newStartGate(o.AwaitGitHub)
	return s
}

// Started is closed once the App's identity is known (Options.AwaitGitHub
// answered) and Serve takes webhooks and runs workers.
func (s *Service) Started() <-chan struct{} { return s.gate.started }

// Identity is our own app, used to ignore our own events.
func (s *Service) Identity() handlers.Identity { return *s.self.Load() }

// ResolveIdentity asks GitHub for the App's slug when the config lacks it.
func (s *Service) ResolveIdentity(ctx context.Context) error {
	id := s.Identity()
	if id.AppSlug != "" {
		return nil
	}
	c, err := s.gh.App(ctx)
	if err != nil {
		return err
	}
	app, _, err := c.Apps.Get(ctx, "")
	if err != nil {
		return fmt.Errorf("asking GitHub who this App is (GET /app): %w", err)
	}
	id.AppSlug = app.GetSlug()
	s.self.Store(&id)
	return nil
}

// idEncoding keeps byte order in string order (0-9 then a-v).
var idEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newID returns a session id that sorts by creation time: 48 bits of Unix
// milliseconds, then 40 random bits. Ordered ids append to the right edge of
// the primary-key index instead of dirtying a random page per insert.
func newID() string {
	var b [11]byte
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:]) // crypto/rand.Read does not fail on Linux
	return strings.ToLower(idEncoding.EncodeToString(b[:]))
}

// replyPayload is a PostReply work item.
type replyPayload struct {
	Owner          string `json:"owner"`
	Repo           string `json:"repo"`
	InstallationID int64  `json:"installation_id"`
	Number         int    `json:"number"`
	// ReviewThread, when set, is the review thread (its first comment)
	// the reply goes to, instead of the issue or PR's conversation.
	ReviewThread int64  `json:"review_thread,omitempty"`
	Marker       string `json:"marker"`
	Body         string `json:"body"`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain structs are marshalled here.
		panic(fmt.Sprintf("marshalling %T: %v", v, err))
	}
	return string(b)
}

// snapshotPushDebounce is how long after a push to a default branch its
// snapshot is rebuilt: pushes in a burst share one build.
const snapshotPushDebounce = time.Minute

func (s *Service) wakeWorkers() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending; one is enough
	}
}
