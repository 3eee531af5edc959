// Package supervisor is `inspect runner`: the trusted process that runs one
// attempt of a session, on the app's host (local executor) or a Buildkite
// agent.
//
// In order, it:
//
//  1. claims the attempt over the session channel with its single-use
//     claim code, for the session token every later request carries;
//  2. fetches the spec, and the read-only token for the one repository;
//  3. prepares the attempt's workspace: the pinned commit fetched by the
//     supervisor's own git with that token (see git.go for how the token
//     stays out of argv, URLs and files), a .git of the workspace's own with
//     no remote, and the prompt at /workspace/.inspect/prompt.md. A commit
//     the remote no longer has ends the attempt with outcome error. The
//     top-level .inspect/ is the supervisor's: never part of a change, and
//     where the agent may leave its final answer (answer.md);
//  4. runs the setup commands, the agent (spec.Agent.Command with the
//     prompt file as its last argument) and each verify command, each in a
//     fresh sandbox with its own timeout, everything bounded by the spec's
//     deadline and timeout; a phase the spec opens a registry to runs under
//     the egress forwarder with its package managers pointed at it
//     (registry.go), and the agent reaches the model proxy (egress.go);
//  5. collects the change with its own git (never the workspace's .git,
//     which the agent controlled), outside the sandbox, into a change
//     manifest, as soon as the agent ends and before verify, which runs in
//     a workspace of exactly the pinned commit and that change (decision
//     0023); and the evidence: each command's exit status, duration and
//     redacted output tail, go test -json and JUnit XML results (see
//     junit.go), the diffstat, the agent's answer;
//  6. uploads both (PUT contract.PathResult; a retry is harmless), and
//     sends progress events at each phase, best effort.
//
// When its context ends (SIGTERM from the executor) or the deadline passes,
// the sandbox is killed, and the evidence gathered so far still goes up,
// with Partial set and outcome cancelled or timed_out, within
// Config.FinishTimeout.
//
// Nothing the supervisor holds enters the sandbox: its environment is
// HOME, PATH, LANG and three INSPECT_* values naming the session and the
// files (see sandboxEnv). Every credential the supervisor sees (claim code,
// session token, repo token and its Basic form) seeds the Redactor that
// scrubs the evidence.
package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/testreport"
)

// Defaults for Config's zero values.
const (
	// DefaultSandboxPath includes /usr/local/go/bin, where Go is installed
	// by the official tarball, so a repo's `go test` works with the host
	// toolchain (snapshot images bring their own later).
	DefaultSandboxPath    = "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	DefaultFinishTimeout  = 30 * time.Second
	DefaultRequestTimeout = 30 * time.Second
	DefaultUploadAttempts = 4
	DefaultRetryDelay     = time.Second
	// DefaultSandboxID is the sandbox's uid and gid for a root supervisor
	// when none are given: one that no host account or daemon has
	// (decision 0031). Not nobody (65534), which host daemons run as: a
	// process of theirs could read and write a workspace of nobody's.
	// 65536-99999 is above every distribution's and systemd's allocations
	// (systemd's DynamicUser ends at 65519) and below the subordinate-id
	// ranges useradd hands out (from 100000).
	DefaultSandboxID = 65600
	// nobodyID is refused as the sandbox's uid or gid for a root
	// supervisor.
	nobodyID = 65534
)

// Config configures one run of the supervisor. ChannelURL (or
// ChannelSocket), AttemptID and ClaimCode come from the executor through
// the environment (see FromEnv); the rest are flags.
type Config struct {
	ChannelURL    string
	ChannelSocket string
	SessionID     string // optional; checked against the spec when set
	AttemptID     string
	ClaimCode     string

	// WorkDir is where the attempt's directory is created (os.TempDir()
	// when empty). A root supervisor's sandbox uid must be able to reach
	// it: every parent searchable by others.
	WorkDir string
	// SandboxUID and SandboxGID are the host ids the sandbox runs as: a
	// dedicated unprivileged user, never nobody (65534). Zero means
	// DefaultSandboxID for a root supervisor, and the supervisor's own ids
	// otherwise (an unprivileged supervisor can only run the sandbox as
	// itself).
	SandboxUID, SandboxGID uint32
	// SandboxPath is PATH inside the sandbox (DefaultSandboxPath).
	SandboxPath string
	// Limits cap every sandboxed command: memory, processes, CPU share,
	// /tmp and workspace disk use (decision 0031). A command over one is
	// stopped and the attempt ends limit_exceeded, naming it. Zero fields
	// are no limit; the app's executor passes the server's defaults.
	Limits contract.SandboxLimits
	// KeepWorkspace leaves the attempt's directory in place (debugging,
	// tests); it is removed otherwise.
	KeepWorkspace bool
	// OutDir, when set, receives evidence.json and manifest.json as well
	// (Buildkite uploads them as artifacts).
	OutDir string
	// RunnerVersion is `inspect version`, sent in every request and put in
	// the evidence.
	RunnerVersion string
	// FinishTimeout bounds collecting and uploading the result once the
	// run has ended, even when it ended because of SIGTERM. Collecting the
	// change, after the agent or here, may take half of it
	// (collectBudget).
	FinishTimeout time.Duration
	// RequestTimeout bounds one channel request.
	RequestTimeout time.Duration
	// Conversations continues the agent's conversation when a message
	// steers the session (turns.go); nil takes no messages while the
	// agent runs (they wait for the session's end).
	Conversations Conversations
	// StopGrace is how long an interrupted agent has to end after SIGTERM
	// (sandbox.DefaultStopGrace when 0).
	StopGrace time.Duration
	// UploadAttempts and RetryDelay: the result upload is retried on
	// network errors and 5xx, RetryDelay doubling each time.
	UploadAttempts int
	RetryDelay     time.Duration
	// LayerCache is where snapshot layers are extracted, once per digest
	// and shared by attempts (default: WorkDir/inspect-layers). The
	// sandbox uid must be able to search it: an image root is bound from
	// there.
	LayerCache string
	// Git is the git binary ("git" on PATH when empty).
	Git string
	// ForwarderBinary is the inspect binary copied into the sandbox for
	// the egress forwarder (`inspect runner forward`); empty means this
	// process's own executable, which is inspect itself in production.
	ForwarderBinary string
	// Log receives the supervisor's log; the zero Logger discards.
	Log zerolog.Logger
	// Now is time.Now, injectable for tests; it stamps evidence and
	// events. Deadlines are enforced by the real clock.
	Now func() time.Time
}

// FromEnv fills the channel and attempt fields from the environment names
// in contract.
func (c *Config) FromEnv(lookup func(string) (string, bool)) {
	get := func(k string) string { v, _ := lookup(k); return v }
	c.ChannelURL = get(contract.EnvChannelURL)
	c.ChannelSocket = get(contract.EnvChannelSocket)
	c.SessionID = get(contract.EnvSessionID)
	c.AttemptID = get(contract.EnvAttemptID)
	c.ClaimCode = get(contract.EnvClaimCode)
}

