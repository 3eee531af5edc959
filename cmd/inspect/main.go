// Command inspect is Inspect's production binary. It holds flags and wiring
// only; the logic lives in the packages it wires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// version is the module version and VCS revision the binary was built
// from (debug.ReadBuildInfo), for `inspect version`, logs and the User-Agent.
var (
	build   = readBuildInfo(debug.ReadBuildInfo)
	version = build.token()
)

const usage = `inspect: background coding-agent sessions from GitHub

Usage:
  inspect serve [--config FILE]   run the GitHub App server (webhooks, workers)
  inspect runner [flags]          run one session attempt (started by an executor)
  inspect run [flags] -- INSTR    run a session locally on a checkout, in the sandbox,
                                  with no GitHub; prints the evidence, writes a patch
                                  (inspect run -h for the flags)
  inspect buildkite setup [--config FILE]
                                  create or update the Buildkite session pipeline
  inspect snapshot build|list|gc  build a snapshot image of a checkout, list or collect
                                  a repository's snapshots (inspect snapshot -h)
  inspect setup --public-url URL  register the GitHub App through GitHub's App
                                  manifest flow and write the server's config
                                  (inspect setup -h)
  inspect tools build --out DIR   build the agents' tools image (the CLIs, node and
                                  their libraries) as an OCI layout (inspect tools -h)
  inspect outcomes [--config FILE] [--by DIM] [--json|--csv]
                                  what became of the PRs Inspect opened, from the
                                  server's database; "outcomes backfill" reads them
                                  from GitHub on the server's next passes
  inspect verify ATTESTATION [--key [ID=]PUBKEY.pem ... | --keys-url URL] [--checkout DIR]
                                  check a session's signed provenance: its signature, and
                                  that the checkout's HEAD is its subject (inspect verify -h)
  inspect version, --version      print the version and VCS revision

Configuration: docs/configuration.md. Every key can also be set with an
INSPECT_* environment variable.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "runner":
		return runnerCmd(args[1:], stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "buildkite":
		return buildkiteCmd(args[1:], stdout, stderr)
	case "snapshot":
		return snapshotCmd(args[1:], stdout, stderr)
	case "setup":
		return setupCmd(args[1:], stdout, stderr)
	case "tools":
		return toolsCmd(args[1:], stdout, stderr)
	case "outcomes":
		return outcomesCmd(args[1:], stdout, stderr)
	case "verify":
		return verifyCmd(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, build.line())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "inspect: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "YAML config file (optional; INSPECT_* variables override it)")
	check := fs.Bool("check-config", false, "check the config, the files it names and the executor's tools (bwrap), report every fault, print what serve would use, and exit (contacts nothing)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	probes := config.Probes{LookPath: exec.LookPath, CheckPrivateKey: ghclient.CheckPrivateKey, CheckProvenanceKeys: checkProvenanceKeys}
	if *check {
		return checkConfig(*configPath, os.LookupEnv, probes, stdout, stderr)
	}
	// The same check as --check-config, so a start reports every fault
	// at once too, not the config's first and the files' on the next run.
	cfg, warnings, err := config.Check(*configPath, os.LookupEnv, probes)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "inspect: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		// 2 when the config itself is wrong; 1 when it is sound and what
		// it names (a file, the App key, bwrap) is not.
		if _, lerr := config.Load(*configPath, os.LookupEnv); lerr != nil {
			return 2
		}
		return 1
	}
	log := zerolog.New(stderr).Level(cfg.Level()).With().Timestamp().Str("version", version).Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serveWith(ctx, cfg, log); err != nil {
		log.Error().Err(err).Msg("inspect serve stopped")
		return 1
	}
	return 0
}

// checkConfig is `inspect serve --check-config`: everything serve checks
// before it contacts anything, and the executor's tools, every fault in
// one run (config.Check).
func checkConfig(path string, env func(string) (string, bool), probes config.Probes, stdout, stderr io.Writer) int {
	cfg, warnings, err := config.Check(path, env, probes)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "inspect: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "inspect: %v\n", err)
		return 1
	}
	db := cfg.Database.DSN
	if cfg.Database.Driver == "postgres" {
		db = "(a PostgreSQL URL)" // it may carry a password
	}
	fmt.Fprintf(stdout, "inspect: the config is valid: App %d on %s, executor %s, %s database %s, state in %s\n",
		cfg.GitHub.AppID, cfg.GitHub.APIURL, cfg.Executor.Kind, cfg.Database.Driver, db, cfg.StateDir)
	return 0
}

// parseFlags parses args into fs. done is true when the command should
// exit with code: 0 after -h or --help (the usage went to fs's output), 2
// for a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	case err != nil:
		return 2, true
	}
	return 0, false
}

// buildInfo is what debug.ReadBuildInfo tells of the binary: the module
// version ("(devel)" for a build from a checkout) and the VCS revision `go
// build` stamps into binaries built in a git work tree.
type buildInfo struct {
	module, revision string
	modified         bool
}

