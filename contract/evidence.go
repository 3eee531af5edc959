package contract

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// EvidenceVersion is the version of evidence.json this build writes and
// reads. Bump it with any change to Evidence's fields or their meaning.
//
// v4 added Artifacts; v5 Workspace's image_root and restore_error; v6
// added Services: each service's run, with its output tail; v7 Diff, the
// change's unified patch; v8 Usage's cache_read and cache_write; v9
// ToolsImage, the digest of the agents' tools image (decision 0069), and
// Workspace's base_image, the snapshot's base image (decision 0077), and
// Tests' results, more_results, runners and failures_only, the per-test
// results and the runners they were read from (decision 0076); v10 a
// clone's Workspace may carry image_root and base_image too: the spec's
// base image was its root (decision 0079); v11
// AgentState, what became of the agent's conversation state (decision
// 0072); v12 Baseline, the app's comparison of the base's verify with
// the change's (decision 0080), Reproduce, the supervisor's run of verify
// on the base with the change's test files, and Artifact's Screenshot.
const EvidenceVersion = "inspect.evidence/v12"

// EvidenceFileName is the evidence's file name: in the attempt's directory,
// and among a Buildkite build's artifacts, where the app looks for it when
// the upload over the channel never arrived.
const EvidenceFileName = "evidence.json"

// Caps on evidence.
const (
	// MaxEvidenceBytes caps encoded evidence. Output tails and the patch
	// are JSON escaped, which can grow them, hence the headroom.
	MaxEvidenceBytes = 32<<20 + 2*MaxPatchBytes
	// MaxEvidenceCommands caps the commands evidence records: every setup
	// and verify command, and a few agent steps.
	MaxEvidenceCommands = 2*MaxCommandsPerPhase + 8 + MaxServices
	// MaxFinalAnswerBytes caps the agent's final answer; it is posted as a
	// comment, and GitHub caps those at 65536 characters.
	MaxFinalAnswerBytes = 64 << 10
	// MaxReasonBytes caps Evidence.Reason.
	MaxReasonBytes = 4 << 10
	// MaxTestFailures caps the failures listed in a test summary; the
	// counts stay exact.
	MaxTestFailures = 200
	// MaxTestMessageBytes caps one failure's message.
	MaxTestMessageBytes = 8 << 10
	// MaxTestResults caps the tests a summary names with their outcomes
	// (TestSummary.Results); MoreResults counts the rest.
	MaxTestResults = 2000
	// MaxTestRunners caps TestSummary.Runners.
	MaxTestRunners = 16
	// MaxPromptBytes caps Evidence.Prompt, and so the prompt the
	// supervisor assembles: it cuts the gathered context to fit.
	MaxPromptBytes = 256 << 10
)

// Phase is a stage of an attempt, as progress events and command results
// name it.
type Phase string

// Phases, in the order an attempt goes through them. Commands run only in
// setup, agent and verify.
const (
	// PhasePrepare covers claiming, fetching the spec and preparing
	// /workspace.
	PhasePrepare Phase = "prepare"
	PhaseSetup   Phase = "setup"
	PhaseAgent   Phase = "agent"
	PhaseVerify  Phase = "verify"
	// PhaseUpload covers collecting evidence and the manifest and sending
	// them.
	PhaseUpload Phase = "upload"
)

var phases = []Phase{PhasePrepare, PhaseSetup, PhaseAgent, PhaseVerify, PhaseUpload}

// IsCommandPhase reports whether commands run in p.
func (p Phase) IsCommandPhase() bool {
	return p == PhaseSetup || p == PhaseAgent || p == PhaseVerify
}

// OutcomeHint is the supervisor's view of how the attempt ended. It is a
// hint: the app decides the session's outcome, because only it validates
// the change against policy and knows about cancellations it asked for.
type OutcomeHint string

