// Package checkoutrun is `inspect run`: a session on a local checkout, from
// the shell, in the same sandbox as every other session, with no GitHub and
// no app. (runner/local is something else: the executor that `inspect
// serve` dispatches attempts to.)
//
// It plays the app's part for one attempt, on loopback only and for as long
// as the run lasts (see server): it builds the session spec from the
// checkout's HEAD commit and its .github/inspect.yml, serves it over the
// session channel with a random single-use claim code, and serves the
// checkout's repository over git's smart HTTP to the one read token it
// hands out. Then it runs the supervisor (runner/supervisor) in-process,
// exactly as `inspect runner` would run it: claim, fetch of the pinned
// commit, agent and verify commands in the sandbox, evidence and change
// manifest uploaded over the channel. What the supervisor uploaded is
// decoded strictly, summarised for a person, and the change is turned into
// a patch that applies with `git apply` to a clean checkout of that commit.
//
// The session sees HEAD as committed: uncommitted and untracked files are
// not part of it (Result.Uncommitted says there were some). The user's
// repository is only read.
package checkoutrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/runner/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/supervisor"
)

// Defaults for Options' zero values.
const (
	DefaultTimeout        = 30 * time.Minute
	DefaultCommandTimeout = 10 * time.Minute
	// DefaultMaxOutputBytes is how much of each command's output the
	// evidence keeps, as on the app.
	DefaultMaxOutputBytes = 64 << 10
)

// Options configure one local session.
type Options struct {
	// RepoDir is the git checkout ("." when empty). The session runs on
	// its HEAD commit.
	RepoDir string
	// ConfigFile, when set, is a repository config file on this host used
	// instead of .github/inspect.yml (or .yaml) as committed at HEAD.
	ConfigFile string
	// Agent, when set, is the agent's argv, instead of the config's
	// agent.command. The verify commands still come from the config.
	Agent []string
	// Instructions are the request, as a /inspect comment would carry it.
	Instructions string
	// Timeout bounds the whole session (DefaultTimeout). A config's
	// limits.session_timeout may only shorten it.
	Timeout time.Duration

	// PatchFile, when set, receives the change as a git patch; when the
	// change is empty nothing is written there.
	PatchFile string
	// EvidenceFile, when set, receives evidence.json.
	EvidenceFile string

	// WorkDir, SandboxUID, SandboxGID, SandboxPath and KeepWorkspace are
	// the supervisor's (see supervisor.Config): WorkDir must be reachable
	// by the sandbox's uid.
	WorkDir                string
	SandboxUID, SandboxGID uint32
	SandboxPath            string
	KeepWorkspace          bool
	// RunnerVersion is `inspect version`.
	RunnerVersion string
	// Git is the git binary ("git" on PATH when empty).
	Git string
	// ForwarderBinary is the inspect binary for the sandbox's egress
	// forwarder (see supervisor.Config); empty means this executable.
	ForwarderBinary string

	// Progress receives one line per progress event, and notes such as
	// "uncommitted changes are not included" (nil discards).
	Progress io.Writer
	// Log is the supervisor's log (the zero Logger discards).
	Log zerolog.Logger
}

// UsageError is a problem with what the user asked for (no such
// checkout, no agent to run, a config that does not parse): `inspect run`
// exits 2 for it.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// Result is what a local session produced.
type Result struct {
	Spec     contract.Spec
	Evidence contract.Evidence
	// Manifest is the change; nil when none could be collected (the run
	// failed before the workspace was ready, or the change broke the
	// limits: Evidence.Reason says).
	Manifest *contract.Manifest
	// Patch is the change as a git patch against Spec.PinnedSHA; empty
	// when there is no change.
	Patch []byte
	// PatchFile and EvidenceFile are the files written ("" when none).
	PatchFile    string
	EvidenceFile string
	// Branch is the checkout's branch ("" when HEAD was detached).
	Branch string
	// Uncommitted is set when the checkout had uncommitted or untracked
	// files, which the session did not see.
	Uncommitted bool
	// ConfigSource names where the agent and verify commands came from.
	ConfigSource string
	// AttemptDir is the supervisor's attempt directory, kept with
	// KeepWorkspace ("" otherwise: it has been removed).
	AttemptDir string
	// Problems are what went wrong around the session itself (a result
	// that did not arrive over the channel, a refused request), for the
	// summary.
	Problems []string
	// outputFailed: a file asked for (patch, evidence) was not written.
	outputFailed bool
}

// Passed reports whether the session ran to the end and every verify
// command passed (or there was none).
func (r *Result) Passed() bool { return r.Evidence.Outcome == contract.OutcomeOK }

// ExitCode is `inspect run`'s exit status for the session: 0 when it
// passed and every file asked for was written, 1 otherwise.
func (r *Result) ExitCode() int {
	if r.Passed() && !r.outputFailed {
		return 0
	}
	return 1
}

