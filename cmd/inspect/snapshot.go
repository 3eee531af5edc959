package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/checkoutrun"
	"github.com/inspecthq/inspect/runner/supervisor"
)

const snapshotUsage = `Usage:
  inspect snapshot build --repo OWNER/NAME [--dir CHECKOUT] [--ref REF] [flags]
  inspect snapshot list  --repo OWNER/NAME [--store STORE] [--config FILE]
  inspect snapshot gc    --repo OWNER/NAME [--keep N] [--store STORE] [--config FILE]

build makes a snapshot image of a local git checkout at REF (default HEAD;
uncommitted changes are not included): the commit is cloned into a fresh
workspace, the snapshot setup of .github/inspect.yml as committed at REF runs
in the sandbox with the caches at their paths, and the result is pushed to
the store as OWNER/NAME. list prints the repository's snapshots, newest
first: digest, commit, build time. gc removes all but the newest N (and the
latest) and prints the removed digests.

build's setup has no network unless --server-config FILE names a server
config (the keys of inspect serve --config, as inspect run takes it): then
setup reaches the package registries FILE's egress.registries opens to
OWNER/NAME in the setup phase, through inspect run's registry egress,
served on loopback for this one build, the upstreams' tokens added outside
the sandbox. So go mod download and npm ci fill the caches, and a session
restored from the snapshot (inspect run --snapshot-store STORE --repo-name
OWNER/NAME) fetches nothing while the lockfiles are unchanged.
build prints setup's egress after the snapshot: the count, each registry
request ("request") and each refusal ("refused", with why); on stderr
when the build failed.

The store is --store, else snapshots.store of --config, else
INSPECT_SNAPSHOTS_STORE, else the default, oci:inspect-snapshots (an OCI
image layout; a relative path of --store is taken from the current
directory, one of the config or the environment from state_dir, by default
$XDG_STATE_HOME/inspect or ~/.local/state/inspect). list and gc never create
a layout that is not there.

Exit status: 0 on success, 1 when the command failed, 2 for usage errors.
`

// snapshotDefaultTimeout bounds a whole `inspect snapshot build`.
const snapshotDefaultTimeout = time.Hour

// snapshotCmd is `inspect snapshot build|list|gc`.
func snapshotCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, snapshotUsage)
		return 2
	}
	switch args[0] {
	case "build":
		return snapshotBuildCmd(args[1:], stdout, stderr)
	case "list":
		return snapshotListCmd(args[1:], stdout, stderr)
	case "gc":
		return snapshotGCCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, snapshotUsage)
		return 0
	}
	fmt.Fprintf(stderr, "inspect snapshot: unknown command %q\n\n%s", args[0], snapshotUsage)
	return 2
}

// snapshotFlags are the flags every snapshot command shares.
type snapshotFlags struct {
	fs         *flag.FlagSet
	repo       string
	store      string
	configPath string
}

func newSnapshotFlags(cmd string, stderr io.Writer) *snapshotFlags {
	f := &snapshotFlags{fs: flag.NewFlagSet("snapshot "+cmd, flag.ContinueOnError)}
	f.fs.SetOutput(stderr)
	f.fs.Usage = func() {
		fmt.Fprint(stderr, snapshotUsage+"\nFlags of "+cmd+":\n")
		f.fs.PrintDefaults()
	}
	f.fs.StringVar(&f.repo, "repo", "", "the repository, OWNER/NAME, as the store names it (required)")
	f.fs.StringVar(&f.store, "store", "", `the snapshot store: "oci:DIR" or a registry repository prefix (default: see above)`)
	f.fs.StringVar(&f.configPath, "config", "", "the server's YAML config file, for snapshots.store, snapshots.keep and snapshots.base_image")
	return f
}

// parse parses args; code is -1 to go on, else the exit status.
func (f *snapshotFlags) parse(args []string, stderr io.Writer) int {
	if err := f.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "inspect %s: unexpected argument %q\n", f.fs.Name(), f.fs.Arg(0))
		return 2
	}
	owner, repoName, ok := strings.Cut(f.repo, "/")
	if !ok || owner == "" || repoName == "" || strings.Contains(repoName, "/") {
		fmt.Fprintf(stderr, "inspect %s: --repo must be OWNER/NAME (got %q)\n", f.fs.Name(), f.repo)
		return 2
	}
	return -1
}

// snapshotSettings are the server settings a snapshot command uses.
type snapshotSettings struct {
	store     string // as a spec names it: a layout's directory absolute
	keep      int
	baseImage string
	commandTO time.Duration
}