// Outcome hints.
const (
	// OutcomeOK: the agent finished and every verify command passed.
	OutcomeOK OutcomeHint = "ok"
	// OutcomeAgentFailed: the agent exited non-zero or was killed.
	OutcomeAgentFailed OutcomeHint = "agent_failed"
	// OutcomeVerifyFailed: the agent finished, some verify command failed.
	OutcomeVerifyFailed OutcomeHint = "verify_failed"
	// OutcomeTimedOut: the deadline or the attempt's timeout cut it short.
	OutcomeTimedOut OutcomeHint = "timed_out"
	// OutcomeCancelled: SIGTERM (a cancel) cut it short.
	OutcomeCancelled OutcomeHint = "cancelled"
	// OutcomeError: the supervisor itself failed (the SHA was gone, the
	// sandbox would not start); Reason says why.
	OutcomeError OutcomeHint = "error"
	// OutcomeLimitExceeded: a command ran into one of its sandbox's
	// resource limits and was stopped; Evidence.Limit names it.
	OutcomeLimitExceeded OutcomeHint = "limit_exceeded"
)

var outcomeHints = []OutcomeHint{OutcomeOK, OutcomeAgentFailed, OutcomeVerifyFailed, OutcomeTimedOut, OutcomeCancelled, OutcomeError, OutcomeLimitExceeded}

// Sandbox limits, as LimitHit.Name gives them (runner/sandbox's names).
const (
	LimitMemory    = "memory"
	LimitPids      = "pids"
	LimitWorkspace = "workspace_disk"
	// The session's: its commands and services together (decision 0058).
	LimitSessionMemory = "session_memory"
	LimitSessionPids   = "session_pids"
)

// LimitHit is the sandbox limit a command ran into (outcome
// limit_exceeded): which one, its value (bytes, or processes and threads
// for pids) and the command's name.
type LimitHit struct {
	Name    string `json:"name"`
	Value   int64  `json:"value"`
	Command string `json:"command"`
}

// FormatBytes writes n in the largest binary unit that divides it, or in
// bytes: "512 MiB", "1 GiB", "1000 bytes". A limit's value reads the same
// in the supervisor's words and in the app's reply.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

func (l *LimitHit) validate(f *faults, prefix string) {
	switch l.Name {
	case LimitMemory, LimitPids, LimitWorkspace, LimitSessionMemory, LimitSessionPids:
	default:
		f.add(at(prefix, "name"), "must be %s, %s, %s, %s or %s, not %s", LimitMemory, LimitPids, LimitWorkspace, LimitSessionMemory, LimitSessionPids, safeQuote(l.Name))
	}
	if l.Value <= 0 {
		f.add(at(prefix, "value"), "must be positive, not %d", l.Value)
	}
	checkLine(f, at(prefix, "command"), l.Command, MaxNameBytes, true)
}

