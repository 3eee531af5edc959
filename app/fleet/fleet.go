// Package fleet is what the replicas sharing one database (decision 0015)
// must agree on beyond leased work items (store.Claim already runs each
// step on one replica at a time): which replicas are alive (heartbeats),
// which replica runs a periodic job this interval (ticks), when the
// periodic duties run, and the sweep that asks GitHub to redeliver the
// webhooks no replica accepted.
//
// It schedules and keeps the replica table; it must not act on sessions.
// The periodic loop's work is the engine's (the reconcile func RunPeriodic
// is handed), and what becomes of a dead replica's attempts the engine
// decides, asking MayJudgeReplicas first.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/clock"
	"github.com/inspecthq/inspect/config"
)

// Store is the part of the store the fleet uses (*store.Store): the
// replica table, the periodic jobs' ticks, and the redelivery counts.
type Store interface {
	Heartbeat(ctx context.Context, replica string, now time.Time) error
	LiveReplicas(ctx context.Context, since time.Time) (int, error)
	PruneReplicas(ctx context.Context, before time.Time) error
	Leave(ctx context.Context, replica string) error
	ClaimTick(ctx context.Context, name, owner string, now time.Time, every time.Duration) (bool, error)
	DeliveryKnown(ctx context.Context, deliveryID string) (bool, error)
	Redeliveries(ctx context.Context, guid string) (int, error)
	RecordRedelivery(ctx context.Context, guid string, now time.Time) error
	PruneRedeliveries(ctx context.Context, before time.Time) error
}

// AppClient hands out the App's own (JWT) client, which lists and
// redelivers the App's webhook deliveries (ghclient.GitHubClients).
type AppClient interface {
	App(ctx context.Context) (*github.Client, error)
}

// Options are a Fleet's parts.
type Options struct {
	// Name is this replica's name in leases, heartbeats and attempt hosts
	// (ReplicaName).
	Name   string
	Store  Store
	GitHub AppClient
	Clock  clock.Clock
	Logger zerolog.Logger
	// ClassifyError says how the sweep treats GitHub's answer to a
	// redelivery, as the engine treats any step's: wait > 0 is a rate
	// limit, refused a refusal no retry changes. Required.
	ClassifyError func(err error, now time.Time) (wait time.Duration, refused bool)
	// Heartbeat is how often this replica beats (workers.heartbeat).
	Heartbeat time.Duration
	// ReplicaTimeout is how long a replica without a beat counts as alive
	// (workers.replica_timeout).
	ReplicaTimeout time.Duration
	// PollInterval is how often the periodic duties run (workers.poll_interval).
	PollInterval time.Duration
	// Redelivery is the sweep's schedule and caps (github.redelivery).
	Redelivery config.Redelivery
	// OnFleetSize, when set, hears after each heartbeat how many
	// replicas are alive (this one among them): each takes its share of
	// what GitHub counts across the fleet (decision 0054).
	OnFleetSize func(live int)
}

// Fleet is this replica's membership of the fleet.
type Fleet struct {
	name           string
	store          Store
	gh             AppClient
	clock          clock.Clock
	log            zerolog.Logger
	classify       func(err error, now time.Time) (time.Duration, bool)
	heartbeat      time.Duration
	replicaTimeout time.Duration
	pollInterval   time.Duration
	redelivery     config.Redelivery
	onFleetSize    func(live int)
	// beatingSince is when this replica's current run of successful
	// heartbeats began, in Unix ms; 0 after a failure (see Beat).
	beatingSince atomic.Int64
}

// New wires a Fleet.
func New(o Options) *Fleet {
	return &Fleet{
		name: o.Name, store: o.Store, gh: o.GitHub, clock: o.Clock, log: o.Logger, classify: o.ClassifyError,
		heartbeat: o.Heartbeat, replicaTimeout: o.ReplicaTimeout, pollInterval: o.PollInterval, redelivery: o.Redelivery,
		onFleetSize: o.OnFleetSize,
	}
}

// ReplicaName names this replica in leases, heartbeats and attempt hosts:
// the host name (for people reading the tables) and randomness (for two
// processes on one host, or a restart, which must not inherit a dead
// process's attempts as its own).
func ReplicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "inspect"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
	return strings.ReplaceAll(host, "/", "-") + "-" + hex.EncodeToString(b[:])
}