func readBuildInfo(read func() (*debug.BuildInfo, bool)) buildInfo {
	info, ok := read()
	if !ok {
		return buildInfo{module: "unknown"}
	}
	b := buildInfo{module: info.Main.Version}
	if b.module == "" {
		b.module = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// token is the version as one HTTP product-version token (User-Agent,
// logs): v1.2.3, or devel-<12 hex>[-modified].
func (b buildInfo) token() string {
	v := strings.Trim(b.module, "()")
	if b.revision != "" && (b.module == "(devel)" || strings.Contains(b.module, "-0.")) {
		rev := b.revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += "-" + rev
	}
	if b.modified {
		v += "-modified"
	}
	return v
}

// line is what `inspect version` prints.
func (b buildInfo) line() string {
	rev := b.revision
	if rev == "" {
		rev = "no VCS revision"
	}
	if b.modified {
		rev += ", modified"
	}
	return "inspect " + b.module + " (" + rev + ")"
}

func serveWith(ctx context.Context, cfg config.Server, log zerolog.Logger) error {
	if err := cfg.CheckFiles(); err != nil {
		return err
	}
	// Keys that do not parse stop the start, not the first attestation.
	if _, err := provenance.LoadKeyring(cfg.Provenance); err != nil {
		return err
	}
	key, err := cfg.PrivateKeyPEM()
	if err != nil {
		return err
	}
	if cfg.StateDir != "" {
		// The defaults' files live here (config.ResolveStatePaths).
		if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
			return fmt.Errorf("state_dir: %w", err)
		}
	}
	st, err := store.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Warn().Err(err).Msg("closing the store")
		}
	}()
	// Every replica's requests share one budget per installation, counted
	// in the database (github.outbound).
	lim := ghclient.NewOutboundLimiter(cfg.GitHub.Outbound, st, log)
	// One registry for the server (metrics.listen serves it), which the
	// GitHub and Buildkite transports record into.
	m := metrics.New()
	countGitHub := ghclient.WithBaseTransport(func(rt http.RoundTripper) http.RoundTripper { return m.Transport(metrics.GitHub, rt) })
	gh, err := ghclient.NewGitHubClients(cfg.GitHub.APIURL, cfg.GitHub.AppID, key, "inspect/"+version, lim, countGitHub)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	var metricsLn net.Listener
	if cfg.Metrics.Listen != "" {
		// Operator-only: its own address, never the webhook listener.
		if metricsLn, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics.listen: %w", err)
		}
	}
	channelURL := cfg.ChannelURL
	if channelURL == "" {
		// The local executor's supervisors run on this host: loopback.
		channelURL = fmt.Sprintf("http://127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)
	}
	var exec app.Executor
	if cfg.Executor.Kind == "buildkite" {
		bx, err := buildkiteExecutor(cfg, m)
		if err != nil {
			return err
		}
		exec = bx
	}
	if cfg.Executor.Kind == "local" {
		if err := sandbox.Available(); err != nil {
			return fmt.Errorf("executor.kind local needs the sandbox: %w", err)
		}
		var args []string
		if cfg.Executor.WorkDir != "" {
			args = append(args, "--work-dir", cfg.Executor.WorkDir)
		}
		args = append(args, runnerLimitArgs(cfg.Executor)...)
		// The supervisors log to our stderr, next to the app's own lines.
		lx, err := local.New(local.Config{Args: args, MaxConcurrent: cfg.Executor.MaxConcurrent, Output: os.Stderr})
		if err != nil {
			return err
		}
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
			defer cancel()
			if err := lx.Close(closeCtx); err != nil {
				log.Warn().Err(err).Msg("stopping local attempts")
			}
		}()
		exec = lx
	}
	var snapshotExec app.Executor
	switch cfg.Executor.Kind {
	case "local":
		// Snapshots are built on this host, in the same sandbox sessions
		// use, each by a supervisor of its own: its setup reaches the
		// registries over the session channel, as a session's does.
		snapshotExec = exec
	case "buildkite":
		// As builds of the snapshot pipeline, whose agents may push.
		sx, err := buildkiteSnapshotExecutor(cfg, m)
		if err != nil {
			return err
		}
		snapshotExec = sx
	}
	var regCache *registryproxy.Cache
	if len(cfg.Egress.Registries) > 0 && !cfg.Egress.Cache.Disabled {
		regCache, err = registryproxy.OpenCache(cfg.Egress.Cache.CacheDir(), cfg.Egress.Cache.MaxBytes, log.With().Str("component", "registry-cache").Logger())
		if err != nil {
			return fmt.Errorf("egress.cache: %w", err)
		}
	}
	svc := app.NewService(app.Options{Config: cfg, Store: st, GitHub: gh, Logger: log, Executor: exec, ChannelURL: channelURL,
		Version: version, SnapshotExecutor: snapshotExec, RegistryCache: regCache, Metrics: m, MetricsListener: metricsLn,
		// github.outbound.max_concurrent is the fleet's: this replica
		// takes its share as replicas come and go.
		OnFleetSize: ghclient.ShareConcurrency(lim, cfg.GitHub.Outbound.MaxConcurrent),
		// The listener is open meanwhile, answering /healthz; the rest
		// waits for the slug (decision 0067).
		AwaitGitHub: func(ctx context.Context) (string, error) {
			return app.WaitForGitHub(ctx, gh, app.DefaultStartBackoff, log)
		}})
	if err := svc.CheckDashboard(); err != nil {
		return err
	}
	listening := log.Info().Str("listen", ln.Addr().String())
	if metricsLn != nil {
		listening = listening.Str("metrics", metricsLn.Addr().String())
	}
	listening.Msg("listening; waiting for GitHub to answer GET /app before taking webhooks")
	err = svc.Serve(ctx, ln)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
