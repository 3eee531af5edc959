package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
)

// runSnapshotJob is an attempt that builds a snapshot (decision 0012): it
// fetches the job and a read token over the channel, builds and pushes with
// this host's registry credentials (the usual keychain), and reports the
// digest or why there is none. The Report's Uploaded says whether the app
// took the result.
func runSnapshotJob(ctx context.Context, cfg Config, ch *channel, red *contract.Redactor, log zerolog.Logger) (*Report, error) {
	rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	job, err := ch.snapshotJob(rctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("supervisor: fetching the snapshot job: %s", red.Redact(err.Error()))
	}
	if job.AttemptID != cfg.AttemptID {
		return nil, fmt.Errorf("supervisor: the snapshot job is for attempt %s, not this one", job.AttemptID)
	}
	log = log.With().Str("repo", job.Repo.Owner+"/"+job.Repo.Name).Logger()
	log.Info().Msg("snapshot build claimed")
	buildCtx, stop := context.WithDeadline(ctx, job.Deadline)
	res, buildErr := buildFromJob(buildCtx, cfg, ch, red, log, job)
	stop()

	// The setup's log goes with a failure too: it says why. Each result
	// was redacted whole (its name, argv and output, with the build's
	// token) before its tail was cut; redacting the joined log again could
	// only lengthen it past the cap the app holds it to.
	setupLog := contract.SnapshotLog(res.Setup)
	// The egress audit goes with either: its paths were redacted as they
	// were recorded.
	result := contract.SnapshotResult{Digest: res.Snapshot.Digest.String(), SHA: res.Snapshot.SHA,
		Size: res.Footprint.Size, Layers: res.Footprint.Layers, Log: setupLog, Egress: res.Egress}
	if buildErr != nil {
		result = contract.SnapshotResult{Error: contract.CleanProgressMessage(red.Redact(buildErr.Error())), Log: setupLog, Egress: res.Egress}
		log.Error().Str("error", result.Error).Msg("snapshot build failed")
	}
	// Reported even when ctx ended (SIGTERM): the app should know.
	finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.FinishTimeout)
	defer cancel()
	if err := ch.snapshotResult(finish, result); err != nil {
		log.Warn().Str("error", red.Redact(err.Error())).Msg("reporting the snapshot build failed")
		return &Report{}, nil
	}
	return &Report{Uploaded: true}, nil
}

// buildFromJob builds the job's snapshot; its result holds the setup's
// output also when the build failed.
func buildFromJob(ctx context.Context, cfg Config, ch *channel, red *contract.Redactor, log zerolog.Logger, job contract.SnapshotJob) (SnapshotResult, error) {
	rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	tok, err := ch.repoToken(rctx)
	cancel()
	if err != nil {
		return SnapshotResult{}, fmt.Errorf("getting the repository's read token: %w", err)
	}
	red.Add(tok.Token, basicCredential(tok.Token))
	store, err := images.OpenStore(job.Store)
	if err != nil {
		return SnapshotResult{}, err
	}
	var base v1.Image
	if job.BaseImage != "" {
		if base, err = images.OpenBaseImage(ctx, job.BaseImage); err != nil {
			return SnapshotResult{}, err
		}
	}
	res, err := buildSnapshot(ctx, SnapshotBuild{
		Repo: job.Repo, SHA: job.SHA, Token: tok.Token,
		Setup: job.Setup, Caches: job.Caches, Env: job.Env, Registries: job.Registries, ForwarderBinary: cfg.ForwarderBinary,
		Base: base, BaseName: job.BaseImage, Store: store,
		Version: cfg.RunnerVersion, WorkDir: cfg.WorkDir, LayerCache: cfg.LayerCache,
		SandboxUID: cfg.SandboxUID, SandboxGID: cfg.SandboxGID, SandboxPath: cfg.SandboxPath, Limits: cfg.Limits, Git: cfg.Git,
		Now: cfg.Now, Log: log,
	}, ch)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return res, fmt.Errorf("the build ran past its deadline (%s)", job.Deadline.Format(time.RFC3339))
		}
		return res, err
	}
	return res, nil
}

// BuildSnapshotOverChannel builds b as BuildSnapshot does, but its setup
// reaches b.Registries as a snapshot job's does: it claims attemptID (a
// snapshot build's attempt) on the session channel at channelURL with
// claimCode, and relays setup's registry requests to the channel's
// registry route, where the far end checks them and adds the upstream's
// credential. The build itself is b, made by the caller: `inspect snapshot
// build` makes it from a local checkout and serves the channel on
// loopback (runner/checkoutrun), with the registry egress `inspect run`
// serves.
func BuildSnapshotOverChannel(ctx context.Context, b SnapshotBuild, channelURL, attemptID, claimCode string) (SnapshotResult, error) {
	red := contract.NewRedactor(claimCode)
	ch, err := newChannel(channelURL, "", attemptID, b.Version)
	if err != nil {
		return SnapshotResult{}, err
	}
	defer ch.close()
	rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	claim, err := ch.claim(rctx, claimCode)
	cancel()
	if err != nil {
		return SnapshotResult{}, fmt.Errorf("claiming the snapshot build's attempt: %s", red.Redact(err.Error()))
	}
	if claim.Kind != contract.KindSnapshot {
		return SnapshotResult{}, fmt.Errorf("attempt %s is a %s, not a snapshot build", attemptID, claim.Kind)
	}
	return buildSnapshot(ctx, b, ch)
}