func (c Config) withDefaults() (Config, error) {
	if c.ChannelURL == "" && c.ChannelSocket == "" {
		return c, fmt.Errorf("supervisor: %s (or %s) is not set", contract.EnvChannelURL, contract.EnvChannelSocket)
	}
	if c.AttemptID == "" || c.ClaimCode == "" {
		return c, fmt.Errorf("supervisor: %s and %s must be set", contract.EnvAttemptID, contract.EnvClaimCode)
	}
	if c.WorkDir == "" {
		c.WorkDir = os.TempDir()
	}
	if !filepath.IsAbs(c.WorkDir) {
		abs, err := filepath.Abs(c.WorkDir)
		if err != nil {
			return c, err
		}
		c.WorkDir = abs
	}
	if c.SandboxUID == 0 && c.SandboxGID == 0 {
		if os.Geteuid() == 0 {
			c.SandboxUID, c.SandboxGID = DefaultSandboxID, DefaultSandboxID
		} else {
			c.SandboxUID, c.SandboxGID = uint32(os.Getuid()), uint32(os.Getgid())
		}
	}
	if err := checkSandboxIDs(c.SandboxUID, c.SandboxGID); err != nil {
		return c, err
	}
	if c.SandboxPath == "" {
		c.SandboxPath = DefaultSandboxPath
	}
	if c.FinishTimeout <= 0 {
		c.FinishTimeout = DefaultFinishTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.UploadAttempts <= 0 {
		c.UploadAttempts = DefaultUploadAttempts
	}
	if c.RetryDelay < 0 {
		c.RetryDelay = 0
	} else if c.RetryDelay == 0 {
		c.RetryDelay = DefaultRetryDelay
	}
	if c.Git == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return c, errors.New("supervisor: git is not on PATH")
		}
		c.Git = p
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Report is what a run produced.
type Report struct {
	Evidence contract.Evidence
	Manifest *contract.Manifest
	// Uploaded is set when the app acknowledged the result.
	Uploaded bool
	// AttemptDir is the attempt's directory; it exists afterwards only
	// with KeepWorkspace.
	AttemptDir string
}

// Errors that end the run early.
var (
	errDeadline     = errors.New("the session's deadline passed")
	errAttemptEnded = errors.New("the app ended the attempt")
)

// Run runs one attempt. It returns an error, with no Report, only when
// there was nothing to report to: the sandbox cannot run here (checked
// before the claim code is spent), the claim or the spec fetch failed, or
// the spec is not for this attempt. Every later failure is an outcome in
// the uploaded evidence; the Report says whether the upload succeeded.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := sandbox.Available(); err != nil {
		return nil, err
	}
	if err := checkReachable(cfg.WorkDir, cfg.SandboxUID, cfg.SandboxGID); err != nil {
		return nil, err
	}
	// Session budgets a crashed supervisor (or a failed close) left on
	// this host go now; a live one is locked by its own supervisor. The
	// host's clock, not cfg.Now: it is compared with the cgroups' times.
	if removed, err := sandbox.SweepBudgets(time.Now()); err != nil {
		cfg.Log.Warn().Str("error", err.Error()).Strs("removed", removed).Msg("sweeping leftover session cgroups")
	} else if len(removed) > 0 {
		cfg.Log.Info().Strs("removed", removed).Msg("removed leftover session cgroups")
	}
	start := cfg.Now()
	red := contract.NewRedactor(cfg.ClaimCode)
	ch, err := newChannel(cfg.ChannelURL, cfg.ChannelSocket, cfg.AttemptID, cfg.RunnerVersion)
	if err != nil {
		return nil, err
	}
	defer ch.close()
	log := cfg.Log.With().Str("attempt_id", cfg.AttemptID).Logger()

	rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	claim, err := ch.claim(rctx, cfg.ClaimCode)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("supervisor: claiming the attempt: %s", red.Redact(err.Error()))
	}
	red.Add(claim.SessionToken)
	if claim.Kind == contract.KindSnapshot {
		return runSnapshotJob(ctx, cfg, ch, red, log)
	}
	rctx, cancel = context.WithTimeout(ctx, cfg.RequestTimeout)
	spec, err := ch.spec(rctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("supervisor: fetching the spec: %s", red.Redact(err.Error()))
	}
	if spec.AttemptID != cfg.AttemptID || (cfg.SessionID != "" && spec.SessionID != cfg.SessionID) {
		return nil, fmt.Errorf("supervisor: the spec is for attempt %s of session %s, not this one", spec.AttemptID, spec.SessionID)
	}
	if claim.Kind == contract.KindBaseline && !spec.Baseline {
		// A baseline attempt whose spec would run an agent: never.
		return nil, fmt.Errorf("supervisor: attempt %s is a baseline but its spec is not", spec.AttemptID)
	}
	log = log.With().Str("session_id", spec.SessionID).Logger()
	log.Info().Msg("attempt claimed")

	s := &session{
		cfg:    cfg,
		log:    log,
		ch:     ch,
		red:    red,
		spec:   spec,
		parent: ctx,
		gate:   newEgressGate(spec.Registries, ch, red, log).forAgent(spec.Agent),
		ev: contract.Evidence{
			Version:       contract.EvidenceVersion,
			SessionID:     spec.SessionID,
			AttemptID:     spec.AttemptID,
			RunnerVersion: cfg.RunnerVersion,
			PinnedSHA:     spec.PinnedSHA,
			StartedAt:     start,
		},
	}
	// Overlays come down whatever happens below, a panic included (a
	// SIGKILL cannot be helped: the mounts then outlive the process).
	defer s.unmountOverlays()
	runCtx, stop := context.WithCancelCause(ctx)
	s.stop = stop
	runCtx, cancelDeadline := context.WithDeadlineCause(runCtx, spec.Limits.Deadline, errDeadline)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, spec.Limits.Timeout.Std(), errDeadline)
	s.run(runCtx)
	cancelTimeout()
	cancelDeadline()
	stop(nil)

	rep := s.finish()
	s.unmountOverlays()
	if s.ws != nil {
		rep.AttemptDir = s.ws.dir
		if !cfg.KeepWorkspace {
			if err := removeAll(s.ws.dir); err != nil {
				log.Warn().Str("error", red.Redact(err.Error())).Msg("removing the attempt's directory")
			}
		}
	}
	return rep, nil
}

