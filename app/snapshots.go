package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/contract"
)

// snapshotStore is the configured snapshot store, opened on first use.
type snapshotStore struct {
	once  sync.Once
	name  string // as the spec names it: a layout's path made absolute
	store images.Store
	err   error
}

func (s *Service) snapshots() (images.Store, string, error) {
	if s.cfg.Snapshots.Store == "" {
		return nil, "", nil
	}
	s.snapStore.once.Do(func() {
		name := s.cfg.Snapshots.Store
		if dir, ok := strings.CutPrefix(name, images.LayoutPrefix); ok && !filepath.IsAbs(dir) {
			// config.Load makes it absolute; a Service built from
			// config.Defaults() (tests, the demo) gets the same here.
			abs, err := filepath.Abs(dir)
			if err != nil {
				s.snapStore.err = err
				return
			}
			name = images.LayoutPrefix + abs
		}
		s.snapStore.name = name
		s.snapStore.store, s.snapStore.err = images.OpenStore(name)
	})
	return s.snapStore.store, s.snapStore.name, s.snapStore.err
}

// pinSnapshot gives the spec the repo's caches and snapshot setup, and
// pins its newest snapshot by digest when there is one. nil means the repo
// asks for no snapshot. Without a digest the session clones cold and runs
// the setup itself: snapshots are off, the repo has none yet, or the store
// cannot be read (a snapshot only makes a session faster, so its absence
// never stops one; it is logged).
func (s *Service) pinSnapshot(ctx context.Context, sess store.Session, cfg config.Repo, timeout time.Duration) *contract.Snapshot {
	if !cfg.WantsSnapshots() {
		return nil
	}
	out := &contract.Snapshot{
		Caches: cfg.SnapshotCaches(),
		Setup:  cfg.SnapshotSetupCommands(s.cfg.Sessions.CommandTimeout, timeout),
	}
	st, storeName, err := s.snapshots()
	if st == nil || err != nil {
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("snapshot store unavailable; cold clone")
		}
		return out
	}
	snap, err := st.Latest(ctx, sess.FullName())
	switch {
	case errors.Is(err, images.ErrNoSnapshot):
	case err != nil:
		zerolog.Ctx(ctx).Warn().Err(err).Msg("resolving the newest snapshot failed; cold clone")
	default:
		out.Store, out.Digest = storeName, snap.Digest.String()
	}
	return out
}

// scheduleSnapshots keeps the snapshot schedule in step with a repo's
// config, each time it is read: a repo that asks for snapshots is on it
// (due at once when new), one that no longer does is taken off.
func (s *Service) scheduleSnapshots(ctx context.Context, installationID, repoID int64, fullName string, cfg config.Repo) error {
	if s.cfg.Snapshots.Store == "" || repoID == 0 {
		return nil
	}
	if cfg.WantsSnapshots() && cfg.IsEnabled() {
		return s.store.WantSnapshots(ctx, repoID, fullName, installationID, s.clock.Now())
	}
	return s.store.ForgetSnapshots(ctx, repoID)
}

// snapshotBuildLease bounds one snapshot build: past it, a build that never
// reported is presumed dead and the repo may build again.
const snapshotBuildLease = time.Hour

// queueSnapshotBuilds queues a build for each repo whose snapshot is due
// (snapshots.refresh, or sooner after a push to its default branch).
func (s *Service) queueSnapshotBuilds(ctx context.Context) error {
	if s.cfg.Snapshots.Store == "" {
		return nil
	}
	// One build at a time across the fleet: each holds a worker for as long
	// as it runs, and sessions need the workers.
	n, err := s.store.ScheduleSnapshotBuilds(ctx, s.clock.Now(), s.cfg.Snapshots.Refresh, snapshotBuildLease, 1)
	if err != nil {
		return err
	}
	if n > 0 {
		zerolog.Ctx(ctx).Info().Int("builds", n).Msg("snapshot builds queued")
		s.wakeWorkers()
	}
	return nil
}

