// Package app is Inspect's server: it accepts triggers durably, runs the
// session state machine in workers, and brings GitHub in line with the
// store. Decisions come from package policy; app only does the I/O.
package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/fleet"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/handlers"
	"github.com/inspecthq/inspect/policy"
)

// CheckRunName is the name of Inspect's check run.
const CheckRunName = "Inspect"

// Service accepts triggers and runs the work they create.
type Service struct {
	cfg    config.Server
	store  *store.Store
	gh     ghclient.GitHubClients
	clock  Clock
	log    zerolog.Logger
	loader *config.RepoLoader
	self   atomic.Pointer[handlers.Identity]
	wake   chan struct{}
	// executor runs attempts; nil accepts and prepares sessions but never
	// dispatches them (the control plane alone).
	executor   Executor
	channelURL string
	tokens     repoTokens
	snapStore  snapshotStore
	// buildSnapshotFn builds snapshots (Options.SnapshotBuilder).
	buildSnapshotFn SnapshotBuilder
	// snapshotExec starts snapshot builds on the executor (Options).
	snapshotExec Executor
	version      string
	// fleet is this replica's membership of the fleet: heartbeats, the
	// periodic schedule, the redelivery sweep.
	fleet *fleet.Fleet
	// inflightWebhooks counts webhooks being accepted, for load shedding.
	inflightWebhooks atomic.Int64
	// parsed memoises the cached repo configs' parses for the webhook path.
	parsed parsedConfigs
	// WorkerName identifies this replica's workers in leases.
	WorkerName string
}

// Options are a Service's parts.
type Options struct {
	Config     config.Server
	Store      *store.Store
	GitHub     ghclient.GitHubClients
	Clock      Clock
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
}

