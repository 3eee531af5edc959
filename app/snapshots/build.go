package snapshots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner"
)

// BuildWork is the BuildSnapshot work item: it builds the repo's snapshot
// at its default branch's head, on this host or on the executor. Whatever
// happens is recorded on the repo's schedule and logged, and the work
// completes: a failed build keeps the previous snapshot, and the next
// refresh tries again.
func (s *Scheduler) BuildWork(ctx context.Context, w *store.Work) error {
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
	started := s.clock.Now()
	if err := s.store.StartSnapshotBuild(ctx, repoID, s.clock.Now().Add(BuildLease), s.clock.Now()); err != nil {
		return err
	}
	if s.build == nil && s.exec != nil {
		err := s.dispatch(ctx, r)
		if err == nil {
			return nil // the result comes over the channel
		}
		if errors.Is(err, runner.ErrAtCapacity) {
			// The executor's places are taken (by sessions, on the local
			// one): the work is tried again after the workers' backoff,
			// not at the next refresh.
			return err
		}
		return s.finish(ctx, repoID, started, built{}, err)
	}
	if s.build == nil {
		return s.finish(ctx, repoID, started, built{}, fmt.Errorf("snapshot builds need executor.kind local or buildkite (it is %s)", s.executorKind))
	}
	b, err := s.buildHere(ctx, r)
	return s.finish(ctx, repoID, started, b, err)
}

// built is what a build in this process did: its result (also when it
// failed: the setup commands that ran), and the default branch it built.
type built struct {
	res    runner.SnapshotResult
	branch string
}

// finish records a build's outcome on the repo's schedule, with the tail
// of its setup output, and its duration from started.
func (s *Scheduler) finish(ctx context.Context, repoID int64, started time.Time, b built, err error) error {
	log := zerolog.Ctx(ctx)
	s.metrics.SnapshotBuilt(err == nil, s.clock.Now().Sub(started))
	// The builder redacted the output and the egress audit of the build's
	// token; the patterns go over them again before they are kept and
	// shown.
	red := contract.NewRedactor()
	o := store.SnapshotOutcome{Log: red.Redact(contract.SnapshotLog(b.res.Setup)), Egress: b.res.Egress.Clone()}
	red.RedactStrings(o.Egress)
	if err != nil {
		o.Error = red.Redact(err.Error())
		log.Error().Str("error", o.Error).Msg("snapshot build failed; the previous snapshot stays")
	} else {
		snap := b.res.Snapshot
		o.Digest, o.SHA, o.Branch = snap.Digest.String(), snap.SHA, b.branch
		o.Size, o.Layers = b.res.Footprint.Size, b.res.Footprint.Layers
		log.Info().Str("digest", o.Digest).Str("sha", snap.SHA).Int64("size", o.Size).Int("layers", o.Layers).Msg("snapshot built")
	}
	// Recorded even when the build ran out of time: ctx may be done, and a
	// retry would only build again.
	book, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.FinishSnapshotBuild(book, repoID, o, s.clock.Now()); err != nil {
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

// target is what a snapshot build of a repo builds: the default branch's
// head, under the config there.
type target struct {
	repo contract.Repo
	sha  string
	cfg  config.Repo
}

func (s *Scheduler) targetOf(ctx context.Context, r store.SnapshotRepo) (target, error) {
	owner, name, _ := strings.Cut(r.FullName, "/")
	c, err := s.gh.Installation(ctx, r.InstallationID)
	if err != nil {
		return target{}, err
	}
	repo, _, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return target{}, fmt.Errorf("reading the repository: %w", err)
	}
	ref, _, err := c.Git.GetRef(ctx, owner, name, "heads/"+repo.GetDefaultBranch())
	if err != nil {
		return target{}, fmt.Errorf("reading the default branch: %w", err)
	}
	cfg, err := s.repoConfigs.Load(ctx, c, r.RepoID, repo, s.clock.Now())
	if err == nil {
		err = s.Schedule(ctx, r.InstallationID, r.RepoID, repo.GetFullName(), cfg)
	}
	if err != nil {
		return target{}, fmt.Errorf("reading the repo's config: %w", err)
	}
	if !cfg.WantsSnapshots() {
		return target{}, errors.New("the repo's config no longer asks for snapshots")
	}
	return target{
		repo: contract.Repo{
			Owner: owner, Name: name, ID: r.RepoID, DefaultBranch: repo.GetDefaultBranch(),
			CloneURL: strings.TrimSuffix(s.webURL, "/") + "/" + owner + "/" + name + ".git",
		},
		sha: ref.GetObject().GetSHA(),
		cfg: cfg,
	}, nil
}

// buildHere builds the repo's snapshot in this process.
func (s *Scheduler) buildHere(ctx context.Context, r store.SnapshotRepo) (built, error) {
	st, storeName, err := s.open()
	if err != nil {
		return built{}, err
	}
	t, err := s.targetOf(ctx, r)
	if err != nil {
		return built{}, err
	}
	tok, expires, err := s.readTokens.Mint(ctx, r.InstallationID, r.RepoID)
	if err != nil {
		return built{}, err
	}
	defer s.readTokens.Revoke(ctx, r.InstallationID, tok, expires)
	base, err := s.baseImage(ctx)
	if err != nil {
		return built{}, err
	}
	res, err := s.build(ctx, runner.SnapshotBuild{
		Repo:   t.repo,
		SHA:    t.sha,
		Token:  tok,
		Setup:  t.cfg.SnapshotSetupCommands(s.commandTimeout, BuildLease),
		Caches: t.cfg.SnapshotCaches(),
		Env:    t.cfg.Env,
		Base:   base,
		// base is nil, and so named nothing, without a base image.
		BaseName: s.cfg.BaseImage,
		Store:    st,
		Version:  s.version,
		WorkDir:  s.workDir,
		Log:      *zerolog.Ctx(ctx),
	})
	b := built{res: res, branch: t.repo.DefaultBranch}
	if err != nil {
		return b, err
	}
	s.collect(ctx, st, storeName, r.FullName)
	return b, nil
}

// stopAttempt ends a snapshot build attempt and cancels its run. Best
// effort: its deadline stops it anyway.
func (s *Scheduler) stopAttempt(ctx context.Context, attemptID string) {
	log := zerolog.Ctx(ctx).With().Str("attempt_id", attemptID).Logger()
	if err := s.store.EndAttempt(ctx, attemptID, s.clock.Now()); err != nil {
		log.Warn().Err(err).Msg("ending a stale snapshot build failed")
	}
	s.readTokens.RevokeAttempt(ctx, attemptID)
	a, err := s.store.GetAttempt(ctx, attemptID)
	if err != nil || a.ExternalID == "" || s.exec == nil {
		return
	}
	if err := s.exec.Cancel(ctx, a.ExternalID); err != nil {
		log.Warn().Err(err).Msg("cancelling a stale snapshot build failed")
	}
}

// CollectWork is the CollectSnapshots work item: after a build on the
// executor, the repo's old snapshots are collected.
func (s *Scheduler) CollectWork(ctx context.Context, w *store.Work) error {
	repoID, err := strconv.ParseInt(w.Payload, 10, 64)
	if err != nil {
		return fmt.Errorf("collect payload %q: %w", w.Payload, err)
	}
	st, storeName, err := s.open()
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
	s.collect(ctx, st, storeName, r.FullName)
	return nil
}

// collect garbage-collects a repo's snapshots, keeping snapshots.keep.
// Best effort: a failure leaves a few more images.
func (s *Scheduler) collect(ctx context.Context, st images.Store, storeName, fullName string) {
	if removed, err := st.GC(ctx, fullName, s.cfg.Keep); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("store", storeName).Msg("snapshot garbage collection failed")
	} else if len(removed) > 0 {
		zerolog.Ctx(ctx).Info().Int("removed", len(removed)).Msg("old snapshots collected")
	}
}