// Evidence is evidence.json: what happened in one attempt, for the PR body,
// the check run and a reviewer. The supervisor writes it, redacted, and
// sends it with the manifest (ResultUpload); the app adds token usage.
// Extended by: Buildkite (issue 4), snapshot images (issue 5) and real
// agents (issue 7).
type Evidence struct {
	// Version is EvidenceVersion.
	Version   string `json:"version"`
	SessionID string `json:"session_id"`
	AttemptID string `json:"attempt_id"`
	// RunnerVersion is the supervisor's `inspect version`.
	RunnerVersion string `json:"runner_version,omitempty"`
	// PinnedSHA is the commit the workspace was at when the agent started.
	PinnedSHA string      `json:"pinned_sha"`
	StartedAt time.Time   `json:"started_at"`
	EndedAt   time.Time   `json:"ended_at"`
	Outcome   OutcomeHint `json:"outcome"`
	// Reason says, in words, why the outcome is not ok (for error above
	// all). Redacted like everything else.
	Reason string `json:"reason,omitempty"`
	// Limit, with outcome limit_exceeded, is the limit the run ran into.
	Limit *LimitHit `json:"limit,omitempty"`
	// Partial is set when SIGTERM cut the run short and this is what had
	// been gathered by then.
	Partial bool `json:"partial,omitempty"`
	// Workspace says how /workspace was prepared. Optional.
	Workspace *Workspace `json:"workspace,omitempty"`
	// AgentState says whether the agent resumed a kept conversation and
	// whether its own was kept (v10). Optional.
	AgentState *AgentStateNote `json:"agent_state,omitempty"`
	// ToolsImage is the manifest digest (sha256:<hex>) of the agents'
	// tools image bound at /opt/inspect/tools (v9, decision 0069); ""
	// when the session had none.
	ToolsImage string `json:"tools_image,omitempty"`
	// Commands are the commands that started, in the order they ran.
	// Commands never started (verify after a failed agent) are absent.
	Commands []CommandResult `json:"commands,omitempty"`
	// Tests summarises test results parsed from the verify commands'
	// output and the reports they wrote (runner/testreport: go test,
	// pytest, jest, node --test, JUnit XML), when there were any.
	Tests *TestSummary `json:"tests,omitempty"`
	// Changes is the diffstat of the change against PinnedSHA. The
	// supervisor computes it with git, so the app does not have to fetch
	// base blobs to show it.
	Changes []ChangedFile `json:"changes,omitempty"`
	// Diff is the unified patch of the same change (v7), for the
	// session page; nil when there was no change to diff.
	Diff *Diff `json:"diff,omitempty"`
	// FinalAnswer is the agent's final message, posted when it changed
	// nothing.
	FinalAnswer string `json:"final_answer,omitempty"`
	// Prompt is the prompt the agent was given, exactly as the supervisor
	// assembled it from the spec (sanitized, fenced, and cut to at most
	// MaxPromptBytes), so a reviewer can see what the agent was told.
	// Empty when the attempt ended before the agent was prompted.
	Prompt string `json:"prompt,omitempty"`
	// Usage is the model token usage the egress proxy counted. The app
	// merges it in; the supervisor leaves it empty.
	Usage *TokenUsage `json:"usage,omitempty"`
	// Egress is the audit of the sandbox's egress requests, model and
	// registry, relayed and refused (v3). Nil when there were none.
	Egress *EgressAudit `json:"egress,omitempty"`
	// Artifacts are the files the repository's artifacts: globs named
	// after verify, collected or refused (v4).
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Services are the services that were started, in order (v6); a
	// service's setup is among Commands.
	Services []ServiceResult `json:"services,omitempty"`
	// Baseline is the base's verify against the change's, test by test
	// (v12, decision 0080). The app fills it when it reports; a
	// supervisor's upload never carries one.
	Baseline *BaselineComparison `json:"baseline,omitempty"`
	// Reproduce is verify run on the pinned commit with only the
	// change's test files, when the spec asked (v12).
	Reproduce *ReproduceRun `json:"reproduce,omitempty"`
}

// ReproduceRun is verify on the pinned commit with only the change's
// test files: where a test the change adds or changes should fail.
type ReproduceRun struct {
	// TestFiles are the change's test files applied to the base.
	TestFiles []string `json:"test_files,omitempty"`
	// Commands are the verify commands as they ended there.
	Commands []CommandResult `json:"commands,omitempty"`
	Tests    *TestSummary    `json:"tests,omitempty"`
	// Services are the services started afresh for it, as verify's are
	// (decision 0082); they are not among the evidence's Services.
	Services []ServiceResult `json:"services,omitempty"`
	// Skipped says why it did not run (no test file in the change, no
	// verify command, the change not verified).
	Skipped string `json:"skipped,omitempty"`
}

// CommandResult is one command's run.
type CommandResult struct {
	Phase Phase    `json:"phase"`
	Name  string   `json:"name"`
	Argv  []string `json:"argv"`
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the process ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	// TimedOut is set when the command's timeout, or the attempt's, ended
	// it.
	TimedOut   bool  `json:"timed_out,omitempty"`
	DurationMS int64 `json:"duration_ms"`
	// OutputTail is the end of the combined stdout and stderr, at most
	// Limits.MaxOutputBytes, valid UTF-8 (see TailOutput), redacted.
	OutputTail string `json:"output_tail"`
	// OutputTruncated is set when OutputTail is not the whole output.
	OutputTruncated bool `json:"output_truncated,omitempty"`
}

// Succeeded reports whether the command exited 0 on its own.
func (c CommandResult) Succeeded() bool {
	return c.ExitCode == 0 && c.Signal == "" && !c.TimedOut
}

