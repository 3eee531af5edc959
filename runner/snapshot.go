package runner

import (
	"context"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
)

// SnapshotBuilder builds and pushes one snapshot on this host: the
// supervisor's BuildSnapshot, which cmd/ hands the app with the local
// executor. Tests and executors without a local sandbox swap it.
type SnapshotBuilder func(ctx context.Context, b SnapshotBuild) (SnapshotResult, error)

// SnapshotBuild is one snapshot build: clone the repo at SHA into a fresh
// workspace, run the repo's snapshot setup in the sandbox with each cache
// directory bound writable at its fixed path, then package the result as
// layers on the base image and push it.
type SnapshotBuild struct {
	// Repo names the repository (owner, name) and where to clone it from:
	// an http(s) URL, or for tests and the CLI a local path or file URL.
	Repo contract.Repo
	// SHA is the commit to build: 40 lowercase hex digits.
	SHA string
	// Token is the read token for the clone ("" for none). It reaches git
	// only as it does in a session (runner/supervisor/git.go), never the sandbox, the
	// image, a log or an error.
	Token string
	// Setup is the repo's snapshot setup, run in order in the sandbox with
	// cwd /workspace. A command's Timeout bounds it (0: only ctx does); an
	// empty Name becomes "setup N".
	Setup []contract.Command
	// Caches are the dependency caches, each a layer keyed by its
	// lockfiles at SHA, the setup's argv and the env (the supervisor's cacheKey).
	Caches []contract.Cache
	// Env is the repo's env, added to every sandboxed command (see
	// sandboxEnv). It must pass contract.ValidateEnv.
	Env map[string]string
	// Base is the toolchain image. nil means an empty image (OCI media
	// types): the sandbox then binds the host's toolchain read-only, as a
	// session without a snapshot does. A base whose one layer holds
	// /usr/bin is used as the sandbox's root instead (the rule a session's
	// restore follows too, so both see the same toolchain).
	Base v1.Image
	// BaseName is the reference Base was opened by (snapshots.base_image),
	// which the snapshot's labels name with Base's digest; "" with no Base.
	BaseName string
	Store    images.Store
	Version  string
	// WorkDir is where the build's directory goes (default os.TempDir());
	// the sandbox uid must be able to search every parent.
	WorkDir string
	// LayerCache is where layers are extracted, by digest (default
	// WorkDir/inspect-layers, the same place a session's restore uses, so a
	// layer extracted by either is reused by the other).
	LayerCache string
	// SandboxUID and SandboxGID are as Config's (defaults: 65534 when
	// root, else yourself).
	SandboxUID, SandboxGID uint32
	// SandboxPath is PATH inside the sandbox (default DefaultSandboxPath).
	SandboxPath string
	// Limits cap each setup command's sandbox (as Config's).
	Limits contract.SandboxLimits
	// Git is the git binary ("git" on PATH when empty).
	Git string
	// Now stamps the snapshot (LabelBuilt); default time.Now.
	Now func() time.Time
	// Log receives the build's log; the zero Logger discards.
	Log zerolog.Logger
	// Registries are the package registries setup may reach (those open
	// to the setup phase), through the egress forwarder and the session
	// channel's registry route: only a build an executor's supervisor
	// runs for a snapshot job has that channel; BuildSnapshot called
	// directly refuses registries.
	Registries []contract.Registry
	// ForwarderBinary is the inspect binary for the sandbox's egress
	// forwarder (as supervisor.Config's); empty means this executable.
	ForwarderBinary string
	// Stdout receives setup's output, stdout and stderr together, line by
	// line, redacted of Token (nil discards it).
	Stdout io.Writer
}

// SnapshotResult is what a build did.
type SnapshotResult struct {
	// Snapshot is the pushed snapshot (zero when the build failed), and
	// Footprint its layers' count and compressed size.
	Snapshot  images.Snapshot
	Footprint images.Footprint
	// Reused are the cache paths whose layer came from the previous
	// snapshot as it was; Rebuilt are those packaged anew.
	Reused, Rebuilt []string
	// SetupRan is false when every cache key was unchanged.
	SetupRan bool
	// Setup are the setup commands that ran, in order, with their
	// redacted output tails (also on failure, up to the failing one).
	Setup []contract.CommandResult
	// Egress is setup's egress audit: every registry request relayed and
	// every refusal (also on failure); nil when setup sent nothing.
	Egress *contract.EgressAudit
}