// dispatch starts the repo's snapshot build on the executor (decision
// 0012): an attempt of kind snapshot, whose supervisor fetches the job and
// a read token over the channel and reports the digest there.
func (s *Scheduler) dispatch(ctx context.Context, r store.SnapshotRepo) error {
	_, storeName, err := s.open()
	if err != nil {
		return err
	}
	t, err := s.targetOf(ctx, r)
	if err != nil {
		return err
	}
	regs, err := s.registriesOf(t)
	if err != nil {
		return fmt.Errorf("the repo's registries: %w", err)
	}
	job := contract.SnapshotJob{
		Version: contract.SnapshotJobVersion, AttemptID: s.newID(), Repo: t.repo, SHA: t.sha,
		Store: storeName, BaseImage: s.cfg.BaseImage,
		Setup:  t.cfg.SnapshotSetupCommands(s.commandTimeout, BuildLease),
		Caches: t.cfg.SnapshotCaches(),
		Env:    t.cfg.Env,
		// Setup reaches the registries a session's setup would.
		Registries: regs,
		// Within the pipeline step's own timeout (sessions.timeout plus
		// slack), so the supervisor reports before Buildkite kills it.
		Deadline: s.clock.Now().Add(min(BuildLease, s.sessionTimeout)).UTC().Truncate(time.Second),
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
		s.stopAttempt(ctx, r.BuildingAttempt)
	}
	claim := contract.NewSecret()
	a := store.Attempt{ID: job.AttemptID, Kind: string(contract.KindSnapshot), RepoID: r.RepoID, Deadline: job.Deadline, Spec: string(jobJSON)}
	if err := s.store.CreateAttempt(ctx, a, claim, s.clock.Now()); err != nil {
		return err
	}
	if err := s.store.SetSnapshotAttempt(ctx, r.RepoID, a.ID, s.clock.Now()); err != nil {
		return err
	}
	// The session id names the build's attempt, not only the repo: an
	// executor that finds an attempt's run by (session id, number) before
	// it starts one, as Buildkite's does, would otherwise take the repo's
	// first build for every later one, and no refresh would ever run.
	ext, err := s.exec.Start(ctx, runner.Attempt{
		SessionID: "snapshot-" + strconv.FormatInt(r.RepoID, 10) + "-" + a.ID, AttemptID: a.ID, Number: 1,
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

// registriesOf are the registries open to t's build (none without the
// option).
func (s *Scheduler) registriesOf(t target) ([]contract.Registry, error) {
	if s.registries == nil {
		return nil, nil
	}
	return s.registries(t.repo.Owner+"/"+t.repo.Name, t.cfg)
}

// baseImage pulls snapshots.base_image (by reference, with the default
// keychain); nil when none is set.
func (s *Scheduler) baseImage(ctx context.Context) (v1.Image, error) {
	if s.cfg.BaseImage == "" {
		return nil, nil
	}
	img, err := images.OpenBaseImage(ctx, s.cfg.BaseImage)
	if err != nil {
		return nil, fmt.Errorf("snapshots.base_image: %w", err)
	}
	return img, nil
}
