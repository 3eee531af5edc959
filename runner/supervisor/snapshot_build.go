package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// A snapshot build prepares a repository's environment before any session
// asks for it (issue 5). What ends up in the image:
//
//   - the workspace layer is the checkout exactly as the supervisor's git
//     left it (files at SHA, and a shallow .git of its own at SHA from which
//     a session catches up). Setup never touches it: setup runs in a copy,
//     so whatever setup writes into /workspace outside a cache is dropped,
//     and a tracked file setup rewrites never reaches a session (where it
//     would read as the agent's change). Nor can repository code running in
//     setup alter the .git a session's supervisor later reads. The layer is
//     the same whether setup ran or was skipped.
//   - each cache is a layer of its own, keyed by its lockfiles: what setup
//     left at the cache's path. A cache outside /workspace (/cache/go) is a
//     host directory bound writable at its path; one inside it
//     (/workspace/node_modules) is simply that directory of setup's copy of
//     the workspace. Either way it is left out of the workspace layer.
//   - nothing of a directory the repo's env names outside /workspace, /tmp
//     and the caches (GOCACHE=/cache/gobuild, no cache there): it is an
//     empty host directory bound writable for setup, as in a session.
//
// When every cache's key equals the previous snapshot's, setup is skipped
// and every cache layer is reused as it is (no tar, no upload): a source
// change costs a workspace layer. Otherwise setup runs, with the caches
// whose key is unchanged pre-filled from the previous snapshot (so it is
// incremental) and the others empty; Assemble still reuses the unchanged
// caches' previous layers as they are, so only the changed caches' layers
// are new.

// SnapshotBuild and SnapshotResult are the executor contract's (runner):
// what the app asks of a build on this host, and what it gets back.
type (
	SnapshotBuild  = runner.SnapshotBuild
	SnapshotResult = runner.SnapshotResult
)

// snapshotSetupOutputTail is how much of each setup command's output its
// CommandResult keeps.
const snapshotSetupOutputTail = 64 << 10

// BuildSnapshot builds and pushes one snapshot. A failed build pushes
// nothing, so the repository's latest snapshot stays what it was. The
// build's directory is removed afterwards, whatever happened.
//
// Called directly, setup has no network at all, so b may name no
// registries: a build that downloads dependencies runs as a snapshot job
// (runSnapshotJob), or through BuildSnapshotOverChannel (`inspect snapshot
// build`), whose setup reaches the registries over the session channel.
func BuildSnapshot(ctx context.Context, b SnapshotBuild) (SnapshotResult, error) {
	return buildSnapshot(ctx, b, nil)
}

// buildSnapshot is BuildSnapshot with relay carrying setup's registry
// requests to the app (nil: none may be named).
func buildSnapshot(ctx context.Context, b SnapshotBuild, relay egressRelay) (SnapshotResult, error) {
	red := contract.NewRedactor()
	if b.Token != "" {
		red.Add(b.Token, basicCredential(b.Token))
	}
	fail := func(err error) error {
		return &snapshotBuildError{msg: red.Redact(fmt.Sprintf("snapshot build of %s/%s@%s: %v", b.Repo.Owner, b.Repo.Name, snapshotShortSHA(b.SHA), err)), err: err}
	}
	b, err := snapshotBuildDefaults(b)
	if err != nil {
		return SnapshotResult{}, fail(err)
	}
	if err := validateSnapshotBuild(b); err != nil {
		return SnapshotResult{}, fail(err)
	}
	if len(b.Registries) > 0 && relay == nil {
		return SnapshotResult{}, fail(errors.New("registries need the session channel: run the build as a snapshot job"))
	}
	sb := &snapshotBuilder{
		b:     b,
		relay: relay,
		red:   red,
		repo:  b.Repo.Owner + "/" + b.Repo.Name,
		log:   b.Log.With().Str("repo", b.Repo.Owner+"/"+b.Repo.Name).Str("sha", b.SHA).Logger(),
	}
	res, err := sb.build(ctx)
	if err != nil {
		return res, fail(err)
	}
	return res, nil
}

