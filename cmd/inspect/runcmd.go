package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/runner/checkoutrun"
	"github.com/inspecthq/inspect/runner/supervisor"
)

const runUsage = `Usage: inspect run [flags] [--] INSTRUCTIONS...

Runs a session locally, in the sandbox, on the HEAD commit of a git checkout
(uncommitted changes are not included), with no GitHub, as the server would
run it: the agent, setup, env, snapshot, verify commands, protected paths and
limits come from .github/inspect.yml as committed at HEAD (unless --config or
--agent says otherwise), and the models and registries from --server-config,
a server config file with the keys of ` + "`inspect serve --config`" + ` (only
sessions.*, agents.* and egress.* are read). The model proxy and the registry
egress are served on loopback for this one session. It prints the evidence,
and writes the change as a patch (inspect.patch in the current directory by
default; none when the agent changed nothing or the change was refused) that
applies with ` + "`git apply`" + ` at the top of a clean checkout of that commit.

Exit status: 0 when the session ran and verification passed (or nothing
verifies), 1 when the agent or verification failed, the change was refused,
or the session timed out or could not run, 2 for usage errors.

Flags:
`

// agentFlag is --agent: the agent's argv as one JSON array, given once.
type agentFlag struct {
	argv []string
	set  bool
}

func (a *agentFlag) String() string {
	if a == nil || !a.set {
		return ""
	}
	b, _ := json.Marshal(a.argv)
	return string(b)
}

func (a *agentFlag) Set(v string) error {
	if a.set {
		return errors.New("give --agent once, with the whole argv as a JSON array")
	}
	var argv []string
	if err := json.Unmarshal([]byte(v), &argv); err != nil || len(argv) == 0 || argv[0] == "" {
		return errors.New(`must be a non-empty JSON array of strings, such as '["sh", "fix.sh"]'`)
	}
	a.argv, a.set = argv, true
	return nil
}

// forwarderBinary is the inspect binary the sandbox's egress forwarder
// runs; empty means this executable, which is inspect itself. (Tests run
// `inspect run` inside a test binary, so they build inspect and set it.)
var forwarderBinary string

// runCmd is `inspect run`: flags and wiring for runner/checkoutrun.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	var opt checkoutrun.Options
	var agent agentFlag
	var serverCfg serverConfigFlag
	fs.StringVar(&opt.RepoDir, "repo", ".", "the git checkout to run on (its HEAD commit)")
	fs.StringVar(&opt.ConfigFile, "config", "", "a repository config file to use instead of .github/inspect.yml at HEAD")
	serverCfg.register(fs, "a server config file (inspect serve's keys): the models the agent may use (agents.*), the registries (egress.*), the limits (sessions.*)")
	fs.StringVar(&opt.RepoName, "repo-name", "", "the repository as the server knows it, OWNER/NAME (default local/<the checkout's directory>): for egress.registries.*.repos and --snapshot-store")
	fs.StringVar(&opt.SnapshotStore, "snapshot-store", "", `restore the repository's newest snapshot from this store ("oci:DIR" or a registry prefix, as snapshots.store); without it the session clones cold and runs the snapshot setup`)
	fs.Var(&agent, "agent", `the agent's argv as a JSON array, e.g. '["my-agent", "--yes"]', instead of the config's agent (the prompt file is appended)`)
	fs.StringVar(&opt.PatchFile, "patch", "inspect.patch", `where to write the change as a git patch ("" for nowhere); nothing is written when there is no change`)
	fs.StringVar(&opt.EvidenceFile, "evidence", "", "also write evidence.json to this file")
	fs.DurationVar(&opt.Timeout, "timeout", 0, "the session's time limit (default: sessions.timeout of --server-config, 30m); the repository's limits.session_timeout may shorten it")
	fs.BoolVar(&opt.KeepWorkspace, "keep-workspace", false, "leave the attempt's directory in place (debugging)")
	fs.StringVar(&opt.WorkDir, "work-dir", "", "directory for the attempt's workspace (default: the system temp dir); the sandbox user must be able to search every parent")
	uid := fs.Int("sandbox-uid", -1, "host uid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	gid := fs.Int("sandbox-gid", -1, "host gid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	fs.StringVar(&opt.SandboxPath, "sandbox-path", supervisor.DefaultSandboxPath, "PATH inside the sandbox")
	limitFlags(fs, &opt.Limits, defaultLimits())
	verbose := fs.Bool("verbose", false, "log the supervisor's steps to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	opt.Instructions = strings.TrimSpace(strings.Join(fs.Args(), " "))
	if opt.Instructions == "" {
		fmt.Fprintln(stderr, "inspect run: no instructions: say what the agent should do, e.g. inspect run -- make TestAdd pass")
		return 2
	}
	if opt.Timeout < 0 || isFlagSet(fs, "timeout") && opt.Timeout == 0 {
		fmt.Fprintln(stderr, "inspect run: --timeout must be positive")
		return 2
	}
	if (*uid < 0) != (*gid < 0) || *uid > 1<<31 || *gid > 1<<31 {
		fmt.Fprintln(stderr, "inspect run: give both --sandbox-uid and --sandbox-gid, or neither")
		return 2
	}
	if *uid >= 0 {
		opt.SandboxUID, opt.SandboxGID = uint32(*uid), uint32(*gid)
	}
	opt.Agent = agent.argv
	opt.RunnerVersion = version
	opt.ForwarderBinary = forwarderBinary
	opt.Progress = stderr
	level := zerolog.WarnLevel
	if *verbose {
		level = zerolog.InfoLevel
	}
	opt.Log = zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(level).With().Timestamp().Logger()
	server, err := serverCfg.load()
	if err != nil {
		fmt.Fprintf(stderr, "inspect run: --server-config: %v\n", err)
		return 2
	}
	opt.Server, opt.ServerSource = server, serverCfg.path
	opt.Egress = localEgress(server, opt.Log)
	opt.ChangeRefusedReply = render.ChangeRefusedReply

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	res, err := checkoutrun.Run(ctx, opt)
	var ue *checkoutrun.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "inspect run: %v\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "inspect run: %v\n", err)
		return 1
	}
	res.WriteSummary(stdout)
	return res.ExitCode()
}