// Due reports whether this replica runs the periodic job name now: one
// replica of the fleet per interval. A store failure says no (the job waits
// for the next poll) and is logged.
func (f *Fleet) Due(ctx context.Context, name string, every time.Duration) bool {
	ok, err := f.store.ClaimTick(ctx, name, f.name, f.clock.Now(), every)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("job", name).Msg("could not claim the periodic job; trying next poll")
		return false
	}
	return ok
}

// periodic runs this replica's periodic duties once: the engine's
// reconcile, and the fleet's redelivery sweep when this replica wins it.
// Failures are logged; the next poll tries again. The heartbeat is not
// among them: a long pass (a thousand target checks, a sweep after an
// outage) must not make this replica look dead.
func (f *Fleet) periodic(ctx context.Context, reconcile func(context.Context) error) {
	if err := reconcile(ctx); err != nil {
		f.log.Error().Err(err).Msg("reconcile failed")
	}
	if r := f.redelivery; r.Interval > 0 && f.Due(ctx, "redelivery_sweep", r.Interval) {
		n, err := f.SweepDeliveries(ctx)
		if err != nil {
			f.log.Warn().Err(err).Msg("redelivery sweep stopped early")
		}
		if n > 0 {
			f.log.Info().Int("redelivered", n).Msg("asked GitHub to redeliver failed deliveries")
		}
	}
}

// RunPeriodic runs the periodic duties at once and then every poll
// interval, until stop is closed; it returns when the pass under way has.
// reconcile is the engine's: it makes sure every session reaches an end.
// It runs every poll on every replica; its fleet-wide parts ask Due
// themselves.
func (f *Fleet) RunPeriodic(stop <-chan struct{}, ctx context.Context, reconcile func(context.Context) error) {
	// The jobs log through the context (zerolog.Ctx), as work items do.
	ctx = f.log.With().Str("replica", f.name).Logger().WithContext(ctx)
	t := time.NewTicker(f.pollInterval)
	defer t.Stop()
	for {
		f.periodic(ctx, reconcile)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Beat records that this replica is alive. beatingSince is when the
// current run of successful beats began (0 after a failure): a replica
// whose own beats failed (the database was away) cannot tell a dead peer
// from one whose beats failed too, so it judges none until it has beaten
// for a whole workers.replica_timeout again.
func (f *Fleet) Beat(ctx context.Context) {
	now := f.clock.Now()
	if err := f.store.Heartbeat(ctx, f.name, now); err != nil {
		f.beatingSince.Store(0)
		f.log.Warn().Err(err).Msg("heartbeat failed")
		return
	}
	f.beatingSince.CompareAndSwap(0, now.UnixMilli())
	if err := f.store.PruneReplicas(ctx, now.Add(-10*f.replicaTimeout)); err != nil {
		f.log.Warn().Err(err).Msg("pruning old replicas failed")
	}
	if f.onFleetSize != nil {
		live, err := f.store.LiveReplicas(ctx, now.Add(-f.replicaTimeout))
		if err != nil {
			// The share stays as it was until the next beat.
			f.log.Warn().Err(err).Msg("counting the live replicas failed")
			return
		}
		f.onFleetSize(max(live, 1)) // this one has just beaten, whatever the count says
	}
}

// RunHeartbeats beats every workers.heartbeat until stop is closed.
func (f *Fleet) RunHeartbeats(stop <-chan struct{}, ctx context.Context) {
	t := time.NewTicker(f.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f.Beat(ctx)
		}
	}
}

// MayJudgeReplicas reports whether this replica's own heartbeats have
// held long enough to call another replica dead (see Beat).
func (f *Fleet) MayJudgeReplicas(now time.Time) bool {
	since := f.beatingSince.Load()
	return since != 0 && now.Sub(time.UnixMilli(since)) >= f.replicaTimeout
}

// Leave removes this replica from the replica table, so nobody waits out
// its heartbeat: for a replica that stops cleanly.
func (f *Fleet) Leave(ctx context.Context) error {
	return f.store.Leave(ctx, f.name)
}