// snapshotBuildError is a failed build: its message is redacted, and the
// cause stays reachable for errors.Is (context.Canceled and the like).
type snapshotBuildError struct {
	msg string
	err error
}

func (e *snapshotBuildError) Error() string { return e.msg }
func (e *snapshotBuildError) Unwrap() error { return e.err }

func snapshotShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// snapshotBuildDefaults fills in what b leaves empty.
func snapshotBuildDefaults(b SnapshotBuild) (SnapshotBuild, error) {
	if b.WorkDir == "" {
		b.WorkDir = os.TempDir()
	}
	if !filepath.IsAbs(b.WorkDir) {
		abs, err := filepath.Abs(b.WorkDir)
		if err != nil {
			return b, err
		}
		b.WorkDir = abs
	}
	if b.LayerCache == "" {
		b.LayerCache = filepath.Join(b.WorkDir, "inspect-layers")
	}
	if b.SandboxUID == 0 && b.SandboxGID == 0 {
		if os.Geteuid() == 0 {
			b.SandboxUID, b.SandboxGID = DefaultSandboxID, DefaultSandboxID
		} else {
			b.SandboxUID, b.SandboxGID = uint32(os.Getuid()), uint32(os.Getgid())
		}
	}
	if err := checkSandboxIDs(b.SandboxUID, b.SandboxGID); err != nil {
		return b, err
	}
	if b.SandboxPath == "" {
		b.SandboxPath = DefaultSandboxPath
	}
	if b.Git == "" {
		b.Git = "git"
	}
	if !filepath.IsAbs(b.Git) {
		p, err := exec.LookPath(b.Git)
		if err != nil {
			return b, fmt.Errorf("git is not on PATH: %w", err)
		}
		b.Git = p
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	if b.Stdout == nil {
		b.Stdout = io.Discard
	}
	return b, nil
}

// validateSnapshotBuild refuses a build that cannot run, saying why.
func validateSnapshotBuild(b SnapshotBuild) error {
	var problems []error
	if b.Repo.Owner == "" || b.Repo.Name == "" {
		problems = append(problems, errors.New("the repository's owner and name are required"))
	}
	if b.Repo.CloneURL == "" {
		problems = append(problems, errors.New("the repository has no clone URL"))
	}
	if len(b.SHA) != 40 || strings.Trim(b.SHA, "0123456789abcdef") != "" {
		problems = append(problems, fmt.Errorf("SHA %q is not 40 lowercase hex digits", b.SHA))
	}
	if b.Store == nil {
		problems = append(problems, errors.New("no snapshot store"))
	}
	if err := contract.ValidateCaches(b.Caches); err != nil {
		problems = append(problems, err)
	}
	for i, c := range b.Setup {
		if len(c.Argv) == 0 || c.Argv[0] == "" {
			problems = append(problems, fmt.Errorf("setup command %d (%s) has no argv", i+1, c.Name))
		}
		if c.Timeout < 0 {
			problems = append(problems, fmt.Errorf("setup command %d (%s) has a negative timeout", i+1, c.Name))
		}
	}
	if err := contract.ValidateEnv(b.Env); err != nil {
		problems = append(problems, err)
	}
	if err := contract.ValidateRegistries(b.Registries); err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid build: %w", errors.Join(problems...))
	}
	return nil
}

// snapshotBuilder is one BuildSnapshot call in progress.
type snapshotBuilder struct {
	b     SnapshotBuild
	relay egressRelay // for setup's registries; nil for none
	red   *contract.Redactor
	repo  string
	log   zerolog.Logger

	ws  *workspace
	git *git
	// egress is setup's egress audit once its egress closed (nil when
	// it had none, or nothing was sent).
	egress *contract.EgressAudit
	// previous is the repository's latest snapshot (nil when there is none,
	// or when it was built on another base image), and prevCaches its
	// cache layers by path and key, from the manifest's annotations, as
	// Assemble matches them.
	previous   v1.Image
	prevCaches map[images.CacheInfo]v1.Layer
}