// session is one attempt's run after the claim.
type session struct {
	cfg    Config
	log    zerolog.Logger
	ch     *channel
	red    *contract.Redactor
	spec   contract.Spec
	parent context.Context // the caller's context: done on SIGTERM
	stop   context.CancelCauseFunc

	git      *git
	ws       *workspace
	restored *restored // the snapshot restored, or nil for a cold clone
	// rootFS and mounts are what every sandboxed command gets: the image
	// root ("" for the host toolchain) and the cache directories.
	rootFS string
	mounts []sandbox.Mount
	// imageEnv is the base image's Env, under the repo's (with rootFS).
	imageEnv []string
	// overlays are the attempt's overlay mounts (snapshot layers), taken
	// down before its directory is removed.
	overlays []overlay
	prepared bool // the workspace holds the pinned commit: a change can be collected
	// collected is set once the change was collected (or refused): it is
	// collected once, after the agent, or in finish when the run ended
	// before that.
	collected bool
	// verifyDir is the verify workspace (verifyws.go), once built: the
	// pinned commit and the change, where verify runs.
	verifyDir string
	// verifyMounts are verify's views of the attempt's writable
	// directories (phaseviews.go), from when setup has run until verify
	// takes them.
	verifyMounts []sandbox.Mount
	// reproduce is the reproduce run's state (reproduce.go), when the
	// spec asks for one.
	reproduce reproduceState
	// setupOut is what setup left outside the change, as it left it
	// (setupoutputs.go): verify gets it, the agent's edits to it not.
	setupOut *setupOutputs
	phase    contract.Phase
	seq      int64
	outSeq   int64 // live output chunks sent (liveOutput), from the one command running at a time
	// goModule is the root go.mod's module path, read before the agent
	// ran, to name the files of failing Go tests.
	goModule string
	// testOutputs are the test results read from each verify command's
	// output (runner/testreport), in order.
	testOutputs []*contract.TestSummary
	ev          contract.Evidence
	manifest    *contract.Manifest

	// verifyStart is when the verify phase began, by the filesystem's
	// clock: test reports written since are collected (see reports.go).
	verifyStart time.Time

	// egress is the sandbox's way out (nil when not open): opened for the
	// agent, and for setup and verify when the spec has a registry (see
	// egressFor), serving gate's decisions (its phase is the handler
	// goroutines'; s.phase is the run's own goroutine's).
	egress *egress
	gate   *egressGate
	// agentStart is when the agent phase began (the flight recorder's
	// files are those written since); turn is the turn the agent runs now
	// (0: the request).
	agentStart time.Time
	turn       int
	// recorder is the flight recorder of the agent's run going now (nil
	// between runs), told a served agent's new turn (served.go), which
	// reads it beside the run's goroutine.
	recorder atomic.Pointer[flightRecorder]
	// agentSocketDir is the host's side of AgentSocketDir while a served
	// agent runs ("" otherwise), and served the conversation it holds,
	// which packAgentState keeps (served.go).
	agentSocketDir string
	served         *ConversationState
	// resumed is the conversation a continuation's agent resumes (nil for
	// a fresh one), restored in agentInvocation.
	resumed *ConversationState
	// agentState is the agent's packed conversation state, kept after its
	// runs for the result's upload (agentstate_session.go).
	agentState []byte
	// invocation is how the agent's preset is run (set for the agent phase).
	invocation *Invocation
	// prompt is the agent's prompt, assembled from the spec in prepare.
	prompt string

	// env is the session's one environment (shared network and IPC
	// namespaces) every command runs within; nil when the supervisor
	// cannot make one (not root) and the spec has no services, each
	// command then having namespaces of its own.
	env *sandbox.Environment
	// services are the services started (services.go); servicesRunning
	// counts their goroutines; probeBin is the inspect binary copied in
	// for probe-tcp.
	services        []*service
	stoppedServices []*service // every service stopped so far: the agent's when it ended, then verify's (serviceCause looks among them after the running ones)
	servicesRunning sync.WaitGroup
	probeBin        string
	// budget is the session's parent cgroup (budget.go), or nil.
	budget *sandbox.Budget
}

// run prepares the workspace and runs the agent and the verify commands,
// recording the outcome. It returns early when ctx ends.
func (s *session) run(ctx context.Context) {
	defer s.closeEgress()
	defer s.closeBudget()      // after the services and every command: they run within it
	defer s.closeEnvironment() // after the services: they run within it
	defer s.stopServices()
	defer s.reproduceNotRun() // before the services stop: it only writes the evidence
	s.enter(contract.PhasePrepare, "preparing the workspace at "+s.spec.PinnedSHA[:12])
	if !s.prepare(ctx) {
		return
	}
	if !s.openBudget(ctx) {
		return
	}
	if !s.openEnvironment(ctx) {
		return
	}
	if !s.setup(ctx) {
		return
	}
	if err := s.recordSetupOutputs(ctx); err != nil {
		s.fail(ctx, "recording what setup left", err)
		return
	}
	if err := s.splitPhaseViews(); err != nil {
		s.fail(ctx, "giving the agent and verify each a view of what setup left", err)
		return
	}
	s.ev.Workspace.PrepareMS = max(s.cfg.Now().Sub(s.ev.StartedAt).Milliseconds(), 0)

	if s.spec.Baseline {
		// The base's verify (decision 0080): no agent, no change. The
		// verify workspace is the pinned commit and what setup left;
		// nothing is collected, here or in finish.
		s.collected = true
		if len(s.spec.Verify) == 0 || !s.egressFor(contract.PhaseVerify) {
			s.closeEgress()
		}
		s.verify(ctx, "verifying the base")
		return
	}

	s.enter(contract.PhaseAgent, "running the agent")
	inv, err := s.agentInvocation(ctx)
	if err != nil {
		s.fail(ctx, "preparing the agent", err)
		return
	}
	s.invocation = &inv
	if !s.startServices(ctx, contract.PhaseAgent) {
		return
	}
	if err := s.openEgress(); err != nil {
		s.fail(ctx, "opening the sandbox's egress proxy", err)
		return
	}
	s.agentStart = time.Now()
	run := s.runAgent(ctx, inv)
	s.keepAgentState()
	agent := run.result
	if len(s.spec.Verify) == 0 || !s.egressFor(contract.PhaseVerify) {
		s.closeEgress()
	}
	if !run.ok || s.cutShort(ctx) {
		return
	}
	if !agent.Succeeded() && !run.stopped {
		s.ev.Outcome = contract.OutcomeAgentFailed
		s.ev.Reason = "the agent " + agent.Ending()
		return
	}
	// Nothing of the agent's phase may run on while the change is
	// collected or into verify: its services go now, whole (decision
	// 0057). The early returns above leave that to run's deferred stop,
	// which also comes before finish collects.
	s.stopServices()
	// The change is fixed now, before verify: verify runs on exactly the
	// pinned commit and it (verifyws.go), and nothing it writes joins it.
	if !s.collect(ctx) {
		return
	}
	s.planReproduce()
	s.verify(ctx, "verifying the change")
}