// NewService wires a Service.
func NewService(o Options) *Service {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.WorkerName == "" {
		o.WorkerName = fleet.ReplicaName()
	}
	s := &Service{
		cfg: o.Config, store: o.Store, gh: o.GitHub, clock: o.Clock, log: o.Logger,
		loader: config.NewRepoLoader(), wake: make(chan struct{}, 1), WorkerName: o.WorkerName,
		executor: o.Executor, channelURL: o.ChannelURL,
		buildSnapshotFn: o.SnapshotBuilder, version: o.Version, snapshotExec: o.SnapshotExecutor,
		fleet: newFleet(o),
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.channelURL == "" {
		s.channelURL = o.Config.ChannelURL
	}
	s.self.Store(&handlers.Identity{AppID: o.Config.GitHub.AppID, AppSlug: o.Config.GitHub.AppSlug})
	return s
}

func (s *Service) userAgent() string { return "inspect/" + s.version }

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

// StoreError is a failure to persist; the server answers 503 so GitHub
// records a failed delivery that can be redelivered.
type StoreError struct{ Err error }

func (e *StoreError) Error() string { return "store unavailable: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// IsStoreError reports whether err is a StoreError.
func IsStoreError(err error) bool {
	var se *StoreError
	return errors.As(err, &se)
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

func replyWork(t handlers.Trigger, marker, body string) store.NewWork {
	p := replyPayload{
		Owner: t.Repo.Owner, Repo: t.Repo.Name, InstallationID: t.InstallationID, Number: t.Number,
		Marker: marker, Body: body,
	}
	if t.Kind == handlers.KindReviewComment && t.Review != nil {
		p.ReviewThread = t.Review.ThreadRoot(t.CommentID)
	}
	return store.NewWork{Kind: store.PostReply, Payload: mustJSON(p)}
}

// AcceptTrigger implements handlers.Sink. It decides from local state only
// (server config, the repo-config cache, the trigger) and returns after the
// decision is on disk.
func (s *Service) AcceptTrigger(ctx context.Context, t handlers.Trigger) error {
	now := s.clock.Now()
	a := store.Acceptance{DeliveryID: t.DeliveryID, Event: t.Event, At: now}
	switch t.Kind {
	case handlers.KindComment:
		a.CommentID = t.CommentID
	case handlers.KindReviewComment:
		// Review comments number apart from issue comments.
		a.ClaimKey = fmt.Sprintf("review-comment:%d", t.CommentID)
	case handlers.KindLabel, handlers.KindUnlabel:
		ok, err := s.isTriggerLabel(ctx, t.Repo.ID, t.Label)
		if err != nil {
			return &StoreError{Err: err}
		}
		if !ok {
			zerolog.Ctx(ctx).Debug().Str("label", t.Label).Msg("label ignored: not this repo's trigger label")
			return nil
		}
		if t.Kind == handlers.KindLabel {
			t.Command.Instructions = render.LabelInstructions(t.Number, t.IssueTitle)
		}
	}
	switch {
	case t.Command.Kind == policy.Reply:
		body := render.WithIgnoredNote(t.Command.Reply, t.Command.Ignored, s.cfg.CommandWord)
		// Help is for everyone but bots off the allowlist: they get the
		// refusal instead, so no bot can make us talk without being trusted.
		if d := policy.Authorize(policy.Facts{SenderLogin: t.Sender.Login, SenderType: t.Sender.Type,
			AllowedBots: s.cfg.Policy.AllowedBots, Subcommand: policy.Help}); !d.Allowed {
			body = d.Reply
		}
		a.Work = []store.NewWork{replyWork(t, render.ReplyMarker(t), body)}
	case t.Command.Sub == policy.Run:
		sess := &store.Session{
			ID: newID(), RepoID: t.Repo.ID, RepoOwner: t.Repo.Owner, RepoName: t.Repo.Name,
			InstallationID: t.InstallationID, Number: t.Number, IsPR: t.IsPR, TriggerKind: triggerComment,
			DeliveryID: t.DeliveryID, RequesterLogin: t.Sender.Login,
			RequesterID: t.Sender.ID, RequesterType: t.Sender.Type, Instructions: t.Command.Instructions,
			Truncated: t.Command.Truncated, IgnoredCommands: t.Command.Ignored, State: store.Queued,
		}
		switch t.Kind {
		case handlers.KindComment:
			sess.CommentID = t.CommentID
		case handlers.KindReviewComment:
			sess.TriggerKind = triggerReviewComment
			r := t.Review
			if r == nil {
				r = &handlers.ReviewComment{}
			}
			sess.TriggerInfo = triggerInfo{Review: &reviewInfo{
				CommentID: t.CommentID, ThreadID: r.ThreadRoot(t.CommentID), Path: r.Path, Line: r.Line, StartLine: r.StartLine,
				Side: r.Side, DiffHunk: r.DiffHunk, CommitID: r.CommitID,
			}}.encode()
		case handlers.KindLabel:
			sess.TriggerKind = triggerLabel
			sess.TriggerInfo = triggerInfo{Label: t.Label}.encode()
		}
		paused, err := s.pausedLocally(ctx, t)
		if err != nil {
			return &StoreError{Err: err}
		}
		if paused.Allowed {
			a.Work = []store.NewWork{{Kind: store.PrepareSession}}
		} else {
			// Refused from local state: no network, no 👀; the sync posts
			// the one reply.
			sess.State, sess.Outcome, sess.Reason, sess.Detail = store.Done, store.Refused, string(paused.Reason), paused.Reply
			a.Work = []store.NewWork{{Kind: store.SyncSession}}
		}
		a.Session = sess
	default:
		t.AcceptedAt = now
		a.Work = []store.NewWork{{Kind: store.RunCommand, Payload: mustJSON(t)}}
	}
	res, err := s.store.Accept(ctx, a)
	if err != nil {
		return &StoreError{Err: err}
	}
	ev := zerolog.Ctx(ctx).Info().Str("result", res.String()).Str("trigger", cmp.Or(string(t.Kind), "comment"))
	if a.Session != nil && res == store.Accepted {
		ev = ev.Str("session_id", a.Session.ID).Str("state", string(a.Session.State))
	}
	ev.Msg("trigger accepted")
	s.wakeWorkers()
	return nil
}

// pausedLocally checks the two pause switches from local state. A cache miss
// errs on the side of accepting; the worker re-checks with the fresh config.
func (s *Service) pausedLocally(ctx context.Context, t handlers.Trigger) (policy.Decision, error) {
	// A cached pause is trusted only while fresh (cachedRepoConfig): were
	// the push that lifted it lost, an old entry would otherwise refuse
	// forever without looking. Past repo_config_max_age the trigger is
	// accepted and the worker reads the config again.
	cfg, known, err := s.cachedRepoConfig(ctx, t.Repo.ID)
	if err != nil {
		return policy.Decision{}, err
	}
	repoPaused := known && !cfg.IsEnabled()
	if !s.cfg.Paused && !repoPaused {
		return policy.Decision{Allowed: true}, nil
	}
	// Authorize checks pauses first, so with pause facts set its decision is
	// the pause refusal whatever the other facts are.
	return policy.Authorize(policy.Facts{
		SenderLogin: t.Sender.Login, SenderType: t.Sender.Type,
		ServerPaused: s.cfg.Paused, RepoPaused: repoPaused, Subcommand: policy.Run,
	}), nil
}

// AcceptConfigPush implements handlers.Sink: it queues a cache refresh.
func (s *Service) AcceptConfigPush(ctx context.Context, p handlers.ConfigPush) error {
	now := s.clock.Now()
	res, err := s.store.Accept(ctx, store.Acceptance{
		DeliveryID: p.DeliveryID, Event: "push", At: now,
		Work: []store.NewWork{{Kind: store.RefreshRepoConfig, Payload: mustJSON(p)}},
	})
	if err != nil {
		return &StoreError{Err: err}
	}
	zerolog.Ctx(ctx).Info().Str("result", res.String()).Str("repo", p.Repo.FullName()).Bool("org_wide", p.OrgWide).Msg("config refresh queued")
	s.wakeWorkers()
	return nil
}

// snapshotPushDebounce is how long after a push to a default branch its
// snapshot is rebuilt: pushes in a burst share one build.
const snapshotPushDebounce = time.Minute

// DefaultBranchMoved implements handlers.Sink: a repo that wants snapshots
// gets its next build within snapshotPushDebounce. A failure only delays
// the rebuild to the regular refresh, so it is logged, not answered 503.
func (s *Service) DefaultBranchMoved(ctx context.Context, repo handlers.Repo) {
	if s.cfg.Snapshots.Store == "" {
		return
	}
	if err := s.store.SnapshotSoon(ctx, repo.ID, s.clock.Now().Add(snapshotPushDebounce)); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("repo", repo.FullName()).Msg("bringing the snapshot rebuild forward failed")
	}
}

func (s *Service) wakeWorkers() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending; one is enough
	}
}