// settings resolves the store (and the rest) from the flags, the server
// config and the environment. Its errors are usage errors.
func (f *snapshotFlags) settings() (snapshotSettings, error) {
	cfg := config.Defaults()
	if f.configPath != "" {
		loaded, err := config.Load(f.configPath, os.LookupEnv)
		if err != nil {
			return snapshotSettings{}, err
		}
		cfg = loaded
	} else {
		if v, ok := os.LookupEnv("INSPECT_SNAPSHOTS_STORE"); ok {
			cfg.Snapshots.Store = v
		}
		if v, ok := os.LookupEnv("INSPECT_STATE_DIR"); ok {
			cfg.StateDir = v
		}
		if err := cfg.ResolveStatePaths(); err != nil {
			return snapshotSettings{}, err
		}
	}
	s := snapshotSettings{store: cfg.Snapshots.Store, keep: cfg.Snapshots.Keep, baseImage: cfg.Snapshots.BaseImage, commandTO: cfg.Sessions.CommandTimeout}
	if f.store != "" {
		s.store = f.store
	}
	if s.store == "" {
		return snapshotSettings{}, errors.New("no snapshot store: snapshots.store is empty (snapshots are off); give --store")
	}
	if dir, ok := strings.CutPrefix(s.store, images.LayoutPrefix); ok && dir != "" && !filepath.IsAbs(dir) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return snapshotSettings{}, fmt.Errorf("store %s: %w", s.store, err)
		}
		s.store = images.LayoutPrefix + abs
	}
	if err := contract.ValidateSnapshotStore(s.store); err != nil {
		return snapshotSettings{}, fmt.Errorf("store %q: %w", s.store, err)
	}
	return s, nil
}

func snapshotBuildCmd(args []string, stdout, stderr io.Writer) int {
	f := newSnapshotFlags("build", stderr)
	dir := f.fs.String("dir", ".", "the git checkout to build from")
	ref := f.fs.String("ref", "HEAD", "the commit to build (any git revision of the checkout)")
	base := f.fs.String("base", "", "the toolchain image, a registry reference pinned by digest (default: snapshots.base_image of --config; none: the sandbox binds this host's toolchain)")
	timeout := f.fs.Duration("timeout", snapshotDefaultTimeout, "time limit for the whole build (each setup command's own timeout is at most this)")
	workDir := f.fs.String("work-dir", "", "directory for the build's workspace and the extracted layer cache (default: the system temp dir); the sandbox user must be able to search every parent")
	uid := f.fs.Int("sandbox-uid", -1, "host uid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	gid := f.fs.Int("sandbox-gid", -1, "host gid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	sandboxPath := f.fs.String("sandbox-path", supervisor.DefaultSandboxPath, "PATH inside the sandbox")
	var serverCfg serverConfigFlag
	serverCfg.register(f.fs, "a server config file (inspect serve's keys), as inspect run takes it: the package registries setup reaches (egress.*) through the registry egress; without it setup runs offline")
	var limits contract.SandboxLimits
	limitFlags(f.fs, &limits, defaultLimits())
	verbose := f.fs.Bool("verbose", false, "log the build's steps to stderr")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "inspect snapshot build: --timeout must be positive")
		return 2
	}
	if (*uid < 0) != (*gid < 0) || *uid > 1<<31 || *gid > 1<<31 {
		fmt.Fprintln(stderr, "inspect snapshot build: give both --sandbox-uid and --sandbox-gid, or neither")
		return 2
	}
	settings, err := f.settings()
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
		return 2
	}
	server, err := serverCfg.load()
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: --server-config: %v\n", err)
		return 2
	}
	if *base != "" {
		settings.baseImage = *base
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	checkout, err := filepath.Abs(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: --dir: %v\n", err)
		return 2
	}
	if err := snapshotCheckOwner(ctx, checkout); err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
		return 2
	}
	out, err := checkoutrun.UserGit(ctx, "git", checkout, "rev-parse", "--verify", "--quiet", "--end-of-options", *ref+"^{commit}")
	sha := strings.TrimSpace(string(out))
	if err != nil || len(sha) != 40 {
		fmt.Fprintf(stderr, "inspect snapshot build: %s has no commit %q\n", *dir, *ref)
		return 2
	}
	repoCfg, source, err := snapshotRepoConfig(ctx, checkout, sha)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
		return 2
	}
	if !repoCfg.WantsSnapshots() {
		fmt.Fprintf(stderr, "inspect snapshot build: %s has no snapshot section (snapshot: {setup: [...], caches: [...]})\n", source)
		return 2
	}
	// Setup reaches the registries a session's setup would, as the app's
	// snapshot jobs do.
	var registries []contract.Registry
	if server != nil {
		if registries, err = server.SessionRegistries(f.repo, repoCfg); err != nil {
			fmt.Fprintf(stderr, "inspect snapshot build: %s: %v (the registries come from --server-config; --repo names the repository they serve)\n", source, err)
			return 2
		}
	}
	store, err := images.OpenStore(settings.store)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
		return 1
	}
	var baseImg v1.Image
	if settings.baseImage != "" {
		if baseImg, err = pullBaseImage(ctx, settings.baseImage); err != nil {
			fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
			return 1
		}
	}

	level := zerolog.WarnLevel
	if *verbose {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(level).With().Timestamp().Logger()
	owner, repoName, _ := strings.Cut(f.repo, "/")
	b := supervisor.SnapshotBuild{
		Repo:       contract.Repo{Owner: owner, Name: repoName, CloneURL: checkout},
		SHA:        sha,
		Setup:      repoCfg.SnapshotSetupCommands(settings.commandTO, *timeout),
		Caches:     repoCfg.SnapshotCaches(),
		Env:        repoCfg.Env,
		Registries: registries,
		// The sandbox's egress forwarder: this executable.
		ForwarderBinary: forwarderBinary,
		Base:            baseImg,
		BaseName:        settings.baseImage,
		Store:           store,
		Version:         version,
		WorkDir:         *workDir,
		SandboxPath:     *sandboxPath,
		Limits:          limits,
		Log:             log,
		Stdout:          stderr, // setup's output is progress; stdout gets the result
	}
	if *uid >= 0 {
		b.SandboxUID, b.SandboxGID = uint32(*uid), uint32(*gid)
	}
	res, err := checkoutrun.BuildSnapshot(ctx, b, localEgress(server, log))
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot build: %v\n", err)
		// What setup sent, and what was refused, may say why.
		printSnapshotEgress(stderr, res.Egress)
		return 1
	}
	fmt.Fprintf(stdout, "digest   %s\n", res.Snapshot.Digest)
	fmt.Fprintf(stdout, "repo     %s\n", res.Snapshot.Repo)
	fmt.Fprintf(stdout, "sha      %s\n", res.Snapshot.SHA)
	fmt.Fprintf(stdout, "store    %s\n", settings.store)
	switch {
	case res.SetupRan:
		fmt.Fprintf(stdout, "setup    ran (%d commands)\n", len(res.Setup))
	case len(b.Setup) > 0:
		fmt.Fprintln(stdout, "setup    skipped: every cache's lockfiles are unchanged")
	default:
		fmt.Fprintln(stdout, "setup    none")
	}
	for _, p := range res.Reused {
		fmt.Fprintf(stdout, "reused   %s\n", p)
	}
	for _, p := range res.Rebuilt {
		fmt.Fprintf(stdout, "rebuilt  %s\n", p)
	}
	printSnapshotEgress(stdout, res.Egress)
	return 0
}