// verify runs the verify commands in the verify workspace (the pinned
// commit and the change collected, or the pinned commit alone for a
// baseline) and records the outcome: ok, or verify_failed naming each
// failing command.
func (s *session) verify(ctx context.Context, what string) {
	if len(s.spec.Verify) > 0 {
		s.enter(contract.PhaseVerify, fmt.Sprintf("%s (%d commands)", what, len(s.spec.Verify)))
		if err := s.buildVerifyWorkspace(ctx); err != nil {
			var ce *changeError
			if errors.As(err, &ce) {
				s.noteChangeError(err)
				s.manifest = nil
				return
			}
			s.fail(ctx, "building the verify workspace", err)
			return
		}
		s.prepareReproduce(ctx) // before verify's commands touch what setup left
		s.verifyStart = fsNow(s.ws.dir)
		if !s.enterVerifyViews(ctx) {
			return
		}
		if s.egressFor(contract.PhaseVerify) {
			if err := s.openEgress(); err != nil {
				s.fail(ctx, "opening the sandbox's egress proxy", err)
				return
			}
		}
		if !s.startServices(ctx, contract.PhaseVerify) {
			return
		}
	}
	var failed []string
	for _, c := range s.spec.Verify {
		r, ok := s.command(ctx, c.Name, c.Argv, c.Timeout.Std())
		if !ok || s.cutShort(ctx) {
			return
		}
		if !r.Succeeded() {
			failed = append(failed, c.Name+" "+r.Ending())
		}
	}
	if len(failed) > 0 {
		s.ev.Outcome = contract.OutcomeVerifyFailed
		s.ev.Reason = "verification failed: " + strings.Join(failed, "; ")
	} else {
		s.ev.Outcome = contract.OutcomeOK
	}
	// Reproduce first (reproduce.go): verify again, on the pinned commit
	// with only the change's test files; the outcome stays verify's.
	s.runReproduce(ctx)
}

// prepare fetches the pinned commit into a new workspace and writes the
// prompt. On failure it records outcome error (or how the run was cut
// short) and returns false.
func (s *session) prepare(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	tok, err := s.ch.repoToken(rctx)
	cancel()
	if err != nil {
		return s.fail(ctx, "getting the repository's read token", err)
	}
	s.red.Add(tok.Token, basicCredential(tok.Token))

	ws, err := newWorkspace(s.cfg.WorkDir, s.spec.AttemptID)
	if err != nil {
		return s.fail(ctx, "creating the workspace", err)
	}
	s.ws = ws
	s.git = &git{bin: s.cfg.Git, home: ws.homeDir, path: os.Getenv("PATH")}
	if s.git.path == "" {
		s.git.path = DefaultSandboxPath
	}
	s.ev.Workspace = &contract.Workspace{Source: contract.WorkspaceClone}
	base := ""
	if s.spec.Snapshot != nil && s.spec.Snapshot.Digest != "" {
		r, err := s.restore(ctx)
		switch {
		case err == nil:
			s.restored, base = r, r.snap.SHA
		case ctx.Err() != nil:
			return s.fail(ctx, "restoring the snapshot", err)
		default:
			// A snapshot is an optimisation: without it the session starts
			// cold, and the evidence says so.
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("snapshot restore failed; cloning cold")
			s.ev.Workspace.RestoreError = contract.CleanProgressMessage(s.red.Redact(err.Error()))
			s.unmountOverlays() // a failed restore may have mounted some
			if err := resetDir(ws.work); err != nil {
				return s.fail(ctx, "clearing the workspace after a failed restore", err)
			}
		}
	}
	drift, err := ws.fetchOnto(ctx, s.git, s.spec.Repo.CloneURL, s.spec.PinnedSHA, tok.Token, base)
	var gone *shaGoneError
	if err != nil && base != "" && !errors.As(err, &gone) && ctx.Err() == nil {
		// The restored snapshot could not be caught up (a corrupt .git in
		// it, say): start over cold rather than fail the session.
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("catching the snapshot up failed; cloning cold")
		s.ev.Workspace.RestoreError = contract.CleanProgressMessage(s.red.Redact("catching up: " + err.Error()))
		s.restored = nil
		s.unmountOverlays()
		if err := resetDir(ws.work); err != nil {
			return s.fail(ctx, "clearing the workspace after a failed catch-up", err)
		}
		if err := resetDir(ws.gitDir); err != nil {
			return s.fail(ctx, "clearing the private repository after a failed catch-up", err)
		}
		drift, err = ws.fetchOnto(ctx, s.git, s.spec.Repo.CloneURL, s.spec.PinnedSHA, tok.Token, "")
	}
	if s.restored != nil && err == nil {
		s.ev.Workspace = &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: s.restored.snap.Digest.String(),
			SnapshotCreatedAt: s.restored.snap.Built, DriftCommits: drift, ImageRoot: s.restored.imageRoot}
		// The labels' names are shown where they are sound; a snapshot
		// that names no base, or one evidence could not carry, shows none.
		if base := (&contract.BaseImage{Name: s.restored.snap.BaseName, Digest: s.restored.snap.BaseDigest}); base.Name != "" && base.Validate() == nil {
			s.ev.Workspace.BaseImage = base
		}
	}
	if errors.As(err, &gone) && ctx.Err() == nil {
		s.ev.Outcome = contract.OutcomeError
		s.ev.Reason = fmt.Sprintf("the pinned commit %s is no longer in %s/%s (a force-push or a deleted branch?), so the session cannot start: %v",
			s.spec.PinnedSHA, s.spec.Repo.Owner, s.spec.Repo.Name, err)
		return false
	}
	if err != nil {
		return s.fail(ctx, "fetching the pinned commit", err)
	}
	if s.spec.Snapshot != nil {
		var tracked *trackedCacheError
		switch err := refuseTrackedCaches(ctx, s.git, ws, s.spec.PinnedSHA, s.spec.Snapshot.Caches); {
		case errors.As(err, &tracked):
			s.ev.Outcome, s.ev.Reason = contract.OutcomeError, tracked.Error()
			return false
		case err != nil:
			return s.fail(ctx, "checking the caches", err)
		}
	}
	s.prepared = true

	// Written for the agent only after setup (agentInvocation): setup runs
	// the repository's own commands, which could rewrite it.
	s.prompt = buildPrompt(&s.spec)
	s.ev.Prompt = s.red.Redact(s.prompt) // saved with the evidence, as the agent gets it
	// The module path, read before the agent can touch go.mod, names the
	// files of failing Go tests.
	if b, err := readWorkspaceFile(ws.work, "go.mod", 64<<10); err == nil {
		if m := moduleLine.FindSubmatch(b); m != nil {
			s.goModule = string(m[1])
		}
	}
	if s.restored != nil {
		s.rootFS, s.mounts, s.imageEnv = s.restored.rootFS, s.restored.mounts, s.restored.env
	} else if err := s.coldBaseRoot(ctx); err != nil { // decision 0079
		return s.fail(ctx, "preparing the base image", err)
	}
	if err := s.emptyCaches(); err != nil {
		return s.fail(ctx, "preparing the cache directories", err)
	}
	if err := s.envDirs(); err != nil {
		return s.fail(ctx, "preparing the env's directories", err)
	}
	if uid, gid := int(s.cfg.SandboxUID), int(s.cfg.SandboxGID); uid != os.Geteuid() || gid != os.Getegid() {
		dirs := []string{ws.work}
		for _, m := range s.mounts {
			dirs = append(dirs, m.Source)
		}
		for _, d := range dirs {
			var err error
			if ov, ok := s.overlaid(d); ok {
				err = chownWritten(ov, uid, gid) // the layer is the sandbox uid's already
			} else {
				err = chownTree(d, uid, gid)
			}
			if err != nil {
				return s.fail(ctx, "handing the workspace to the sandbox user", err)
			}
		}
	}
	if etcRoot := identityRoot(s.rootFS, s.cfg.SandboxUID); etcRoot != "" {
		// After the hand-over: the files are the supervisor's, read-only.
		ids, err := identityMounts(filepath.Join(s.ws.dir, "etc"), etcRoot, s.cfg.SandboxUID, s.cfg.SandboxGID)
		if err != nil {
			return s.fail(ctx, "writing the sandbox's /etc/passwd", err)
		}
		s.mounts = append(s.mounts, ids...)
	}
	// After the hand-over: the shared cache (test builds only) is every
	// session's, never chowned to one.
	s.mounts = append(s.mounts, sharedGoCacheMounts(withImageEnv(s.imageEnv, s.spec.Env))...)
	// The agents' tools, read-only, in every sandbox of the attempt
	// (decision 0069): whatever the root, the presets run the CLIs from
	// there.
	tools, digest, err := s.toolsMount(ctx)
	if err != nil {
		return s.fail(ctx, "preparing the agents' tools image", err)
	}
	if tools != nil {
		s.mounts, s.ev.ToolsImage = append(s.mounts, *tools), digest
	}
	return true
}