func (sb *snapshotBuilder) build(ctx context.Context) (SnapshotResult, error) {
	b := sb.b
	var res SnapshotResult
	base := b.Base
	if base == nil {
		base = empty.Image
	}
	if err := sb.loadPrevious(ctx, base); err != nil {
		return res, err
	}

	ws, err := newWorkspace(b.WorkDir, "snapshot")
	if err != nil {
		return res, fmt.Errorf("creating the build directory: %w", err)
	}
	sb.ws = ws
	defer func() {
		if err := removeAll(ws.dir); err != nil {
			sb.log.Warn().Str("error", sb.red.Redact(err.Error())).Msg("removing the snapshot build directory")
		}
	}()
	sb.git = &git{bin: b.Git, home: ws.homeDir, path: os.Getenv("PATH")}
	if sb.git.path == "" {
		sb.git.path = DefaultSandboxPath
	}
	err = ws.fetch(ctx, sb.git, b.Repo.CloneURL, b.SHA, b.Token)
	var gone *shaGoneError
	if errors.As(err, &gone) && ctx.Err() == nil {
		return res, fmt.Errorf("commit %s is not in the repository (a force-push or a deleted branch?): %w", b.SHA, err)
	}
	if err != nil {
		return res, fmt.Errorf("cloning: %w", err)
	}
	sb.log.Info().Msg("snapshot build: cloned")
	if err := refuseTrackedCaches(ctx, sb.git, ws, b.SHA, b.Caches); err != nil {
		return res, err
	}

	caches := make([]images.Cache, len(b.Caches))
	unchanged := make([]bool, len(b.Caches))
	allUnchanged := sb.previous != nil && len(b.Caches) > 0
	for i, c := range b.Caches {
		key, err := cacheKey(ws.work, c, b.Setup, b.Env)
		if err != nil {
			return res, fmt.Errorf("cache %s: %w", c.Path, err)
		}
		caches[i] = images.Cache{Path: c.Path, Key: key}
		_, unchanged[i] = sb.prevCaches[images.CacheInfo{Path: c.Path, Key: key}]
		allUnchanged = allUnchanged && unchanged[i]
	}

	if allUnchanged {
		// Every cache layer is reused as it is; HostDir stays empty.
		sb.log.Info().Msg("snapshot build: every cache key is unchanged; setup skipped")
	} else {
		res.SetupRan = len(b.Setup) > 0
		results, err := sb.setup(ctx, base, caches, unchanged)
		// The egress closed as setup returned: its audit goes with a
		// failure too (a refusal may be why).
		res.Setup, res.Egress = results, sb.egress
		if err != nil {
			return res, err
		}
	}

	wsLayers := sb.workspaceLayers(ctx, caches)
	asm, err := images.Assemble(images.Input{
		Workspace:    wsLayers,
		Base:         base,
		BaseName:     b.BaseName,
		Repo:         sb.repo,
		SHA:          b.SHA,
		Version:      b.Version,
		Built:        b.Now().UTC(),
		WorkspaceDir: ws.work,
		Caches:       caches,
		Previous:     sb.previous,
	})
	if err != nil {
		return res, err
	}
	res.Reused, res.Rebuilt = asm.Reused, asm.Rebuilt
	snap, err := b.Store.Push(ctx, asm.Image)
	if err != nil {
		return res, fmt.Errorf("pushing: %w", err)
	}
	// The manifest was computed for the push: reading it costs nothing,
	// and it cannot fail now. If it did, the snapshot is pushed all the
	// same; only the page lacks its size.
	fp, err := images.FootprintOf(asm.Image)
	if err != nil {
		sb.log.Warn().Str("error", sb.red.Redact(err.Error())).Msg("reading the pushed snapshot's footprint")
	}
	res.Snapshot, res.Footprint = snap, fp
	sb.log.Info().Str("digest", snap.Digest.String()).Int64("size", fp.Size).Int("layers", fp.Layers).Strs("reused", asm.Reused).Strs("rebuilt", asm.Rebuilt).Bool("setup_ran", res.SetupRan).Msg("snapshot pushed")
	return res, nil
}