// SnapshotBuilder is runner.SnapshotBuilder: supervisor.BuildSnapshot on
// this host, which cmd/ hands over. Tests swap it.
type SnapshotBuilder = runner.SnapshotBuilder

// buildSnapshot is the BuildSnapshot work item: it builds the repo's
// snapshot at its default branch's head, on this host. Whatever happens is
// recorded on the repo's schedule and logged, and the work completes: a
// failed build keeps the previous snapshot, and the next refresh tries
// again.
func (s *Service) buildSnapshot(ctx context.Context, w *store.Work) error {
	repoID, err := strconv.ParseInt(w.Payload, 10, 64)
	if err != nil {
		return fmt.Errorf("snapshot build payload %q: %w", w.Payload, err)
	}
	r, err := s.store.GetSnapshotRepo(ctx, repoID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // no longer wanted
	}
	if err != nil {
		return err
	}
	log := zerolog.Ctx(ctx).With().Str("repo", r.FullName).Logger()
	ctx = log.WithContext(ctx)
	if err := s.store.StartSnapshotBuild(ctx, repoID, s.clock.Now().Add(snapshotBuildLease), s.clock.Now()); err != nil {
		return err
	}
	if s.buildSnapshotFn == nil && s.snapshotExec != nil {
		err := s.dispatchSnapshotBuild(ctx, r)
		if err == nil {
			return nil // the result comes over the channel
		}
		return s.finishSnapshotBuild(ctx, repoID, images.Snapshot{}, err)
	}
	if s.buildSnapshotFn == nil {
		return s.finishSnapshotBuild(ctx, repoID, images.Snapshot{}, fmt.Errorf("snapshot builds need executor.kind local or buildkite (it is %s)", s.cfg.Executor.Kind))
	}
	snap, err := s.buildSnapshotOf(ctx, r)
	return s.finishSnapshotBuild(ctx, repoID, snap, err)
}

// finishSnapshotBuild records a build's outcome on the repo's schedule.
func (s *Service) finishSnapshotBuild(ctx context.Context, repoID int64, snap images.Snapshot, err error) error {
	log := zerolog.Ctx(ctx)
	digest, why := "", ""
	if err != nil {
		why = contract.NewRedactor().Redact(err.Error())
		log.Error().Str("error", why).Msg("snapshot build failed; the previous snapshot stays")
	} else {
		digest = snap.Digest.String()
		log.Info().Str("digest", digest).Str("sha", snap.SHA).Msg("snapshot built")
	}
	// Recorded even when the build ran out of time: ctx may be done, and a
	// retry would only build again.
	book, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.FinishSnapshotBuild(book, repoID, digest, why, s.clock.Now()); err != nil {
		log.Error().Err(err).Msg("recording the snapshot build failed")
	}
	if isGone(err) {
		// The repo left the installation, or was deleted: stop building it.
		if err := s.store.ForgetSnapshots(book, repoID); err != nil {
			log.Warn().Err(err).Msg("taking the repo off the snapshot schedule failed")
		}
	}
	return nil
}

// isGone says whether err is GitHub saying the repo is not there (404) or
// not ours any more (403 that is not a rate limit).
func isGone(err error) bool {
	var rate *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	if err == nil || errors.As(err, &rate) || errors.As(err, &abuse) {
		return false
	}
	return ghwrite.IsStatus(err, http.StatusNotFound) || ghwrite.IsStatus(err, http.StatusForbidden)
}

// snapshotTarget is what a snapshot build of a repo builds: the default
// branch's head, under the config there.
type snapshotTarget struct {
	repo contract.Repo
	sha  string
	cfg  config.Repo
}