// setup runs, in the setup phase, the repo's snapshot setup when the
// restored caches are stale (a lockfile changed since the snapshot), then
// the repo's session setup. A failing command fails the session: the agent
// would work on a broken environment.
func (s *session) setup(ctx context.Context) bool {
	var cmds []contract.Command
	if s.spec.Snapshot != nil {
		// Cold (no snapshot yet, or none could be restored): the caches
		// are empty, so the snapshot setup fills them. Restored: only when
		// a lockfile changed since the snapshot.
		stale := true
		if s.restored != nil {
			var err error
			if stale, err = s.snapshotSetupNeeded(s.restored); err != nil {
				return s.fail(ctx, "comparing the lockfiles with the snapshot's", err)
			}
		}
		if stale {
			cmds = append(cmds, s.withoutServiceSetup(s.spec.Snapshot.Setup)...)
			if s.restored != nil {
				// The caches are setup's now: the layers no longer say
				// what verify needs (verifyws.go).
				s.restored.workspaceCaches = nil
			}
		}
	}
	cmds = append(cmds, s.spec.Setup...)
	if len(cmds) == 0 {
		return true
	}
	if err := s.restored.stampBeforeSetup(s.ws.work); err != nil {
		return s.fail(ctx, "recording the restored caches before setup", err)
	}
	s.enter(contract.PhaseSetup, fmt.Sprintf("setting up (%d commands)", len(cmds)))
	if s.egressFor(contract.PhaseSetup) {
		if err := s.openEgress(); err != nil {
			return s.fail(ctx, "opening the sandbox's egress proxy", err)
		}
	}
	for _, c := range cmds {
		r, ok := s.command(ctx, c.Name, c.Argv, c.Timeout.Std())
		if !ok || s.cutShort(ctx) {
			return false
		}
		if !r.Succeeded() {
			s.ev.Outcome = contract.OutcomeError
			s.ev.Reason = "setup failed: " + c.Name + " " + r.Ending()
			return false
		}
	}
	return true
}

// resetDir empties dir, keeping it (and its mode and owner).
func resetDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// AgentHome is the agent CLI's home inside the sandbox: under the reserved
// /workspace/.inspect/, so writable and never part of a change.
const AgentHome = "/workspace/" + inspectDir + "/home"

// agentInvocation says how the spec's agent preset runs, and writes the
// files it needs (a CLI's config) under AgentHome, for the sandbox uid,
// over the conversation state the spec names, restored (a continuation's:
// the agent then resumes it with the prompt).
func (s *session) agentInvocation(ctx context.Context) (Invocation, error) {
	// The prompt (and an empty answer) are written now, after setup: a
	// prompt or answer that setup's commands planted must not count.
	if err := writePrompt(s.ws.work, s.prompt); err != nil {
		return Invocation{}, fmt.Errorf("writing the prompt: %w", err)
	}
	inv, err := AgentInvocation(s.spec.Agent, s.agentPaths())
	if err != nil {
		return Invocation{}, err
	}
	root, err := os.OpenRoot(s.ws.work)
	if err != nil {
		return Invocation{}, err
	}
	defer root.Close()
	home := strings.TrimPrefix(AgentHome, "/workspace/")
	// .inspect/ is reserved, but the checkout (or setup) may have put a
	// home there: a planted CLI config or last message must not count.
	if err := root.RemoveAll(home); err != nil {
		return Invocation{}, err
	}
	if err := root.MkdirAll(home, 0o755); err != nil {
		return Invocation{}, err
	}
	if st, ok := s.restoreAgentState(ctx, home); ok {
		if inv, err = ResumeInvocation(s.spec.Agent, s.agentPaths(), st, PromptFile); err != nil {
			return Invocation{}, err
		}
		s.resumed = &st
	}
	for _, name := range slices.Sorted(maps.Keys(inv.Files)) {
		rel := path.Join(home, name)
		if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
			return Invocation{}, err
		}
		if err := root.WriteFile(rel, inv.Files[name], 0o600); err != nil {
			return Invocation{}, err
		}
	}
	if uid, gid := int(s.cfg.SandboxUID), int(s.cfg.SandboxGID); uid != os.Geteuid() || gid != os.Getegid() {
		if err := chownTree(filepath.Join(s.ws.work, inspectDir), uid, gid); err != nil {
			return Invocation{}, err
		}
	}
	return inv, nil
}

// agentPaths are where the agent's files are in the sandbox, and its
// model's base URL there.
func (s *session) agentPaths() AgentPaths {
	p := AgentPaths{PromptFile: PromptFile, AnswerFile: AnswerFile, Home: AgentHome}
	if s.spec.Agent.Provider != "" {
		p.ModelBaseURL = ModelBaseURL(s.spec.Agent.Provider)
	}
	return p
}

