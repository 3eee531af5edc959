package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/runner/forward"
	"github.com/inspecthq/inspect/runner/supervisor"
)

// runnerCmd is `inspect runner`, the supervisor of one attempt. The executor
// gives it the channel and the claim code through the environment
// (INSPECT_CHANNEL_URL, INSPECT_ATTEMPT_ID, INSPECT_CLAIM_CODE, ...), never
// on the command line; flags hold only host settings.
//
// Exit status: 0 when the result reached the app (whatever the session's
// outcome), 1 when it did not, 2 for bad flags.
func runnerCmd(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "forward" {
		return forwardCmd(args[1:], os.Stdout, stderr)
	}
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg supervisor.Config
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "directory for attempt workspaces (default: the system temp dir); the sandbox user must be able to search every parent")
	uid := fs.Int("sandbox-uid", -1, "host uid the sandbox runs as (default: 65534 when root, else your own)")
	gid := fs.Int("sandbox-gid", -1, "host gid the sandbox runs as (default: 65534 when root, else your own)")
	fs.StringVar(&cfg.SandboxPath, "sandbox-path", supervisor.DefaultSandboxPath, "PATH inside the sandbox")
	fs.BoolVar(&cfg.KeepWorkspace, "keep-workspace", false, "leave the attempt's directory in place (debugging)")
	fs.StringVar(&cfg.LayerCache, "layer-cache", "", "where snapshot layers are extracted, once per digest (default: WORK_DIR/inspect-layers); the sandbox user must be able to search it")
	fs.StringVar(&cfg.OutDir, "out-dir", "", "also write evidence.json and manifest.json here")
	fs.DurationVar(&cfg.FinishTimeout, "finish-timeout", supervisor.DefaultFinishTimeout, "time allowed to collect and upload the result after the run ends, SIGTERM included; collecting the change may take half of it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "inspect runner: unexpected argument %q (the attempt comes from the environment)\n", fs.Arg(0))
		return 2
	}
	if (*uid < 0) != (*gid < 0) || *uid > 1<<31 || *gid > 1<<31 {
		fmt.Fprintln(stderr, "inspect runner: give both --sandbox-uid and --sandbox-gid, or neither")
		return 2
	}
	if *uid >= 0 {
		cfg.SandboxUID, cfg.SandboxGID = uint32(*uid), uint32(*gid)
	}
	cfg.FromEnv(os.LookupEnv)
	cfg.RunnerVersion = version
	cfg.Log = zerolog.New(stderr).With().Timestamp().Str("version", version).Logger()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rep, err := supervisor.Run(ctx, cfg)
	if err != nil {
		cfg.Log.Error().Str("error", err.Error()).Msg("inspect runner stopped")
		return 1
	}
	if !rep.Uploaded {
		return 1
	}
	return 0
}

// forwardCmd is `inspect runner forward`, which the supervisor starts as the
// sandbox's first process: it relays loopback connections to the egress
// socket and runs the agent (the argv after --) as its child. It holds no
// credential and makes no decision; the supervisor's socket does.
func forwardCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner forward", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o forward.Options
	fs.StringVar(&o.Listen, "listen", supervisor.EgressListen, "loopback address the agent's CLI is pointed at")
	fs.StringVar(&o.Socket, "socket", supervisor.EgressSocket, "the egress socket inside the sandbox")
	fs.StringVar(&o.Stdin, "stdin", "", "a file to give the agent as its standard input")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Argv, o.Stdout, o.Stderr = fs.Args(), stdout, stderr
	code, err := forward.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintf(stderr, "inspect runner forward: %v\n", err)
	}
	return code
}