// loadPrevious reads the repository's latest snapshot, if any. One built on
// another base image is not a previous at all: its caches were made with
// another toolchain, so nothing of it is reused.
func (sb *snapshotBuilder) loadPrevious(ctx context.Context, base v1.Image) error {
	latest, err := sb.b.Store.Latest(ctx, sb.repo)
	if errors.Is(err, images.ErrNoSnapshot) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the latest snapshot: %w", err)
	}
	prev, err := sb.b.Store.Image(ctx, sb.repo, latest.Digest)
	if err != nil {
		return fmt.Errorf("reading the latest snapshot %s: %w", latest.Digest, err)
	}
	manifest, err := prev.Manifest()
	if err != nil {
		return fmt.Errorf("reading the latest snapshot's manifest: %w", err)
	}
	baseManifest, err := base.Manifest()
	if err != nil {
		return fmt.Errorf("reading the base image's manifest: %w", err)
	}
	if !snapshotSameBase(baseManifest.Layers, manifest.Layers) {
		sb.log.Info().Str("previous", latest.Digest.String()).Msg("snapshot build: the latest snapshot has another base image; nothing of it is reused")
		return nil
	}
	found := map[images.CacheInfo]v1.Layer{}
	for _, desc := range manifest.Layers {
		if desc.Annotations[images.AnnotationLayer] != images.LayerKindCache {
			continue
		}
		layer, err := prev.LayerByDigest(desc.Digest)
		if err != nil {
			return fmt.Errorf("reading the latest snapshot's layer %s: %w", desc.Digest, err)
		}
		found[images.CacheInfo{Path: desc.Annotations[images.AnnotationCachePath], Key: desc.Annotations[images.AnnotationCacheKey]}] = layer
	}
	sb.previous, sb.prevCaches = prev, found
	return nil
}

// sameBase reports whether a snapshot's layers start with the base's and
// the next one is Inspect's own.
func snapshotSameBase(base, snapshot []v1.Descriptor) bool {
	if len(snapshot) <= len(base) {
		return false
	}
	for i, d := range base {
		if snapshot[i].Digest != d.Digest {
			return false
		}
	}
	return snapshot[len(base)].Annotations[images.AnnotationLayer] != ""
}