// agentEnv is the agent's environment: the sandbox's, with the preset's
// own variables (no credential among them, and never HOME or PATH).
func (s *session) agentEnv(extra map[string]string) []string {
	repoEnv, regOwn := s.registryEnv()
	own := []string{"INSPECT_SESSION_ID=" + s.spec.SessionID, "INSPECT_PROMPT_FILE=" + PromptFile, "INSPECT_ANSWER_FILE=" + AnswerFile}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if k != "HOME" && k != "PATH" && !strings.HasPrefix(k, "INSPECT_SESSION") {
			own = append(own, k+"="+extra[k])
		}
	}
	return sandboxEnv(s.cfg.SandboxPath, repoEnv, append(own, regOwn...)...)
}

// sandboxEnv is the sandbox's whole environment. It holds no credential of
// any kind; keep it that way.
func (s *session) sandboxEnv() []string {
	repoEnv, regOwn := s.registryEnv()
	return sandboxEnv(s.cfg.SandboxPath, repoEnv, append([]string{
		"INSPECT_SESSION_ID=" + s.spec.SessionID,
		"INSPECT_PROMPT_FILE=" + PromptFile,
		"INSPECT_ANSWER_FILE=" + AnswerFile}, regOwn...)...)
}

// registryEnv is phaseEnv for the current phase and the spec's registries.
func (s *session) registryEnv() (repoEnv map[string]string, own []string) {
	return phaseEnv(s.spec.Registries, s.phase, withSharedGoCache(withImageEnv(s.imageEnv, s.spec.Env)))
}

// egressFor reports whether phase's commands run under the forwarder with
// the egress socket bound in (egressGate.openFor): the agent's always,
// setup's and verify's when the spec has a registry.
func (s *session) egressFor(phase contract.Phase) bool { return s.gate.openFor(phase) }

// openEgress starts the egress once; later phases that need it share it.
func (s *session) openEgress() error {
	if s.egress != nil {
		return nil
	}
	eg, err := startEgress(filepath.Join(s.ws.dir, "egress"), s.cfg.ForwarderBinary, s.cfg.SandboxUID, s.cfg.SandboxGID, s.gate.handler())
	if err != nil {
		return err
	}
	s.egress = eg
	return nil
}

// closeEgress stops the egress, if open, and logs how much it refused
// (counted, like the log, for the whole attempt).
func (s *session) closeEgress() {
	if s.egress == nil {
		return
	}
	s.egress.close()
	s.egress = nil
	if n := s.gate.refusals.Load(); n > 0 {
		s.log.Info().Int64("refused", n).Msg("the egress proxy turned requests away")
	}
}

