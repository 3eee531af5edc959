// Package checkoutrun is `inspect run`: a session on a local checkout, from
// the shell, in the same sandbox as every other session, with no GitHub and
// no app. (runner/local is something else: the executor that `inspect
// serve` dispatches attempts to.)
//
// It plays the app's part for one attempt, on loopback only and for as long
// as the run lasts (see server): it builds the session spec from the
// checkout's HEAD commit, its .github/inspect.yml and a server config
// through the server's own code (config.Server.SessionSpec, decision
// 0022), serves it over the session channel with a random single-use claim
// code, serves the egress routes with the handlers it is given (the app's
// model proxy and registry egress, which cmd/inspect wires), and serves
// the checkout's repository over git's smart HTTP to the one read token it
// hands out. Then it runs the supervisor (runner/supervisor) in-process,
// exactly as `inspect runner` would run it: claim, fetch of the pinned
// commit, setup, agent and verify commands in the sandbox, evidence and
// change manifest uploaded over the channel. What the supervisor uploaded
// is decoded strictly, the change is checked as the server checks it
// (config.Repo.CheckChange: protected paths, limits), summarised for a
// person, and turned into a patch that applies with `git apply` to a clean
// checkout of that commit, unless it was refused.
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
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/sandbox"
	"github.com/inspecthq/inspect/runner/supervisor"
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
	// Timeout, when set, replaces the server config's sessions.timeout
	// (30m by default). A repository's limits.session_timeout may only
	// shorten it.
	Timeout time.Duration

	// Server is the server config the session runs under, as `inspect
	// serve` would run it (config.LoadSessionKeys): the models its agent
	// may use (agents.*), the registries it reaches (egress.*), its
	// limits (sessions.*). nil is config.Defaults(): no model, no
	// registry. ServerSource names its file, for messages.
	Server       *config.Server
	ServerSource string
	// Egress serves the sandbox's way out: the server's model proxy and
	// registry egress, for this one session (cmd/inspect wires the
	// app's). A zero Egress refuses every egress request.
	Egress Egress
	// ChangeRefusedReply is the server's reply when the change breaks the
	// policy (protected paths, limits): the words for the policy's
	// decision (cmd/inspect wires app/render's, which this layer cannot
	// import); nil shows the decision's reason code.
	ChangeRefusedReply func(policy.ChangeDecision) string
	// RepoName is the repository as the server knows it, OWNER/NAME
	// (default local/<the checkout's directory>): the registries that
	// serve it (egress.registries.*.repos) and its snapshots in
	// SnapshotStore go by it.
	RepoName string
	// SnapshotStore, when set, is where the session's snapshot is
	// restored from (as snapshots.store names a store); the newest
	// snapshot of RepoName there is pinned. Without it, or without a
	// snapshot, the session clones cold and runs the snapshot setup.
	SnapshotStore string

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
	// Limits cap each sandboxed command (supervisor.Config's).
	Limits contract.SandboxLimits
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

// Egress is the far end of the sandbox's way out, for one session: each
// handler serves a request on its route (contract.PathEgressModel,
// contract.PathEgressRegistry), already authenticated with the session's
// token, for the session's spec. A nil handler refuses its route.
type Egress struct {
	Model    func(w http.ResponseWriter, r *http.Request, spec contract.Spec)
	Registry func(w http.ResponseWriter, r *http.Request, spec contract.Spec)
	// Usage is the model usage the proxy counted, for the evidence (the
	// proxy's count is the word, as the app's is; nil when none).
	Usage func() *contract.TokenUsage
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
	// Refusal is the server's reply when the change broke the policy
	// (protected paths, limits): no patch is written then. "" otherwise.
	Refusal string
	// AttemptDir is the supervisor's attempt directory, kept with
	// KeepWorkspace ("" otherwise: it has been removed).
	AttemptDir string
	// Problems are what went wrong around the session itself (a result
	// that did not arrive over the channel, a refused request), for the
	// summary.
	Problems []string
	// outputFailed: a file asked for (patch, evidence) was not written.
	outputFailed bool
	// server prices the usage for the summary (nil: no server config,
	// no prices).
	server *config.Server
}

// Passed reports whether the session ran to the end and every verify
// command passed (or there was none).
func (r *Result) Passed() bool { return r.Evidence.Outcome == contract.OutcomeOK }

// ExitCode is `inspect run`'s exit status for the session: 0 when it
// passed and every file asked for was written, 1 otherwise.
func (r *Result) ExitCode() int {
	if r.Passed() && !r.outputFailed && r.Refusal == "" {
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
	spec, repoCfg, source, err := buildSpec(ctx, opt, co)
	if err != nil {
		return nil, err
	}
	// Before anything is served: the supervisor checks it too, but a
	// missing bwrap is better said before the run begins.
	if err := sandbox.Available(); err != nil {
		return nil, fmt.Errorf("the sandbox cannot run here: %w (install bubblewrap: .ci/ensure-bubblewrap)", err)
	}

	srv, err := newServer(opt.Git, co.commonDir, opt.Progress, opt.Egress)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	spec.Repo.CloneURL = srv.URL() + gitRepoPath
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("building the session spec: %w", err)
	}
	srv.start(spec)

	res := &Result{Spec: spec, Branch: co.branch, Uncommitted: co.dirty, ConfigSource: source, server: opt.Server}
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
		Limits:          opt.Limits,
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
	if opt.Egress.Usage != nil {
		res.Evidence.Usage = opt.Egress.Usage() // the proxy's counts, never the supervisor's word
	}
	// The server's check before it pushes anything, with its reply.
	if res.Manifest != nil && len(res.Manifest.Files) > 0 {
		if d, _ := repoCfg.CheckChange(res.Manifest, spec.Limits, spec.Repo.Name); !d.Allowed {
			res.Refusal = "the change breaks the server's policy: " + string(d.Reason)
			if opt.ChangeRefusedReply != nil {
				res.Refusal = opt.ChangeRefusedReply(d)
			}
		}
	}

	if res.Manifest != nil && res.Refusal == "" {
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
