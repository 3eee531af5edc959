package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/forward"
	"github.com/inspecthq/inspect/runner/probe"
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
	if len(args) > 0 && args[0] == "probe-tcp" {
		return probeTCPCmd(args[1:], stderr)
	}
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg supervisor.Config
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "directory for attempt workspaces (default: the system temp dir); the sandbox user must be able to search every parent")
	uid := fs.Int("sandbox-uid", -1, "host uid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	gid := fs.Int("sandbox-gid", -1, "host gid the sandbox runs as (default: 65600 when root, else your own; never 65534)")
	fs.StringVar(&cfg.SandboxPath, "sandbox-path", supervisor.DefaultSandboxPath, "PATH inside the sandbox")
	// The server's defaults when not given: a Buildkite agent runs a bare
	// `inspect runner`, and its sandboxes are limited too.
	limitFlags(fs, &cfg.Limits, defaultLimits())
	fs.BoolVar(&cfg.KeepWorkspace, "keep-workspace", false, "leave the attempt's directory in place (debugging)")
	fs.StringVar(&cfg.LayerCache, "layer-cache", "", "where snapshot layers are extracted, once per digest (default: WORK_DIR/inspect-layers); the sandbox user must be able to search it")
	fs.StringVar(&cfg.OutDir, "out-dir", "", "also write evidence.json and manifest.json here")
	fs.DurationVar(&cfg.FinishTimeout, "finish-timeout", supervisor.DefaultFinishTimeout, "time allowed to collect and upload the result after the run ends, SIGTERM included; collecting the change may take half of it")
	if code, done := parseFlags(fs, args); done {
		return code
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
	// Messages that steer a running session reach the agent's own CLI
	// conversation (decisions 0071, 0073).
	cfg.Conversations = supervisor.CLIConversations()
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

// limitFlags are the sandbox limits' flags (contract.SandboxLimits; 0 = none),
// with defaults def. The app passes its executor.limits.* through them.
func limitFlags(fs *flag.FlagSet, l *contract.SandboxLimits, def contract.SandboxLimits) {
	fs.Int64Var(&l.MemoryBytes, "limit-memory-bytes", def.MemoryBytes, "memory of each sandboxed command, bytes (0: no limit)")
	fs.Int64Var(&l.Pids, "limit-pids", def.Pids, "processes and threads of each sandboxed command (0: no limit)")
	fs.Int64Var(&l.CPUShares, "limit-cpu-shares", def.CPUShares, "CPU weight of each sandboxed command, cpu.shares units (0: none)")
	fs.Int64Var(&l.TmpBytes, "limit-tmp-bytes", def.TmpBytes, "size of each sandboxed command's /tmp, bytes (0: the kernel's default)")
	fs.Int64Var(&l.WorkspaceBytes, "limit-workspace-bytes", def.WorkspaceBytes, "disk each sandboxed command may use under /workspace, bytes (0: no limit)")
	fs.Int64Var(&l.SessionMemoryBytes, "limit-session-memory-bytes", def.SessionMemoryBytes, "memory of the session's commands and services together, bytes (0: no limit)")
	fs.Int64Var(&l.SessionPids, "limit-session-pids", def.SessionPids, "processes and threads of the session's commands and services together (0: no limit)")
}

// defaultLimits are the server's default executor.limits, as sandbox
// limits.
func defaultLimits() contract.SandboxLimits {
	return contract.SandboxLimits{
		MemoryBytes:    config.DefaultSandboxMemoryBytes,
		Pids:           config.DefaultSandboxPids,
		CPUShares:      config.DefaultSandboxCPUShares,
		TmpBytes:       config.DefaultSandboxTmpBytes,
		WorkspaceBytes: config.DefaultSandboxWorkspaceBytes,

		SessionMemoryBytes: config.DefaultSessionMemoryBytes,
		SessionPids:        config.DefaultSessionPids,
	}
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
	expose := fs.String("expose", "", "SOCKET=ADDR: relay connections to a Unix socket to a loopback address inside the sandbox")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *expose != "" {
		var ok bool
		if o.ExposeSocket, o.ExposeAddr, ok = strings.Cut(*expose, "="); !ok {
			fmt.Fprintf(stderr, "inspect runner forward: --expose %q is not SOCKET=ADDR\n", *expose)
			return 2
		}
	}
	o.Argv, o.Stdout, o.Stderr = fs.Args(), stdout, stderr
	code, err := forward.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintf(stderr, "inspect runner forward: %v\n", err)
	}
	return code
}

// probeTCPCmd is `inspect runner probe-tcp [--timeout D] PORT`, hidden: the
// supervisor runs it inside a session's environment to wait for a
// service's port on that environment's loopback. Exit 0 once a connection
// is accepted, 1 when the timeout passes first, 2 for bad arguments.
func probeTCPCmd(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner probe-tcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	port, err := strconv.Atoi(fs.Arg(0))
	if fs.NArg() != 1 || err != nil || *timeout <= 0 {
		fmt.Fprintln(stderr, "usage: inspect runner probe-tcp [--timeout D] PORT")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := probe.TCP(ctx, port); err != nil {
		fmt.Fprintf(stderr, "inspect runner probe-tcp: nothing accepted a connection on 127.0.0.1:%d within %v: %v\n", port, *timeout, err)
		return 1
	}
	return 0
}

// runnerLimitArgs are the `inspect runner` flags that carry the server's
// sandbox ids and limits to each local supervisor.
func runnerLimitArgs(x config.Executor) []string {
	var args []string
	if x.SandboxUID != 0 {
		args = append(args, "--sandbox-uid", strconv.Itoa(x.SandboxUID), "--sandbox-gid", strconv.Itoa(x.SandboxGID))
	}
	l := x.Limits
	return append(args,
		"--limit-memory-bytes", strconv.FormatInt(l.MemoryBytes, 10),
		"--limit-pids", strconv.FormatInt(l.Pids, 10),
		"--limit-cpu-shares", strconv.FormatInt(l.CPUShares, 10),
		"--limit-tmp-bytes", strconv.FormatInt(l.TmpBytes, 10),
		"--limit-workspace-bytes", strconv.FormatInt(l.WorkspaceBytes, 10),
		"--limit-session-memory-bytes", strconv.FormatInt(l.SessionMemoryBytes, 10),
		"--limit-session-pids", strconv.FormatInt(l.SessionPids, 10),
	)
}