// sandboxEnv is a sandboxed command's environment: the repo's env (spec.Env,
// checked by the contract: no credentials, no INSPECT_*, HOME or loader
// variables) with PATH and LANG defaulting to path and C.UTF-8, then
// HOME and Inspect's own variables (own, "K=V"), which win. Each name
// appears once, sorted: a duplicate would leave which one a program sees
// to its libc.
func sandboxEnv(path string, repoEnv map[string]string, own ...string) []string {
	m := map[string]string{"PATH": path, "LANG": "C.UTF-8"}
	maps.Copy(m, repoEnv)
	m["HOME"] = "/tmp"
	for _, kv := range own {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// command runs argv in a fresh sandbox and records it in the evidence. ok is
// false when the sandbox itself could not run (the outcome is then set).
func (s *session) command(ctx context.Context, name string, argv []string, timeout time.Duration) (contract.CommandResult, bool) {
	return s.commandStoppable(ctx, name, argv, timeout, nil)
}

// commandStoppable is command, ended gently when stop closes (the sandbox's
// processes get SIGTERM, then it is killed after Config.StopGrace): a
// message that interrupts the agent (turns.go).
func (s *session) commandStoppable(ctx context.Context, name string, argv []string, timeout time.Duration, stop <-chan struct{}) (contract.CommandResult, bool) {
	out := newTailBuffer(s.spec.Limits.MaxOutputBytes)
	if s.phase == contract.PhaseVerify {
		out.tests = testreport.NewScanner(s.testOptions())
		defer func() { s.testOutputs = append(s.testOutputs, out.tests.Summaries()...) }()
	}
	var sink io.Writer = out
	if s.phase == contract.PhaseAgent || s.phase == contract.PhaseVerify {
		// The dashboard's live view; the evidence's tail is out's.
		live := startLive(s.parent, s.ch, s.red, s.phase, name, &s.outSeq, s.cfg.Now, s.cfg.RequestTimeout, contract.LiveOutputInterval, s.log)
		defer live.close()
		sink = io.MultiWriter(out, live)
	}
	mounts, run, env := s.mounts, argv, s.sandboxEnv()
	if s.egress != nil && s.egressFor(s.phase) {
		// The agent (and setup and verify, when the spec has a
		// registry) runs under the forwarder, with the egress socket bound in;
		// the evidence records the command itself.
		stdin := ""
		if s.phase == contract.PhaseAgent && s.invocation != nil {
			stdin = s.invocation.StdinFile
			env = s.agentEnv(s.invocation.Env)
		}
		mounts = append(slices.Clone(s.mounts), s.egress.mounts()...)
		expose := ""
		if s.phase == contract.PhaseAgent && s.agentSocketDir != "" {
			// A served agent (opencodeserver.go): its server is reached
			// through a socket in this directory.
			mounts = append(mounts, sandbox.Mount{Source: s.agentSocketDir, Target: AgentSocketDir})
			expose = AgentSocketDir + "/" + openCodeSocketName + "=" + OpenCodeServeAddr
		}
		run = s.egress.wrap(argv, stdin, expose)
	}
	var watch func(sandbox.WatchReport)
	if s.phase == contract.PhaseAgent {
		rec := s.startRecorder(s.turn)
		s.recorder.Store(rec)
		defer func() {
			s.recorder.Store(nil)
			rec.close()
		}()
		watch = rec.update
	}
	res, err := sandbox.Run(ctx, sandbox.Spec{
		Workspace:   s.phaseWorkspace(),
		RootFS:      s.rootFS,
		ExtraMounts: mounts,
		Argv:        run,
		Env:         env,
		UID:         s.cfg.SandboxUID,
		GID:         s.cfg.SandboxGID,
		Limits:      s.cfg.Limits,
		Timeout:     timeout,
		Stop:        stop,
		StopGrace:   s.cfg.StopGrace,
		Watch:       watch,
		WatchSince:  s.agentStart,
		Budget:      s.budget,
		Within:      s.env,
		Stdout:      sink,
		Stderr:      sink,
	})
	if err != nil && res.Duration == 0 {
		if ctx.Err() != nil {
			s.cutShort(ctx)
			return contract.CommandResult{}, false
		}
		s.ev.Outcome = contract.OutcomeError
		s.ev.Reason = fmt.Sprintf("the sandbox could not run %s: %v", name, err)
		return contract.CommandResult{}, false
	}
	if err != nil {
		// Redacted like everything else the supervisor logs: an error may
		// quote a path or an argument, and the log goes to the executor.
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Str("command", name).Msg("sandbox cleanup reported an error")
	}
	r := contract.CommandResult{
		Phase:      s.phase,
		Name:       name,
		Argv:       argv,
		ExitCode:   res.ExitCode,
		Signal:     res.Signal,
		TimedOut:   res.TimedOut || (res.Cancelled && errors.Is(context.Cause(ctx), errDeadline)),
		DurationMS: res.Duration.Milliseconds(),
	}
	if r.Signal != "" {
		r.ExitCode = -1
		if !strings.HasPrefix(r.Signal, "SIG") {
			r.Signal = "" // a real-time signal without a name
		}
	}
	r.OutputTail, r.OutputTruncated = out.tail(s.red, s.spec.Limits.MaxOutputBytes)
	s.ev.Commands = append(s.ev.Commands, r)
	s.log.Info().Str("command", name).Int("exit_code", r.ExitCode).Str("signal", r.Signal).Bool("timed_out", r.TimedOut).Int64("duration_ms", r.DurationMS).Msg("command ended")
	if res.Limit != nil && !r.TimedOut && ctx.Err() == nil {
		// The sandbox was stopped (or ended) over a limit: that, not its
		// exit status, is how the attempt ends.
		s.log.Warn().Str("command", name).Str("limit", res.Limit.Limit).Int64("value", res.Limit.Value).Msg("command ran into a sandbox limit")
		s.ev.Outcome = contract.OutcomeLimitExceeded
		s.ev.Reason = fmt.Sprintf("the %s command ran into %s and was stopped", name, res.Limit.Owned())
		s.ev.Limit = &contract.LimitHit{Name: res.Limit.Limit, Value: res.Limit.Value, Command: name}
		return r, false
	}
	return r, true
}

// cutShort reports whether ctx has ended, and if so records why: the
// caller's context (SIGTERM) or the app ending the attempt is cancelled,
// the deadline is timed_out. Either way the evidence is partial.
func (s *session) cutShort(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	if svc := s.serviceCause(ctx); svc != nil && s.parent.Err() == nil {
		// Not cut short from outside: a service died, and the evidence of
		// what ran is whole.
		if s.ev.Services[svc.index].Failure == "" {
			s.serviceEnded(svc)
		}
		return true
	}
	s.ev.Partial = true
	switch cause := context.Cause(ctx); {
	case s.parent.Err() != nil:
		s.ev.Outcome = contract.OutcomeCancelled
		s.ev.Reason = fmt.Sprintf("the supervisor was stopped during the %s phase", s.phase)
	case errors.Is(cause, errAttemptEnded):
		s.ev.Outcome = contract.OutcomeCancelled
		s.ev.Reason = fmt.Sprintf("the app ended the attempt during the %s phase", s.phase)
	default:
		s.ev.Outcome = contract.OutcomeTimedOut
		s.ev.Reason = fmt.Sprintf("the session's deadline passed during the %s phase", s.phase)
	}
	return true
}

// fail records a failure of the supervisor's own work, unless ctx has
// ended, which explains it better. It returns false for the caller to
// return.
func (s *session) fail(ctx context.Context, doing string, err error) bool {
	if s.cutShort(ctx) {
		return false
	}
	s.ev.Outcome = contract.OutcomeError
	s.ev.Reason = doing + ": " + err.Error()
	return false
}

// enter moves to a phase and tells the app, best effort.
func (s *session) enter(p contract.Phase, msg string) {
	s.phase = p
	s.gate.setPhase(p)
	s.progress(p, msg)
}

// progress tells the app what the session does now, within phase p (the
// one it is in: a served agent's next turn, served.go, which must not
// write s.phase while its run reads it).
func (s *session) progress(p contract.Phase, msg string) {
	msg = contract.CleanProgressMessage(s.red.Redact(msg))
	s.log.Info().Str("phase", string(p)).Msg(msg)
	s.seq++
	ev := contract.ProgressEvent{
		Seq:     s.seq,
		Time:    s.cfg.Now(),
		Phase:   p,
		Message: msg,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.parent), s.cfg.RequestTimeout)
	defer cancel()
	if err := s.ch.progress(ctx, ev); err != nil {
		if isAttemptEnded(err) && s.stop != nil {
			s.stop(errAttemptEnded)
		}
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("progress event not delivered")
	}
}

// finish collects the change and the agent's answer, seals the evidence and
// uploads it, within FinishTimeout of now whatever ended the run.
func (s *session) finish() *Report {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.parent), s.cfg.FinishTimeout)
	defer cancel()
	s.enter(contract.PhaseUpload, "collecting the change and uploading the evidence")
	if s.prepared {
		if b, err := readWorkspaceFile(s.ws.work, inspectDir+"/answer.md", contract.MaxFinalAnswerBytes); err == nil {
			s.ev.FinalAnswer = cleanText(string(b), contract.MaxFinalAnswerBytes)
		}
		if s.ev.FinalAnswer == "" && s.invocation != nil && s.invocation.FinalMessageFile != "" {
			// The CLI's own last message (codex --output-last-message).
			if rel, ok := strings.CutPrefix(s.invocation.FinalMessageFile, "/workspace/"); ok {
				if b, err := readWorkspaceFile(s.ws.work, rel, contract.MaxFinalAnswerBytes); err == nil {
					s.ev.FinalAnswer = cleanText(string(b), contract.MaxFinalAnswerBytes)
				}
			}
		}
		// The change was fixed before verify; artifacts are verify's files,
		// in the verify workspace: uploaded, listed, never part of it. A
		// run stopped over a limit sends neither: the app pushes nothing
		// for it, and a workspace over its disk limit is what a collection
		// would have to read.
		if s.ev.Outcome != contract.OutcomeLimitExceeded {
			s.collect(ctx)
			s.collectArtifacts(ctx)
		}
	}
	var reports []*contract.TestSummary
	if s.verifyDir != "" && !s.verifyStart.IsZero() {
		reports = collectReports(ctx, s.verifyDir, s.verifyStart, reportPaths(s.spec.Verify), s.testOptions(), s.log)
	}
	s.ev.Tests = testreport.Combine(s.testOutputs, reports)
	s.ev.EndedAt = s.cfg.Now()
	if s.ev.EndedAt.Before(s.ev.StartedAt) {
		s.ev.EndedAt = s.ev.StartedAt
	}
	if s.ev.Outcome == "" { // cannot happen; never upload without one
		s.ev.Outcome, s.ev.Reason = contract.OutcomeError, "the supervisor ended without an outcome"
	}
	s.ev.Reason = cleanText(s.ev.Reason, contract.MaxReasonBytes)
	// After the egress closed (run's defer), so nothing is still being
	// recorded but a relay the close cut; partial evidence has it too.
	s.ev.Egress = s.gate.evidence()
	s.red.RedactStrings(&s.ev)

	u := &contract.ResultUpload{Evidence: s.ev, Manifest: s.manifest, AgentState: s.agentState}
	if err := u.Validate(s.spec.Limits.Manifest()); err != nil {
		// Send something the app accepts rather than nothing: the error,
		// the commands, no manifest.
		s.log.Error().Str("error", s.red.Redact(err.Error())).Msg("the result does not validate; sending it reduced")
		u.Manifest, u.Evidence.Tests, u.Evidence.Changes, u.Evidence.Diff, u.Evidence.FinalAnswer = nil, nil, nil, nil, ""
		u.Evidence.Outcome = contract.OutcomeError
		u.Evidence.Reason = cleanText(s.red.Redact("the supervisor's result did not validate: "+err.Error()), contract.MaxReasonBytes)
		if u.Validate(s.spec.Limits.Manifest()) != nil {
			u.Evidence.Commands = nil
		}
		if u.Validate(s.spec.Limits.Manifest()) != nil {
			u.Evidence.Egress = nil // built by EgressAudit.Add, it validates; but never send nothing
		}
	}
	s.writeOut(u)
	rep := &Report{Evidence: u.Evidence, Manifest: u.Manifest}
	rep.Uploaded = s.upload(ctx, u)
	return rep
}