// TestSummary counts test results. Failures names the failing tests, up to
// MaxTestFailures, with a file and line where known (they become check-run
// annotations).
//
// Results, MoreResults, Runners and FailuresOnly are optional and new
// beside v8 (decision 0076): evidence without them reads as before.
type TestSummary struct {
	Passed   int           `json:"passed"`
	Failed   int           `json:"failed"`
	Skipped  int           `json:"skipped"`
	Failures []TestFailure `json:"failures,omitempty"`
	// Results are the tests the runners named, each with its outcome, up
	// to MaxTestResults, in the order they were read: what a comparison
	// with another run (the base's) needs. A runner that prints only
	// totals or only failures names fewer tests than it counts.
	Results []TestResult `json:"results,omitempty"`
	// MoreResults counts the named tests left out of Results by its cap.
	MoreResults int `json:"more_results,omitempty"`
	// Runners names the outputs and reports the counts came from ("go
	// test -json", "pytest", "jest JSON", "JUnit XML"...), in order.
	Runners []string `json:"runners,omitempty"`
	// FailuresOnly says some output named only its failures (plain `go
	// test` without -v), so Passed undercounts.
	FailuresOnly bool `json:"failures_only,omitempty"`
}

// TestOutcome is one test's result.
type TestOutcome string

// Test outcomes.
const (
	TestPassed  TestOutcome = "passed"
	TestFailed  TestOutcome = "failed"
	TestSkipped TestOutcome = "skipped"
)

// TestResult is one named test and its outcome.
type TestResult struct {
	// Name is the test's full name as its runner's output gives it
	// ("example.com/m/pkg.TestX/sub", "tests/test_x.py::test_y",
	// "src/x.test.js › suite › case").
	Name    string      `json:"name"`
	Outcome TestOutcome `json:"outcome"`
}

// TestFailure is one failing test.
type TestFailure struct {
	// Name is the test's full name ("pkg.TestX/sub").
	Name string `json:"name"`
	// File is repository-relative when known.
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message,omitempty"`
}