func (s *Service) snapshotTargetOf(ctx context.Context, r store.SnapshotRepo) (snapshotTarget, error) {
	owner, name, _ := strings.Cut(r.FullName, "/")
	c, err := s.gh.Installation(ctx, r.InstallationID)
	if err != nil {
		return snapshotTarget{}, err
	}
	repo, _, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return snapshotTarget{}, fmt.Errorf("reading the repository: %w", err)
	}
	ref, _, err := c.Git.GetRef(ctx, owner, name, "heads/"+repo.GetDefaultBranch())
	if err != nil {
		return snapshotTarget{}, fmt.Errorf("reading the default branch: %w", err)
	}
	cfg, err := s.loadRepoConfig(ctx, c, r.RepoID, repo, s.clock.Now())
	if err == nil {
		err = s.scheduleSnapshots(ctx, r.InstallationID, r.RepoID, repo.GetFullName(), cfg)
	}
	if err != nil {
		return snapshotTarget{}, fmt.Errorf("reading the repo's config: %w", err)
	}
	if !cfg.WantsSnapshots() {
		return snapshotTarget{}, errors.New("the repo's config no longer asks for snapshots")
	}
	return snapshotTarget{
		repo: contract.Repo{
			Owner: owner, Name: name, ID: r.RepoID, DefaultBranch: repo.GetDefaultBranch(),
			CloneURL: strings.TrimSuffix(s.cfg.GitHub.WebURL, "/") + "/" + owner + "/" + name + ".git",
		},
		sha: ref.GetObject().GetSHA(),
		cfg: cfg,
	}, nil
}

// buildSnapshotOf builds the repo's snapshot in this process.
func (s *Service) buildSnapshotOf(ctx context.Context, r store.SnapshotRepo) (images.Snapshot, error) {
	st, storeName, err := s.snapshots()
	if err != nil {
		return images.Snapshot{}, err
	}
	target, err := s.snapshotTargetOf(ctx, r)
	if err != nil {
		return images.Snapshot{}, err
	}
	tok, expires, err := s.mintRepoTokenUntil(ctx, r.InstallationID, r.RepoID)
	if err != nil {
		return images.Snapshot{}, err
	}
	defer s.revokeToken(ctx, mintedToken{installationID: r.InstallationID, value: tok, expiresAt: expires})
	base, err := s.baseImage(ctx)
	if err != nil {
		return images.Snapshot{}, err
	}
	res, err := s.buildSnapshotFn(ctx, runner.SnapshotBuild{
		Repo:    target.repo,
		SHA:     target.sha,
		Token:   tok,
		Setup:   target.cfg.SnapshotSetupCommands(s.cfg.Sessions.CommandTimeout, snapshotBuildLease),
		Caches:  target.cfg.SnapshotCaches(),
		Env:     target.cfg.Env,
		Base:    base,
		Store:   st,
		Version: s.version,
		WorkDir: s.cfg.Executor.WorkDir,
		Log:     *zerolog.Ctx(ctx),
	})
	if err != nil {
		return images.Snapshot{}, err
	}
	s.collectSnapshots(ctx, st, storeName, r.FullName)
	return res.Snapshot, nil
}

// stopSnapshotAttempt ends a snapshot build attempt and cancels its run.
// Best effort: its deadline stops it anyway.
func (s *Service) stopSnapshotAttempt(ctx context.Context, attemptID string) {
	log := zerolog.Ctx(ctx).With().Str("attempt_id", attemptID).Logger()
	if err := s.store.EndAttempt(ctx, attemptID, s.clock.Now()); err != nil {
		log.Warn().Err(err).Msg("ending a stale snapshot build failed")
	}
	s.revokeTokens(ctx, attemptID)
	a, err := s.store.GetAttempt(ctx, attemptID)
	if err != nil || a.ExternalID == "" || s.snapshotExec == nil {
		return
	}
	if err := s.snapshotExec.Cancel(ctx, a.ExternalID); err != nil {
		log.Warn().Err(err).Msg("cancelling a stale snapshot build failed")
	}
}