// setup runs the setup commands in the sandbox, in a copy of the checkout,
// with each cache's directory in place, and sets each cache's HostDir.
func (sb *snapshotBuilder) setup(ctx context.Context, base v1.Image, caches []images.Cache, unchanged []bool) ([]contract.CommandResult, error) {
	b := sb.b
	run := len(b.Setup) > 0 // with no command, the caches are just empty
	rootFS, imageEnv := "", []string(nil)
	if run {
		if err := sandbox.Available(); err != nil {
			return nil, err
		}
		if err := checkReachable(b.WorkDir, b.SandboxUID, b.SandboxGID); err != nil {
			return nil, err
		}
		var err error
		if rootFS, imageEnv, err = sb.rootFS(ctx, base); err != nil {
			return nil, err
		}
	}

	setupDir := filepath.Join(sb.ws.dir, "setup")
	if err := copyTree(sb.ws.work, setupDir); err != nil {
		return nil, fmt.Errorf("copying the checkout for setup: %w", err)
	}
	if err := os.Chmod(setupDir, 0o700); err != nil {
		return nil, err
	}
	cachesDir := filepath.Join(sb.ws.dir, "caches")
	if err := os.Mkdir(cachesDir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(cachesDir, 0o711); err != nil { // past the umask
		return nil, err
	}
	// The env's own directories, writable for setup but never packaged;
	// first, since one may hold a cache.
	mounts, err := envCacheMounts(cachesDir, b.Env, b.Caches)
	if err != nil {
		return nil, err
	}
	var owned []string // directories to give to the sandbox uid
	for _, m := range mounts {
		owned = append(owned, m.Source)
	}
	for i := range caches {
		c := &caches[i]
		var host string
		if rel, inside := inWorkspace(c.Path); inside {
			// The checkout is the repository's: a symlink it holds where
			// the cache goes would send the pre-fill, and the packaging,
			// anywhere on the host.
			if err := snapshotRealDirs(setupDir, rel); err != nil {
				return nil, fmt.Errorf("cache %s: the checkout has %w", c.Path, err)
			}
			host = filepath.Join(setupDir, filepath.FromSlash(rel))
			if err := os.MkdirAll(host, 0o755); err != nil {
				return nil, fmt.Errorf("cache %s: %w", c.Path, err)
			}
		} else {
			host = filepath.Join(cachesDir, fmt.Sprint(i))
			if err := os.Mkdir(host, 0o700); err != nil {
				return nil, fmt.Errorf("cache %s: %w", c.Path, err)
			}
			mounts = append(mounts, sandbox.Mount{Source: host, Target: c.Path})
			owned = append(owned, host)
		}
		if unchanged[i] && run {
			if err := sb.prefill(ctx, *c, host); err != nil {
				return nil, fmt.Errorf("cache %s: pre-filling from the latest snapshot: %w", c.Path, err)
			}
		}
		c.HostDir = host
	}
	if uid, gid := int(b.SandboxUID), int(b.SandboxGID); uid != os.Geteuid() || gid != os.Getegid() {
		for _, d := range append([]string{setupDir}, owned...) {
			if err := chownTree(d, uid, gid); err != nil {
				return nil, fmt.Errorf("handing the setup directories to the sandbox user: %w", err)
			}
		}
	}

	if etcRoot := identityRoot(rootFS, b.SandboxUID); etcRoot != "" {
		ids, err := identityMounts(filepath.Join(sb.ws.dir, "etc"), etcRoot, b.SandboxUID, b.SandboxGID)
		if err != nil {
			return nil, fmt.Errorf("writing the sandbox's /etc/passwd: %w", err)
		}
		mounts = append(mounts, ids...)
	}
	repoEnv, regOwn := phaseEnv(b.Registries, contract.PhaseSetup, withImageEnv(imageEnv, b.Env))
	env := sandboxEnv(b.SandboxPath, repoEnv, regOwn...)
	eg, err := sb.openEgress()
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox's egress proxy: %w", err)
	}
	if eg != nil {
		defer sb.closeEgress(eg)
		mounts = append(mounts, eg.mounts()...)
	}
	var results []contract.CommandResult
	for i, c := range b.Setup {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("setup %d", i+1)
		}
		argv := c.Argv
		if eg != nil {
			argv = eg.wrap(c.Argv, "", "")
		}
		r, err := sb.runSetup(ctx, name, c, argv, setupDir, rootFS, mounts, env)
		if err != nil {
			if r.Name != "" {
				results = append(results, r)
			}
			return results, err
		}
		results = append(results, r)
		if !r.Succeeded() {
			return results, fmt.Errorf("setup command %q %s; nothing was pushed", name, r.Ending())
		}
	}
	// Setup is over and the sandbox with it (sandbox.Run leaves no process
	// behind), so nothing changes these directories any more. A cache
	// inside the workspace is setup's to change, and setup may have put a
	// symlink at its path or a parent's: DirLayer would follow it out of
	// the workspace and package the host's files.
	for _, c := range caches {
		if rel, inside := inWorkspace(c.Path); inside {
			if err := snapshotRealDirs(setupDir, rel); err != nil {
				return results, fmt.Errorf("cache %s: setup left %w; nothing was pushed", c.Path, err)
			}
			if err := os.MkdirAll(c.HostDir, 0o755); err != nil { // setup may have removed it: an empty cache
				return results, fmt.Errorf("cache %s: %w", c.Path, err)
			}
		}
	}
	return results, nil
}