// Changed reports whether the session produced a non-empty change.
func (r *Result) Changed() bool { return len(r.Patch) > 0 }

// Run runs one local session. It returns an error only when the session
// could not run at all (a *UsageError when the user can fix the request);
// every outcome of a session that ran, a failed verification included, is
// a Result.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if strings.TrimSpace(opt.Instructions) == "" {
		return nil, usageErrorf("no instructions: say what the agent should do after --")
	}
	if len(opt.Instructions) > contract.MaxInstructionsBytes {
		return nil, usageErrorf("the instructions are %d bytes, more than the %d allowed", len(opt.Instructions), contract.MaxInstructionsBytes)
	}
	if opt.Timeout < 0 {
		return nil, usageErrorf("the timeout must be positive")
	}
	if opt.Timeout == 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.RepoDir == "" {
		opt.RepoDir = "."
	}
	if opt.Progress == nil {
		opt.Progress = io.Discard
	}
	if opt.Git == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return nil, errors.New("git is not on PATH")
		}
		opt.Git = p
	}
	for _, f := range []string{opt.PatchFile, opt.EvidenceFile} {
		if f != "" {
			if err := checkWritable(f); err != nil {
				return nil, usageErrorf("%v", err)
			}
		}
	}

	co, err := openCheckout(ctx, opt.Git, opt.RepoDir)
	if err != nil {
		return nil, err
	}
	spec, source, err := buildSpec(ctx, opt, co)
	if err != nil {
		return nil, err
	}
	// Before anything is served: the supervisor checks it too, but a
	// missing bwrap is better said before the run begins.
	if err := sandbox.Available(); err != nil {
		return nil, fmt.Errorf("the sandbox cannot run here: %w (install bubblewrap: .ci/ensure-bubblewrap)", err)
	}

	srv, err := newServer(opt.Git, co.commonDir, opt.Progress)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	spec.Repo.CloneURL = srv.URL() + gitRepoPath
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("building the session spec: %w", err)
	}
	srv.start(spec)

	res := &Result{Spec: spec, Branch: co.branch, Uncommitted: co.dirty, ConfigSource: source}
	if co.dirty {
		fmt.Fprintf(opt.Progress, "inspect run: note: the session runs on HEAD (%s); uncommitted and untracked changes in %s are not included\n", co.head[:12], co.dir)
	}

	rep, err := supervisor.Run(ctx, supervisor.Config{
		ChannelURL:      srv.URL(),
		SessionID:       spec.SessionID,
		AttemptID:       spec.AttemptID,
		ClaimCode:       srv.claimCode,
		WorkDir:         opt.WorkDir,
		SandboxUID:      opt.SandboxUID,
		SandboxGID:      opt.SandboxGID,
		SandboxPath:     opt.SandboxPath,
		KeepWorkspace:   opt.KeepWorkspace,
		RunnerVersion:   opt.RunnerVersion,
		Git:             opt.Git,
		ForwarderBinary: opt.ForwarderBinary,
		Log:             opt.Log,
	})
	srv.close() // the credentials die here, whatever happened
	if err != nil {
		return nil, err
	}
	if opt.KeepWorkspace {
		res.AttemptDir = rep.AttemptDir
	}

	// What travelled over the channel, strictly decoded, is the result;
	// the supervisor's own copy stands in only if the upload failed.
	up, upErr := srv.uploaded()
	switch {
	case up != nil:
		res.Evidence, res.Manifest = up.Evidence, up.Manifest
	default:
		res.Evidence, res.Manifest = rep.Evidence, rep.Manifest
		msg := "the result did not arrive over the session channel"
		if upErr != nil {
			msg += ": " + upErr.Error()
		}
		res.Problems = append(res.Problems, msg+"; this is the supervisor's own copy")
	}
	for _, f := range srv.protocolFaults() {
		res.Problems = append(res.Problems, "session channel refused a request: "+f)
	}

	if res.Manifest != nil {
		patch, err := BuildPatch(context.WithoutCancel(ctx), opt.Git, co.objects, res.Manifest)
		if err != nil {
			res.Problems = append(res.Problems, "turning the change into a patch: "+err.Error())
			res.outputFailed = true
		}
		res.Patch = patch
	}
	if opt.PatchFile != "" && len(res.Patch) > 0 {
		if err := os.WriteFile(opt.PatchFile, res.Patch, 0o644); err != nil {
			res.Problems = append(res.Problems, "writing the patch: "+err.Error())
			res.outputFailed = true
		} else {
			res.PatchFile = opt.PatchFile
		}
	}
	if opt.EvidenceFile != "" {
		b, err := json.MarshalIndent(res.Evidence, "", "  ")
		if err == nil {
			err = os.WriteFile(opt.EvidenceFile, append(b, '\n'), 0o644)
		}
		if err != nil {
			res.Problems = append(res.Problems, "writing the evidence: "+err.Error())
			res.outputFailed = true
		} else {
			res.EvidenceFile = opt.EvidenceFile
		}
	}
	return res, nil
}