// collectSnapshotsWork is the CollectSnapshots work item: after a build on
// the executor, the repo's old snapshots are collected.
func (s *Service) collectSnapshotsWork(ctx context.Context, w *store.Work) error {
	repoID, err := strconv.ParseInt(w.Payload, 10, 64)
	if err != nil {
		return fmt.Errorf("collect payload %q: %w", w.Payload, err)
	}
	st, storeName, err := s.snapshots()
	if err != nil || st == nil {
		return err
	}
	r, err := s.store.GetSnapshotRepo(ctx, repoID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s.collectSnapshots(ctx, st, storeName, r.FullName)
	return nil
}

// collectSnapshots garbage-collects a repo's snapshots, keeping
// snapshots.keep. Best effort: a failure leaves a few more images.
func (s *Service) collectSnapshots(ctx context.Context, st images.Store, storeName, fullName string) {
	if removed, err := st.GC(ctx, fullName, s.cfg.Snapshots.Keep); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("store", storeName).Msg("snapshot garbage collection failed")
	} else if len(removed) > 0 {
		zerolog.Ctx(ctx).Info().Int("removed", len(removed)).Msg("old snapshots collected")
	}
}

// dispatchSnapshotBuild starts the repo's snapshot build on the executor
// (decision 0012): an attempt of kind snapshot, whose supervisor fetches the
// job and a read token over the channel and reports the digest there.
func (s *Service) dispatchSnapshotBuild(ctx context.Context, r store.SnapshotRepo) error {
	_, storeName, err := s.snapshots()
	if err != nil {
		return err
	}
	target, err := s.snapshotTargetOf(ctx, r)
	if err != nil {
		return err
	}
	job := contract.SnapshotJob{
		Version: contract.SnapshotJobVersion, AttemptID: newID(), Repo: target.repo, SHA: target.sha,
		Store: storeName, BaseImage: s.cfg.Snapshots.BaseImage,
		Setup:  target.cfg.SnapshotSetupCommands(s.cfg.Sessions.CommandTimeout, snapshotBuildLease),
		Caches: target.cfg.SnapshotCaches(),
		Env:    target.cfg.Env,
		// Within the pipeline step's own timeout (sessions.timeout plus
		// slack), so the supervisor reports before Buildkite kills it.
		Deadline: s.clock.Now().Add(min(snapshotBuildLease, s.cfg.Sessions.Timeout)).UTC().Truncate(time.Second),
	}
	if err := job.Validate(); err != nil {
		return err
	}
	jobJSON, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if r.BuildingAttempt != "" {
		// An earlier build outlived its lease without reporting: end it, so
		// its token stops working and it builds no more.
		s.stopSnapshotAttempt(ctx, r.BuildingAttempt)
	}
	claim := contract.NewSecret()
	a := store.Attempt{ID: job.AttemptID, Kind: string(contract.KindSnapshot), RepoID: r.RepoID, Deadline: job.Deadline, Spec: string(jobJSON)}
	if err := s.store.CreateAttempt(ctx, a, claim, s.clock.Now()); err != nil {
		return err
	}
	if err := s.store.SetSnapshotAttempt(ctx, r.RepoID, a.ID, s.clock.Now()); err != nil {
		return err
	}
	ext, err := s.snapshotExec.Start(ctx, runner.Attempt{
		SessionID: "snapshot-" + strconv.FormatInt(r.RepoID, 10), AttemptID: a.ID, Number: 1,
		ChannelURL: s.channelURL, ClaimCode: claim, Deadline: a.Deadline,
	})
	if err != nil {
		if endErr := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); endErr != nil {
			zerolog.Ctx(ctx).Warn().Err(endErr).Msg("ending the unstarted snapshot attempt failed")
		}
		return fmt.Errorf("starting the snapshot build: %w", err)
	}
	zerolog.Ctx(ctx).Info().Str("attempt_id", a.ID).Str("external_id", ext).Msg("snapshot build dispatched")
	return s.store.SetAttemptExternalID(ctx, a.ID, ext, s.clock.Now())
}

// baseImage pulls snapshots.base_image (by reference, with the default
// keychain); nil when none is set.
func (s *Service) baseImage(ctx context.Context) (v1.Image, error) {
	if s.cfg.Snapshots.BaseImage == "" {
		return nil, nil
	}
	ref, err := name.ParseReference(s.cfg.Snapshots.BaseImage)
	if err != nil {
		return nil, fmt.Errorf("snapshots.base_image: %w", err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, fmt.Errorf("pulling the base image: %w", err)
	}
	return img, nil
}