// snapshotRealDirs is realDirsWithin for a path inside the workspace
// (dir is the workspace on the host), naming it as the sandbox sees it.
func snapshotRealDirs(dir, rel string) error {
	return realDirsWithin(dir, rel, images.WorkspacePath)
}

func snapshotFileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	default:
		return "special file"
	}
}

// openEgress starts setup's egress when the build has any registry; nil
// when it has none (setup then has no network at all). A registry closed
// to setup is still served, so that its requests are refused and recorded
// rather than lost on a port nothing listens on (registryEnv points the
// package managers at the egress in every phase, decision 0064). Its gate
// judges every request as setup's: a snapshot build has no other phase.
func (sb *snapshotBuilder) openEgress() (*egressGateServer, error) {
	if sb.relay == nil || len(sb.b.Registries) == 0 {
		return nil, nil
	}
	gate := newEgressGate(sb.b.Registries, sb.relay, sb.red, sb.log)
	gate.setPhase(contract.PhaseSetup)
	eg, err := startEgress(filepath.Join(sb.ws.dir, "egress"), sb.b.ForwarderBinary, sb.b.SandboxUID, sb.b.SandboxGID, gate.handler())
	if err != nil {
		return nil, err
	}
	return &egressGateServer{egress: eg, gate: gate}, nil
}

// closeEgress stops setup's egress and keeps its audit for the result
// (the snapshot's record and page show it, as a session's evidence does).
func (sb *snapshotBuilder) closeEgress(eg *egressGateServer) {
	eg.close()
	sb.egress = eg.gate.evidence()
	if a := sb.egress; a != nil {
		sb.log.Info().Int("requests", a.Registry.Requests).Int64("bytes", a.Registry.Bytes).Int("refused", a.RefusedCount).Msg("snapshot setup's registry egress")
	}
}

// egressGateServer is an egress with the gate it serves.
type egressGateServer struct {
	*egress
	gate *egressGate
}

// runSetup runs one setup command (as argv: c's, or c's under the
// forwarder) in a fresh sandbox.
func (sb *snapshotBuilder) runSetup(ctx context.Context, name string, c contract.Command, argv []string, setupDir, rootFS string, mounts []sandbox.Mount, env []string) (contract.CommandResult, error) {
	out := &setupOutput{tail: newTailBuffer(snapshotSetupOutputTail), out: sb.b.Stdout, red: sb.red}
	out.header(name, c.Argv)
	res, err := sandbox.Run(ctx, sandbox.Spec{
		Workspace:   setupDir,
		RootFS:      rootFS,
		ExtraMounts: mounts,
		Argv:        argv,
		Env:         env,
		UID:         sb.b.SandboxUID,
		GID:         sb.b.SandboxGID,
		Limits:      sb.b.Limits,
		Timeout:     c.Timeout.Std(),
		Stdout:      out,
		Stderr:      out,
	})
	out.flush()
	if err != nil && res.Duration == 0 {
		if ctx.Err() != nil {
			return contract.CommandResult{}, fmt.Errorf("setup command %q: %w", name, context.Cause(ctx))
		}
		return contract.CommandResult{}, fmt.Errorf("the sandbox could not run setup command %q: %w", name, err)
	}
	if err != nil {
		sb.log.Warn().Str("error", sb.red.Redact(err.Error())).Str("command", name).Msg("sandbox cleanup reported an error")
	}
	r := contract.CommandResult{
		Phase:      contract.PhaseSetup,
		Name:       name,
		Argv:       slices.Clone(c.Argv), // redacted below: never the caller's slice
		ExitCode:   res.ExitCode,
		Signal:     res.Signal,
		TimedOut:   res.TimedOut,
		DurationMS: res.Duration.Milliseconds(),
	}
	if r.Signal != "" {
		r.ExitCode = -1
		if !strings.HasPrefix(r.Signal, "SIG") {
			r.Signal = ""
		}
	}
	r.OutputTail, r.OutputTruncated = out.tail.tail(sb.red, snapshotSetupOutputTail)
	sb.red.RedactStrings(&r)
	// A command stopped from outside still ran: its result, with what it
	// printed, goes with the error, for the build's log.
	if res.Cancelled {
		return r, fmt.Errorf("setup command %q: %w", name, context.Cause(ctx))
	}
	if res.Limit != nil {
		return r, fmt.Errorf("setup command %q ran into the sandbox's %s and was stopped", name, res.Limit)
	}
	sb.log.Info().Str("command", name).Int("exit_code", r.ExitCode).Str("signal", r.Signal).Bool("timed_out", r.TimedOut).Int64("duration_ms", r.DurationMS).Msg("snapshot setup command ended")
	return r, nil
}