// checkWritable fails early when an output file's directory does not exist,
// rather than after a half-hour session.
func checkWritable(file string) error {
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", file, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", file, dir)
	}
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory", file)
	}
	return nil
}

// buildSpec builds the session spec the app would build, from the checkout
// and its config, with placeholders where a GitHub session has facts a
// local one lacks (the repository id, the issue number). The clone URL is
// filled in once the server listens.
func buildSpec(ctx context.Context, opt Options, co *checkout) (contract.Spec, string, error) {
	cfg, source, found, err := co.repoConfig(ctx, opt.Git, opt.ConfigFile)
	if err != nil {
		return contract.Spec{}, "", err
	}
	agent := cfg.Agent.Command
	if len(opt.Agent) > 0 {
		agent = opt.Agent
		if found {
			source = "--agent, with the verify commands of " + source
		} else {
			source = "--agent, with no repository config (nothing verifies)"
		}
	}
	if len(agent) == 0 {
		where := "no .github/inspect.yml is committed at HEAD"
		if found {
			where = source + " names no agent"
		}
		return contract.Spec{}, "", usageErrorf("no agent to run: %s; give --agent '[\"program\", \"arg\"]' or add `agent: {preset: command, command: [...]}` to .github/inspect.yml", where)
	}

	timeout := opt.Timeout
	if cfg.Limits.SessionTimeout > 0 && cfg.Limits.SessionTimeout < timeout {
		timeout = cfg.Limits.SessionTimeout // a repository may only narrow
	}
	maxFiles := contract.HardMaxChangedFiles
	if cfg.Limits.MaxFiles > 0 && cfg.Limits.MaxFiles < maxFiles {
		maxFiles = cfg.Limits.MaxFiles
	}
	branch := co.branch
	if !validBranch(branch) {
		branch = "HEAD"
	}
	spec := contract.Spec{
		Version:   contract.SpecVersion,
		SessionID: randomID(),
		AttemptID: randomID(),
		Repo: contract.Repo{
			Owner: "local", Name: co.name(), ID: 1,
			CloneURL:      "http://127.0.0.1/placeholder.git",
			DefaultBranch: branch,
		},
		PinnedSHA: co.head,
		// A local session works on no issue; the contract wants one, so
		// #1 stands in, and the context below says so.
		Target:       contract.Target{Kind: contract.TargetIssue, Number: 1, BaseBranch: branch},
		Instructions: opt.Instructions,
		Requester:    contract.Requester{Login: localLogin(), ID: 1},
		Context: []contract.ContextItem{{
			Kind:   contract.ContextBody,
			Source: "inspect run",
			Text: "This is a local session started from the shell with `inspect run`: there is no GitHub issue or pull request " +
				"(issue #1 is a placeholder), and your change is handed back to the person who ran it as a patch.",
		}},
		Agent: contract.Agent{Preset: contract.PresetCommand, Command: agent, Model: cfg.Agent.Model},
		Limits: contract.Limits{
			Deadline:        time.Now().Add(timeout).UTC().Truncate(time.Second),
			Timeout:         contract.Duration(timeout),
			MaxOutputBytes:  DefaultMaxOutputBytes,
			MaxChangedFiles: maxFiles,
			MaxChangeBytes:  contract.HardMaxChangeBytes,
		},
	}
	spec.Verify = cfg.VerifyCommands(DefaultCommandTimeout, timeout)
	// A token pasted into the instructions would make the spec invalid;
	// redact it, as the app does.
	contract.NewRedactor().RedactStrings(&spec)
	if err := spec.Validate(); err != nil {
		return contract.Spec{}, "", usageErrorf("%v", err)
	}
	return spec, source, nil
}

// validBranch reports whether the contract accepts name as a branch.
func validBranch(name string) bool {
	if name == "" {
		return false
	}
	s := contract.Spec{Target: contract.Target{Kind: contract.TargetIssue, Number: 1, BaseBranch: name}}
	var ve *contract.ValidationError
	if err := s.Validate(); errors.As(err, &ve) && ve.Has("target.base_branch") {
		return false
	}
	return true
}

// localLogin is the requester's name in the prompt: the user's login when
// it reads as a GitHub login, else "local".
func localLogin() string {
	u, err := user.Current()
	if err != nil {
		return "local"
	}
	name := u.Username
	ok := name != "" && len(name) <= 39 && name[0] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return "local"
	}
	return name
}