// printSnapshotEgress prints a build's egress audit, as the app keeps it
// with the build and its snapshots page shows it: a count, then each
// registry request and each refusal, one a line. The paths and reasons
// are the sandbox's, cleaned of control characters as they were
// recorded. Nothing when setup sent nothing.
func printSnapshotEgress(w io.Writer, a *contract.EgressAudit) {
	if a.Empty() {
		return
	}
	fmt.Fprintf(w, "egress   %d registry requests, %d bytes, %d refused\n", a.Registry.Requests, a.Registry.Bytes, a.RefusedCount)
	for _, r := range a.Records {
		fmt.Fprintf(w, "request  %s %s %s -> %d, %d bytes\n", r.Method, r.Upstream, r.Path, r.Status, r.Bytes)
	}
	for _, t := range a.Totals {
		fmt.Fprintf(w, "request  and %d more to %s, %d bytes\n", t.Requests, cmp.Or(t.Upstream, "other registries"), t.Bytes)
	}
	for _, r := range a.Refused {
		target := r.Path
		if r.Upstream != "" {
			target = r.Upstream + " " + r.Path
		}
		if r.Quiet {
			target += " (quietly)"
		}
		fmt.Fprintf(w, "refused  %s %s: %s\n", r.Method, target, r.Why)
	}
	if a.RefusedDropped > 0 {
		fmt.Fprintf(w, "refused  and %d more, not listed\n", a.RefusedDropped)
	}
}