// rootFS is the sandbox's root for the build and the base image's Env:
// its flattened root when it brings a toolchain, else "" (the host's
// toolchain, bound read-only) and no Env. A session's restore applies the
// same rule (baseRoot), and a session not restored runs on the same image
// through the same function (imageRootOf), so setup and the session see
// the same toolchain.
func (sb *snapshotBuilder) rootFS(ctx context.Context, base v1.Image) (string, []string, error) {
	root, env, err := imageRootOf(ctx, sb.b.LayerCache, base)
	if err != nil || root.dir == "" {
		return "", nil, err
	}
	sb.log.Info().Int("layers", root.evidence.Layers).Int("setid_bits_dropped", root.evidence.SetIDBitsDropped).
		Int("device_nodes_skipped", root.evidence.DeviceNodesSkipped).Msg("snapshot setup runs on the base image's root")
	return root.dir, env, nil
}

// prefill copies the latest snapshot's layer for the cache into host.
func (sb *snapshotBuilder) prefill(ctx context.Context, c images.Cache, host string) error {
	layer := sb.prevCaches[images.CacheInfo{Path: c.Path, Key: c.Key}]
	cache, err := openLayerCache(sb.b.LayerCache)
	if err != nil {
		return err
	}
	dir, err := images.ExtractLayer(ctx, layer, cache.private)
	if err != nil {
		return err
	}
	// The previous image's layer is trusted no further than the restore
	// trusts one: nothing in it may lead out of it.
	if err := realDirsWithin(dir, strings.TrimPrefix(c.Path, "/"), "/"); err != nil {
		return fmt.Errorf("the latest snapshot's layer has %w", err)
	}
	return copyTree(filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(c.Path, "/"))), host)
}

// setupOutput is where a setup command's stdout and stderr go: a tail for
// its CommandResult, and the build's Stdout, a whole line at a time so each
// line is redacted whole.
type setupOutput struct {
	mu   sync.Mutex
	tail *tailBuffer
	out  io.Writer
	red  *contract.Redactor
	line []byte
}

// maxSetupLine is where a line with no newline yet is passed on anyway.
const maxSetupLine = 64 << 10

func (o *setupOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.tail.Write(p) // never fails
	o.line = append(o.line, p...)
	if i := bytes.LastIndexByte(o.line, '\n'); i >= 0 {
		o.emit(o.line[:i+1])
		o.line = append(o.line[:0], o.line[i+1:]...)
	}
	if len(o.line) > maxSetupLine {
		o.emit(o.line)
		o.line = o.line[:0]
	}
	return len(p), nil
}

// header announces a command on Stdout.
func (o *setupOutput) header(name string, argv []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.emit([]byte(fmt.Sprintf("--- snapshot setup %q: %q\n", name, argv)))
}

// flush passes on an unfinished last line.
func (o *setupOutput) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.line) > 0 {
		o.emit(append(o.line, '\n'))
		o.line = o.line[:0]
	}
}

// emit writes redacted text to Stdout. A write error does not stop the
// command; its output just goes nowhere.
func (o *setupOutput) emit(b []byte) {
	_, _ = o.out.Write(o.red.RedactBytes(b))
}