// collect collects the change once, within its own time budget
// (collectBudget), recording a refusal or a failure in the evidence. It
// returns false when there is no manifest. Cut short by ctx, it leaves the
// change for finish to collect.
func (s *session) collect(ctx context.Context) bool {
	if s.collected {
		return s.manifest != nil
	}
	budget := s.collectBudget()
	cctx, cancel := context.WithTimeoutCause(ctx, budget, errCollectBudget)
	defer cancel()
	var artifacts []string
	if s.spec.Artifacts != nil {
		artifacts = append(artifacts, s.spec.Artifacts.Patterns...) // a copy: screenshots are appended below
	}
	// A verify command's screenshots are artifacts too: never the change.
	for _, c := range s.spec.Verify {
		artifacts = append(artifacts, c.Screenshots...)
	}
	c, err := collectChange(cctx, s.git, s.ws, s.spec.PinnedSHA, s.spec.Limits.Manifest(), s.spec.Verify, artifacts, s.red, s.workspaceCaches()...)
	if err != nil && ctx.Err() != nil {
		s.cutShort(ctx)
		return false // finish collects it, with a budget of its own
	}
	s.collected = true
	s.ev.Changes, s.ev.Diff, s.manifest = c.diffstat, c.diff, c.manifest
	if err != nil {
		if errors.Is(context.Cause(cctx), errCollectBudget) {
			err = &changeError{fmt.Sprintf("collecting the change took longer than the %s it may take", budget)}
		}
		s.manifest = nil
		s.noteChangeError(err)
		return false
	}
	return true
}

// errCollectBudget ends a collection that took longer than its budget.
var errCollectBudget = errors.New("collecting the change took too long")

// collectBudget is how long collecting the change may take: half of the
// finish timeout, so that what is left of it still uploads the evidence
// when collection runs in finish.
func (s *session) collectBudget() time.Duration { return s.cfg.FinishTimeout / 2 }

// noteChangeError records why there is no manifest.
func (s *session) noteChangeError(err error) {
	msg := "collecting the change: " + err.Error()
	var ce *changeError
	if errors.As(err, &ce) {
		msg = ce.msg + "; the change is not sent"
	}
	s.log.Warn().Str("error", s.red.Redact(msg)).Msg("no change manifest")
	switch s.ev.Outcome {
	case contract.OutcomeTimedOut, contract.OutcomeCancelled, contract.OutcomeError, contract.OutcomeLimitExceeded:
		s.ev.Reason += "; " + msg
	default:
		s.ev.Outcome, s.ev.Reason = contract.OutcomeError, msg
	}
}

// upload sends the result, retrying what may pass on a retry.
func (s *session) upload(ctx context.Context, u *contract.ResultUpload) bool {
	delay := s.cfg.RetryDelay
	for i := range s.cfg.UploadAttempts {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		err := s.ch.result(rctx, u)
		cancel()
		if err == nil {
			s.log.Info().Str("outcome", string(u.Evidence.Outcome)).Bool("partial", u.Evidence.Partial).Msg("result uploaded")
			return true
		}
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Int("try", i+1).Msg("result upload failed")
		var ce *ChannelError
		if errors.As(err, &ce) && !ce.temporary() || i+1 == s.cfg.UploadAttempts {
			return false
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		delay *= 2
	}
	return false
}

// writeOut writes evidence.json and manifest.json to OutDir, when set.
func (s *session) writeOut(u *contract.ResultUpload) {
	if s.cfg.OutDir == "" {
		return
	}
	// Created here: on Buildkite it is a fresh directory under the job's
	// (skipped) checkout, where artifact_paths look for the files.
	if err := os.MkdirAll(s.cfg.OutDir, 0o755); err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("creating the out dir")
		return
	}
	write := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(s.cfg.OutDir, name), append(b, '\n'), 0o644)
		}
		if err != nil {
			s.log.Warn().Str("error", s.red.Redact(err.Error())).Str("file", name).Msg("writing the result file")
		}
	}
	write(contract.EvidenceFileName, u.Evidence)
	if u.Manifest != nil {
		write(contract.ManifestFileName, u.Manifest)
	}
}

// readWorkspaceFile reads a regular file of the workspace, at most max
// bytes, without following any symlink out of the workspace (os.Root) and
// without blocking on a FIFO the agent may have put there.
func readWorkspaceFile(work, name string, max int) ([]byte, error) {
	root, err := os.OpenRoot(work)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)))
	return b, err
}

// checkReachable fails when the sandbox's uid could not reach a directory
// created in dir: bwrap runs as that uid and must search every parent.
func checkReachable(dir string, uid, gid uint32) error {
	if uid == uint32(os.Geteuid()) {
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("supervisor: work directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		reach := mode&0o001 != 0 ||
			ok && st.Uid == uid && mode&0o100 != 0 ||
			ok && st.Gid == gid && mode&0o010 != 0
		if !reach {
			return fmt.Errorf("supervisor: the sandbox user (uid %d) cannot reach %s: every parent of the work directory must be searchable by it (chmod o+x %s)", uid, d, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