func snapshotListCmd(args []string, stdout, stderr io.Writer) int {
	f := newSnapshotFlags("list", stderr)
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	settings, err := f.settings()
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot list: %v\n", err)
		return 2
	}
	if missingLayout(settings.store) {
		// Nothing to list, and nothing to create: a read never writes.
		fmt.Fprintf(stderr, "inspect snapshot list: no snapshots of %s in %s (no layout there)\n", f.repo, settings.store)
		return 0
	}
	store, err := images.OpenStore(settings.store)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot list: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	snaps, err := store.List(ctx, f.repo)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot list: %v\n", err)
		return 1
	}
	if len(snaps) == 0 {
		fmt.Fprintf(stderr, "inspect snapshot list: no snapshots of %s in %s\n", f.repo, settings.store)
	}
	for _, s := range snaps {
		fmt.Fprintf(stdout, "%s  %s  %s\n", s.Digest, s.SHA, s.Built.Format(time.RFC3339))
	}
	return 0
}

func snapshotGCCmd(args []string, stdout, stderr io.Writer) int {
	f := newSnapshotFlags("gc", stderr)
	keep := f.fs.Int("keep", 0, "how many of the newest snapshots to keep, at least 1 (default: snapshots.keep, 5)")
	if code := f.parse(args, stderr); code >= 0 {
		return code
	}
	settings, err := f.settings()
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot gc: %v\n", err)
		return 2
	}
	n := settings.keep
	if isFlagSet(f.fs, "keep") {
		n = *keep
	}
	if n < 1 {
		fmt.Fprintln(stderr, "inspect snapshot gc: --keep must be at least 1")
		return 2
	}
	if missingLayout(settings.store) {
		fmt.Fprintf(stderr, "inspect snapshot gc: removed 0 snapshots of %s: no layout at %s\n", f.repo, settings.store)
		return 0
	}
	store, err := images.OpenStore(settings.store)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot gc: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	removed, err := store.GC(ctx, f.repo, n)
	if err != nil {
		fmt.Fprintf(stderr, "inspect snapshot gc: %v\n", err)
		return 1
	}
	for _, d := range removed {
		fmt.Fprintf(stdout, "removed  %s\n", d)
	}
	fmt.Fprintf(stderr, "inspect snapshot gc: removed %d snapshots of %s, kept the newest %d (and latest)\n", len(removed), f.repo, n)
	return 0
}

// missingLayout reports whether store is an OCI layout whose directory is
// not there (OpenStore would create it).
func missingLayout(store string) bool {
	dir, ok := strings.CutPrefix(store, images.LayoutPrefix)
	if !ok {
		return false
	}
	_, err := os.Stat(dir)
	return errors.Is(err, os.ErrNotExist)
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// snapshotCheckOwner fails early, and clearly, when dir is not a git
// checkout, or its git directory belongs to another user: the build clones
// it with the supervisor's git, which reads no user configuration (so no
// safe.directory exception) and would refuse it as of dubious ownership.
func snapshotCheckOwner(ctx context.Context, dir string) error {
	owner := func(p string) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): the build's git refuses another user's repository; run the build as its owner, or on a clone of your own", p, st.Uid, os.Geteuid())
		}
		return nil
	}
	out, err := checkoutrun.UserGit(ctx, "git", dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if err := owner(dir); err != nil {
			return err // your own git may refuse it too, for the same reason
		}
		return fmt.Errorf("%s is not a git checkout: %v", dir, err)
	}
	return owner(strings.TrimSpace(string(out)))
}

// snapshotRepoConfig reads .github/inspect.yml (or .yaml) as committed at
// sha.
func snapshotRepoConfig(ctx context.Context, checkout, sha string) (config.Repo, string, error) {
	for _, p := range config.RepoConfigPaths {
		spec := sha + ":" + p
		if _, err := checkoutrun.UserGit(ctx, "git", checkout, "cat-file", "-e", spec); err != nil {
			continue
		}
		data, err := checkoutrun.UserGit(ctx, "git", checkout, "cat-file", "blob", spec)
		if err != nil {
			return config.Repo{}, "", fmt.Errorf("reading %s at %s: %v", p, sha[:12], err)
		}
		source := p + " at " + sha[:12]
		cfg, err := config.ParseRepo(data)
		if err != nil {
			return config.Repo{}, "", fmt.Errorf("%s: %v", source, err)
		}
		return cfg, source, nil
	}
	return config.Repo{}, "", fmt.Errorf("no %s is committed at %s", strings.Join(config.RepoConfigPaths, " or "), sha[:12])
}

// pullBaseImage pulls the toolchain image by reference, with the default
// keychain (as the app does for snapshots.base_image).
func pullBaseImage(ctx context.Context, reference string) (v1.Image, error) {
	return images.OpenBaseImage(ctx, reference)
}