// TokenUsage is what the egress proxy counted of an attempt's model
// traffic: tokens as the model's responses reported them, and requests.
// (No field is named for "tokens": TestSpecFieldNamesHoldNoCredentials
// keeps credential-like names out of stored documents.)
type TokenUsage struct {
	// Input is the input (prompt) tokens.
	Input int64 `json:"input"`
	// Output is the output (completion) tokens.
	Output int64 `json:"output"`
	// Total is as the responses reported it, which need not be the sum of
	// the two above.
	Total int64 `json:"total"`
	// Requests is how many model requests the proxy forwarded.
	Requests int `json:"requests"`
	// CacheRead and CacheWrite are the parts of Input read from and
	// written to the providers' prompt caches, which they price apart
	// (v8; decision 0053).
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// ChangeStatus says what a change did to one file.
type ChangeStatus string

// Change statuses.
const (
	ChangeAdded    ChangeStatus = "added"
	ChangeModified ChangeStatus = "modified"
	ChangeDeleted  ChangeStatus = "deleted"
)

// ChangedFile is one line of the diffstat, with the flags a reviewer needs:
// an agent that edits tests or the scripts that verify it deserves a look.
type ChangedFile struct {
	Path      string       `json:"path"`
	Status    ChangeStatus `json:"status"`
	Additions int          `json:"additions"`
	Deletions int          `json:"deletions"`
	Binary    bool         `json:"binary,omitempty"`
	// Test marks a test file.
	Test bool `json:"test,omitempty"`
	// VerifyScript marks a file a verify command runs.
	VerifyScript bool `json:"verify_script,omitempty"`
}

// WorkspaceSource says how /workspace was prepared.
type WorkspaceSource string

// Workspace sources.
const (
	// WorkspaceClone: a cold clone of the pinned SHA.
	WorkspaceClone WorkspaceSource = "clone"
	// WorkspaceSnapshot: restored from a snapshot image, then caught up.
	WorkspaceSnapshot WorkspaceSource = "snapshot"
)

// Workspace records how /workspace was prepared, so a slow start or a stale
// cache can be explained. Extended by: snapshot images (issue 5).
type Workspace struct {
	Source WorkspaceSource `json:"source"`
	// SnapshotDigest is the image restored (snapshot only).
	SnapshotDigest string `json:"snapshot_digest,omitempty"`
	// SnapshotCreatedAt is when that image was built; its age is
	// StartedAt minus this.
	SnapshotCreatedAt time.Time `json:"snapshot_created_at,omitzero"`
	// DriftCommits is how many commits were fetched to go from the
	// snapshot's SHA to the pinned SHA.
	DriftCommits int `json:"drift_commits,omitempty"`
	// PrepareMS is the time from the supervisor's start to the agent's.
	PrepareMS int64 `json:"prepare_ms,omitempty"`
	// ImageRoot describes the base image's root the sandbox ran on, when
	// the base brings a toolchain: the restored snapshot's base, or for a
	// clone the spec's BaseImage (v10, decision 0079); absent for the
	// host's toolchain.
	ImageRoot *ImageRoot `json:"image_root,omitempty"`
	// BaseImage is the base (toolchain) image the restored snapshot was
	// built on, as the snapshot's labels name it (v9, decision 0077), or
	// for a clone the spec's BaseImage it was pulled by (v10, decision
	// 0079). Nil when there is none, or the snapshot names none (built
	// on no base, or before the labels were written).
	BaseImage *BaseImage `json:"base_image,omitempty"`
	// RestoreError says why the pinned snapshot was not used and the
	// session cloned cold instead (clone only).
	RestoreError string `json:"restore_error,omitempty"`
}

// ImageRoot is the base image flattened into the sandbox's root, and what
// flattening left out of it.
type ImageRoot struct {
	// Layers is how many base layers were applied.
	Layers int `json:"layers"`
	// SetIDBitsDropped counts files and directories that lost a setuid
	// or setgid bit (the sandbox runs with no_new_privs anyway).
	SetIDBitsDropped int `json:"setid_bits_dropped,omitempty"`
	// DeviceNodesSkipped counts device nodes and fifos not created.
	DeviceNodesSkipped int `json:"device_nodes_skipped,omitempty"`
}

// BaseImage names an image by the reference it was pulled by and its
// manifest digest, as the OCI annotations org.opencontainers.image.base.name
// and .base.digest do.
type BaseImage struct {
	// Name is the reference as configured (snapshots.base_image), without
	// its digest; untrusted text to whoever shows it.
	Name string `json:"name"`
	// Digest is the image's manifest digest, "sha256:" + 64 hex.
	Digest string `json:"digest"`
}

// MaxImageNameBytes bounds BaseImage.Name (a registry reference).
const MaxImageNameBytes = 512

// Validate reports the base image's faults as a *ValidationError; nil
// when it is sound. The supervisor checks the names a snapshot's labels
// carry before it puts them in evidence.
func (b *BaseImage) Validate() error {
	var f faults
	b.validate(&f, "")
	return f.err("base image")
}

func (b *BaseImage) validate(f *faults, prefix string) {
	checkLine(f, at(prefix, "name"), b.Name, MaxImageNameBytes, true)
	if !IsImageDigest(b.Digest) {
		f.add(at(prefix, "digest"), `must be "sha256:" followed by 64 lowercase hex digits`)
	}
}

// DecodeEvidence reads evidence strictly (size cap, version, no unknown
// fields) and validates it.
func DecodeEvidence(r io.Reader) (Evidence, error) {
	var e Evidence
	if err := decodeDocument(r, "evidence", MaxEvidenceBytes, EvidenceVersion, &e); err != nil {
		return Evidence{}, err
	}
	if err := e.Validate(); err != nil {
		return Evidence{}, err
	}
	return e, nil
}

// Validate reports every fault in the evidence, each naming its field, as a
// *ValidationError; nil when it is sound.
func (e *Evidence) Validate() error {
	var f faults
	e.validate(&f, "")
	return f.err("evidence")
}

func (e *Evidence) validate(f *faults, prefix string) {
	if e.Version != EvidenceVersion {
		f.add(at(prefix, "version"), "must be %q, not %s", EvidenceVersion, safeQuote(e.Version))
	}
	checkID(f, at(prefix, "session_id"), e.SessionID)
	checkID(f, at(prefix, "attempt_id"), e.AttemptID)
	checkLine(f, at(prefix, "runner_version"), e.RunnerVersion, MaxNameBytes, false)
	checkSHA(f, at(prefix, "pinned_sha"), e.PinnedSHA)
	if e.AgentState != nil {
		e.AgentState.validate(f, at(prefix, "agent_state"))
	}
	if e.StartedAt.IsZero() {
		f.add(at(prefix, "started_at"), "is required")
	}
	if e.EndedAt.IsZero() {
		f.add(at(prefix, "ended_at"), "is required")
	} else if e.EndedAt.Before(e.StartedAt) {
		f.add(at(prefix, "ended_at"), "is before started_at")
	}
	switch {
	case e.Outcome == "":
		f.add(at(prefix, "outcome"), "is required")
	case !slices.Contains(outcomeHints, e.Outcome):
		f.add(at(prefix, "outcome"), "must be one of ok, agent_failed, verify_failed, timed_out, cancelled, error, limit_exceeded, not %s", safeQuote(string(e.Outcome)))
	}
	switch {
	case e.Limit != nil && e.Outcome != OutcomeLimitExceeded:
		f.add(at(prefix, "limit"), "is only for outcome %s", OutcomeLimitExceeded)
	case e.Limit == nil && e.Outcome == OutcomeLimitExceeded:
		f.add(at(prefix, "limit"), "is required with outcome %s", OutcomeLimitExceeded)
	case e.Limit != nil:
		e.Limit.validate(f, at(prefix, "limit"))
	}
	checkText(f, at(prefix, "reason"), e.Reason, MaxReasonBytes, false)
	if e.ToolsImage != "" && !IsImageDigest(e.ToolsImage) {
		f.add(at(prefix, "tools_image"), "must be sha256:<64 hex>, not %s", safeQuote(e.ToolsImage))
	}
	if e.Workspace != nil {
		e.Workspace.validate(f, at(prefix, "workspace"))
	}
	if len(e.Commands) > MaxEvidenceCommands {
		f.add(at(prefix, "commands"), "has %d commands, more than the %d allowed", len(e.Commands), MaxEvidenceCommands)
	}
	for i, c := range e.Commands {
		c.validate(f, index(at(prefix, "commands"), i))
	}
	if e.Tests != nil {
		e.Tests.validate(f, at(prefix, "tests"))
	}
	if len(e.Changes) > HardMaxChangedFiles {
		f.add(at(prefix, "changes"), "has %d files, more than the %d allowed", len(e.Changes), HardMaxChangedFiles)
	}
	seen := make(map[string]bool, len(e.Changes))
	for i, c := range e.Changes {
		p := index(at(prefix, "changes"), i)
		c.validate(f, p)
		if seen[c.Path] {
			f.add(at(p, "path"), "is listed twice")
		}
		seen[c.Path] = true
	}
	if e.Diff != nil {
		e.Diff.validate(f, at(prefix, "diff"))
	}
	checkText(f, at(prefix, "final_answer"), e.FinalAnswer, MaxFinalAnswerBytes, false)
	checkText(f, at(prefix, "prompt"), e.Prompt, MaxPromptBytes, false)
	if e.Usage != nil {
		e.Usage.validate(f, at(prefix, "usage"))
	}
	if e.Egress != nil {
		e.Egress.validate(f, at(prefix, "egress"))
	}
	validateArtifacts(f, at(prefix, "artifacts"), e.Artifacts)
	validateServiceResults(f, at(prefix, "services"), e.Services)
	if e.Reproduce != nil {
		e.Reproduce.validate(f, at(prefix, "reproduce"))
	}
}

func (r *ReproduceRun) validate(f *faults, prefix string) {
	if len(r.TestFiles) > HardMaxChangedFiles {
		f.add(at(prefix, "test_files"), "has %d files, more than the %d allowed", len(r.TestFiles), HardMaxChangedFiles)
	}
	for i, p := range r.TestFiles {
		if err := ValidatePath(p); err != nil {
			f.add(index(at(prefix, "test_files"), i), "%v", err)
		}
	}
	if len(r.Commands) > MaxEvidenceCommands {
		f.add(at(prefix, "commands"), "has %d commands, more than the %d allowed", len(r.Commands), MaxEvidenceCommands)
	}
	for i, c := range r.Commands {
		c.validate(f, index(at(prefix, "commands"), i))
	}
	if r.Tests != nil {
		r.Tests.validate(f, at(prefix, "tests"))
	}
	validateServiceResults(f, at(prefix, "services"), r.Services)
	checkText(f, at(prefix, "skipped"), r.Skipped, MaxReasonBytes, false)
}

func (u *TokenUsage) validate(f *faults, prefix string) {
	for _, c := range []struct {
		field string
		n     int64
	}{
		{"input", u.Input},
		{"output", u.Output},
		{"total", u.Total},
		{"requests", int64(u.Requests)},
		{"cache_read", u.CacheRead},
		{"cache_write", u.CacheWrite},
	} {
		if c.n < 0 {
			f.add(at(prefix, c.field), "must not be negative")
		}
	}
	if u.Input >= 0 && u.CacheRead >= 0 && u.CacheWrite >= 0 && u.CacheRead+u.CacheWrite > u.Input {
		f.add(at(prefix, "cache_read"), "cache reads and writes are parts of the input: %d and %d are more than %d", u.CacheRead, u.CacheWrite, u.Input)
	}
}

func (c CommandResult) validate(f *faults, prefix string) {
	if !c.Phase.IsCommandPhase() {
		f.add(at(prefix, "phase"), "must be setup, agent or verify, not %s", safeQuote(string(c.Phase)))
	}
	checkLine(f, at(prefix, "name"), c.Name, MaxNameBytes, true)
	checkArgv(f, at(prefix, "argv"), c.Argv)
	if c.ExitCode < -1 || c.ExitCode > 255 {
		f.add(at(prefix, "exit_code"), "must be between -1 and 255")
	}
	if c.Signal != "" {
		if !validSignal(c.Signal) {
			f.add(at(prefix, "signal"), `must be a signal name such as "SIGKILL"`)
		}
		if c.ExitCode != -1 {
			f.add(at(prefix, "exit_code"), "must be -1 when a signal ended the process")
		}
	}
	if c.DurationMS < 0 {
		f.add(at(prefix, "duration_ms"), "must not be negative")
	}
	checkText(f, at(prefix, "output_tail"), c.OutputTail, HardMaxOutputBytes, false)
}

func validSignal(s string) bool {
	rest, ok := strings.CutPrefix(s, "SIG")
	if !ok || rest == "" || len(rest) > 12 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// Validate reports every fault in a test summary as a *ValidationError,
// as Evidence.Validate would under "tests"; nil when it is sound.
func (t *TestSummary) Validate() error {
	var f faults
	t.validate(&f, "tests")
	return f.err("test summary")
}

func (t *TestSummary) validate(f *faults, prefix string) {
	if t.Passed < 0 || t.Failed < 0 || t.Skipped < 0 {
		f.add(prefix, "counts must not be negative")
	}
	if len(t.Failures) > MaxTestFailures {
		f.add(at(prefix, "failures"), "lists %d failures, more than the %d allowed (the counts stay exact)", len(t.Failures), MaxTestFailures)
	}
	for i, x := range t.Failures {
		p := index(at(prefix, "failures"), i)
		checkLine(f, at(p, "name"), x.Name, MaxArgBytes, true)
		checkLine(f, at(p, "file"), x.File, MaxPathBytes, false)
		if x.Line < 0 {
			f.add(at(p, "line"), "must not be negative")
		} else if x.Line > 0 && x.File == "" {
			f.add(at(p, "line"), "needs a file")
		}
		checkText(f, at(p, "message"), x.Message, MaxTestMessageBytes, false)
	}
	if len(t.Results) > MaxTestResults {
		f.add(at(prefix, "results"), "lists %d tests, more than the %d allowed (more_results counts the rest)", len(t.Results), MaxTestResults)
	}
	for i, r := range t.Results {
		p := index(at(prefix, "results"), i)
		checkLine(f, at(p, "name"), r.Name, MaxArgBytes, true)
		switch r.Outcome {
		case TestPassed, TestFailed, TestSkipped:
		default:
			f.add(at(p, "outcome"), "must be passed, failed or skipped, not %s", safeQuote(string(r.Outcome)))
		}
	}
	if t.MoreResults < 0 {
		f.add(at(prefix, "more_results"), "must not be negative")
	}
	if len(t.Runners) > MaxTestRunners {
		f.add(at(prefix, "runners"), "lists %d runners, more than the %d allowed", len(t.Runners), MaxTestRunners)
	}
	for i, r := range t.Runners {
		checkLine(f, index(at(prefix, "runners"), i), r, MaxArgBytes, true)
	}
}

func (c ChangedFile) validate(f *faults, prefix string) {
	if err := ValidatePath(c.Path); err != nil {
		f.add(at(prefix, "path"), "%v", err)
	}
	switch c.Status {
	case ChangeAdded, ChangeModified, ChangeDeleted:
	default:
		f.add(at(prefix, "status"), "must be added, modified or deleted, not %s", safeQuote(string(c.Status)))
	}
	if c.Additions < 0 || c.Deletions < 0 {
		f.add(prefix, "line counts must not be negative")
	}
}

func (w *Workspace) validate(f *faults, prefix string) {
	switch w.Source {
	case WorkspaceClone:
		// Its image root and base image are the spec's (decision 0079).
		if w.SnapshotDigest != "" || !w.SnapshotCreatedAt.IsZero() || w.DriftCommits != 0 {
			f.add(prefix, "a clone has no snapshot digest, time or drift")
		}
	case WorkspaceSnapshot:
		if !IsImageDigest(w.SnapshotDigest) {
			f.add(at(prefix, "snapshot_digest"), `must be "sha256:" followed by 64 lowercase hex digits`)
		}
	default:
		f.add(at(prefix, "source"), "must be clone or snapshot, not %s", safeQuote(string(w.Source)))
	}
	if w.DriftCommits < 0 {
		f.add(at(prefix, "drift_commits"), "must not be negative")
	}
	if w.PrepareMS < 0 {
		f.add(at(prefix, "prepare_ms"), "must not be negative")
	}
	if w.RestoreError != "" && w.Source != WorkspaceClone {
		f.add(at(prefix, "restore_error"), "only a clone has a restore error")
	}
	checkText(f, at(prefix, "restore_error"), w.RestoreError, MaxReasonBytes, false)
	if b := w.BaseImage; b != nil {
		b.validate(f, at(prefix, "base_image"))
	}
	if r := w.ImageRoot; r != nil {
		if r.Layers < 1 {
			f.add(at(at(prefix, "image_root"), "layers"), "must be at least 1")
		}
		if r.SetIDBitsDropped < 0 || r.DeviceNodesSkipped < 0 {
			f.add(at(prefix, "image_root"), "counts must not be negative")
		}
	}
}

// TailOutput returns the last max bytes of a command's output as valid
// UTF-8 text for CommandResult.OutputTail, and whether anything was cut.
// The cut falls on a character boundary; invalid UTF-8 and NUL bytes become
// U+FFFD, and the result never exceeds max bytes. Redact the whole output
// before taking its tail: a token cut in half is no longer recognisable.
func TailOutput(out []byte, max int) (tail string, truncated bool) {
	if max <= 0 {
		return "", len(out) > 0
	}
	b := out
	if len(b) > max {
		b = b[len(b)-max:]
		truncated = true
		// Skip the continuation bytes of a character cut in half.
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	for len(s) > max { // replacements may have grown it
		_, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		truncated = true
	}
	return s, truncated
}

// Ending says how the command ended, as words for a reason or a log line:
// "timed out", "was killed by SIGKILL", "exited with status 1".
func (r CommandResult) Ending() string {
	switch {
	case r.TimedOut:
		return "timed out"
	case r.Signal != "":
		return "was killed by " + r.Signal
	default:
		return fmt.Sprintf("exited with status %d", r.ExitCode)
	}
}
