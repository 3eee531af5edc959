package contract

import (
	"errors"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// SpecVersion is the version of the session spec this build writes and
// reads. Bump it with any change to Spec's fields or their meaning.
//
// v5 added Artifacts; v6 added Services: the repository's services,
// started in the session's shared environment (decision 0025); v7 the
// agent's ToolsImage (decision 0069); v8 Steer: how the session takes
// messages that come while it runs (decision 0071); v9 BaseImage, the
// server's toolchain image, every session's root, not only a restored
// one's (decision 0079); v10
// AgentState: the kept conversation a continuation's agent resumes
// (decision 0072); v11 Baseline (an attempt that runs only setup and
// verify on the pinned commit, decision 0080), Reproduce (verify also on
// the pinned commit with only the change's test files) and a verify
// Command's Screenshots.
const SpecVersion = "inspect.session-spec/v11"

// Caps on a spec. A spec is built from gathered text (issue bodies, comments,
// check output), so each part is bounded, and so is the whole.
const (
	// MaxSpecBytes caps an encoded spec.
	MaxSpecBytes = 8 << 20
	// MaxInstructionsBytes caps the request's instructions.
	MaxInstructionsBytes = 64 << 10
	// MaxContextItems caps the number of gathered context items.
	MaxContextItems = 200
	// MaxContextTextBytes caps one context item's text.
	MaxContextTextBytes = 256 << 10
	// MaxCommandsPerPhase caps the setup commands, and the verify commands.
	MaxCommandsPerPhase = 20
	// HardMaxOutputBytes is the most output the supervisor may keep per
	// command (Limits.MaxOutputBytes may only be lower); evidence never
	// carries a longer output tail.
	HardMaxOutputBytes = 256 << 10
)

// Spec is everything a supervisor needs to run one attempt of a session. The
// app builds it at prepare time and serves it over the session channel
// (PathSpec); the supervisor fetches it after claiming the attempt.
//
// It carries no credential of any kind, by design: the spec is stored,
// logged and uploaded with the build's artifacts, and the repo token and
// model keys reach only the supervisor (PathRepoToken) and the app's egress
// proxy. Validate refuses any string in it that looks like a token or key;
// run gathered text through a Redactor before putting it in a spec.
type Spec struct {
	// Version is SpecVersion.
	Version string `json:"version"`
	// SessionID is the session this attempt serves.
	SessionID string `json:"session_id"`
	// AttemptID is this attempt; each attempt has its own session token,
	// and a re-dispatch is a new attempt of the same session.
	AttemptID string `json:"attempt_id"`
	Repo      Repo   `json:"repo"`
	// PinnedSHA is the exact commit the session starts from, pinned at
	// prepare time so every attempt sees the same code. The supervisor
	// aborts if it is gone.
	PinnedSHA string `json:"pinned_sha"`
	// Target is the pull request or issue the session works on.
	Target Target `json:"target"`
	// Snapshot is the repo's prepared environment: its caches and setup,
	// and the image to restore (Digest) when one exists. nil means the
	// repo asks for none: a plain cold clone.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
	// Env is added to every command's environment in the sandbox (the
	// repo's `env:`, e.g. GOFLAGS=-trimpath or GOMODCACHE pointing into a
	// cache), so sessions use caches at the paths the snapshot put them.
	// Every directory it names outside /workspace and /tmp and outside the
	// caches (EnvCacheDirs) is an empty writable directory for the whole
	// attempt; a path that cannot be one is refused (ValidateEnvPath).
	Env map[string]string `json:"env,omitempty"`
	// Instructions are what the requester asked for, as written after the
	// command word. For label and repair triggers the app writes a default
	// request. They are untrusted text.
	Instructions string    `json:"instructions"`
	Requester    Requester `json:"requester"`
	// Context is what the app gathered for the agent, in the order it
	// should be presented, with untrusted parts marked.
	Context []ContextItem `json:"context,omitempty"`
	Agent   Agent         `json:"agent"`
	// Setup runs before the agent, Verify after it, both in the sandbox
	// and both taken from the default branch's config, so a pull request
	// cannot change what verifies it.
	Setup  []Command `json:"setup,omitempty"`
	Verify []Command `json:"verify,omitempty"`
	Limits Limits    `json:"limits"`
	// Registries are the package registries the session may reach
	// through the egress proxy, each in the phases it lists (v4).
	Registries []Registry `json:"registries,omitempty"`
	// Artifacts, when set, are the files to collect after verify (v5).
	Artifacts *ArtifactSpec `json:"artifacts,omitempty"`
	// Services are started in the session's environment before verify
	// (and before the agent, ForAgent), and stopped with their phase
	// (v6; decision 0057).
	// A service's setup is also among Snapshot.Setup, named
	// ServiceSetupName, so snapshot keys match the build's.
	Services []Service `json:"services,omitempty"`
	// Steer, when set, says the supervisor asks for the session's turns
	// while the agent runs, and how it delivers them (v7; decision 0071).
	Steer *Steer `json:"steer,omitempty"`
	// BaseImage is the server's toolchain image (snapshots.base_image),
	// pinned by digest: "name@sha256:..." in a registry or
	// "oci:/abs/dir@sha256:..." for an OCI layout on the supervisor's
	// host. A session not restored from a snapshot runs on it as a
	// restored one runs on its snapshot's base (decision 0079); "" = the
	// host's toolchain, read-only (v9).
	BaseImage string `json:"base_image,omitempty"`
	// AgentState, when set, names the conversation state the agent
	// resumes (v10; a continuation's, decision 0072): the supervisor
	// downloads it (PathAgentState) and restores it before the agent's
	// first run. One that is gone, too old or unusable starts fresh.
	AgentState *AgentStateRef `json:"agent_state,omitempty"`
	// Baseline, when set, makes this the base's verify (an attempt of
	// kind KindBaseline, decision 0080): no agent runs and there is no
	// change; setup, then verify on the pinned commit, and the evidence
	// carries its commands and tests (v11).
	Baseline bool `json:"baseline,omitempty"`
	// Reproduce, when set, asks the supervisor to run verify also on the
	// pinned commit with only the change's test files (the one test-file
	// rule), once the change is verified, and to record that run as the
	// evidence's Reproduce (v11; repo config `reproduce:`).
	Reproduce bool `json:"reproduce,omitempty"`
}

// Repo identifies the repository. It carries where to fetch from, never how
// to authenticate.
type Repo struct {
	Owner string `json:"owner"`
	Name  string `json:"name"`
	// ID is GitHub's repository id, which the read token is scoped to
	// (repository_ids).
	ID int64 `json:"id"`
	// CloneURL is an http(s) URL with no user info, query or fragment: the
	// supervisor adds the read token itself, outside the sandbox.
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
}

// TargetKind says whether a session works on a pull request, an issue or
// a branch.
type TargetKind string

// Target kinds.
const (
	TargetPullRequest TargetKind = "pull_request"
	TargetIssue       TargetKind = "issue"
	// TargetBranch is a branch named on the dashboard: no number, and
	// BaseBranch is that branch, which the change's new pull request
	// targets.
	TargetBranch TargetKind = "branch"
)

// Target is the pull request or issue a session works on, with its
// branches, so the supervisor and the prompt can say where the change goes.
type Target struct {
	Kind   TargetKind `json:"kind"`
	Number int        `json:"number"`
	// BaseBranch is the branch a pull request targets, the default
	// branch for an issue, or a branch session's branch.
	BaseBranch string `json:"base_branch"`
	// HeadBranch is a pull request's head branch; empty for an issue. It
	// is untrusted text (a branch name), so it is checked like one.
	HeadBranch string `json:"head_branch,omitempty"`
}

// Requester is who asked. The commit's Co-authored-by and the review request
// name them.
type Requester struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

// ContextKind says what a context item is, so the prompt can label it.
type ContextKind string

// Context kinds.
const (
	ContextTitle       ContextKind = "title"
	ContextBody        ContextKind = "body"
	ContextComment     ContextKind = "comment"
	ContextCheckOutput ContextKind = "check_output"
	// ContextAgentsMD is the default branch's AGENTS.md (never a pull
	// request's own copy).
	ContextAgentsMD ContextKind = "agents_md"
	// ContextReviewComment is where a review comment sits: Source names
	// the file and lines, Text is the diff hunk.
	ContextReviewComment ContextKind = "review_comment"
	// ContextEarlierSession is an earlier session's request and the
	// agent's final answer, for a follow-up on a pull request Inspect
	// opened.
	ContextEarlierSession ContextKind = "earlier_session"
)

var contextKinds = []ContextKind{ContextTitle, ContextBody, ContextComment, ContextCheckOutput, ContextAgentsMD, ContextReviewComment, ContextEarlierSession}

// ContextItem is one piece of gathered text. Untrusted text is fenced and
// stripped of hidden characters when the prompt is assembled; it never
// reaches a shell string.
type ContextItem struct {
	Kind ContextKind `json:"kind"`
	// Author is the GitHub login that wrote it, when there is one.
	Author string `json:"author,omitempty"`
	// Source names where it came from for the prompt's label: a check
	// run's name, a comment's URL, a file path. Optional.
	Source string `json:"source,omitempty"`
	Text   string `json:"text"`
	// Untrusted marks text that anyone other than the repo's writers may
	// have influenced. Check output is always untrusted (a pull request's
	// code prints it).
	Untrusted bool `json:"untrusted"`
}

// Preset names how the agent is run.
type Preset string

// The presets. PresetCommand runs the repository's own argv; the others run
// a known coding-agent CLI non-interactively, pointed at the model proxy
// (the supervisor says how: supervisor.AgentInvocation). Adding a preset is
// a constant, an entry in presetRules and one in presetProviderKinds.
const (
	// PresetCommand runs Agent.Command, an argv, with the prompt file as an
	// argument.
	PresetCommand Preset = "command"
	// PresetCodex runs OpenAI's Codex CLI (`codex exec`).
	PresetCodex Preset = "codex"
	// PresetOpenCode runs OpenCode (`opencode run`).
	PresetOpenCode Preset = "opencode"
	// PresetClaudeCode runs Anthropic's Claude Code (`claude -p`).
	PresetClaudeCode Preset = "claude-code"
)

// Provider kinds: the API a model provider speaks, which decides which
// presets can use its models.
const (
	// ProviderKindOpenAI is the OpenAI API (Responses and Chat Completions,
	// a Bearer key).
	ProviderKindOpenAI = "openai"
	// ProviderKindAnthropic is the Anthropic Messages API (an x-api-key).
	ProviderKindAnthropic = "anthropic"
)

// ProviderKinds lists the provider kinds, sorted.
func ProviderKinds() []string { return []string{ProviderKindAnthropic, ProviderKindOpenAI} }

// presetProviderKinds says which provider kinds each CLI preset can talk to.
// PresetCommand is absent: the repository's own program may use anything.
var presetProviderKinds = map[Preset][]string{
	PresetCodex:      {ProviderKindOpenAI},
	PresetOpenCode:   {ProviderKindAnthropic, ProviderKindOpenAI},
	PresetClaudeCode: {ProviderKindAnthropic},
}

// presetRules holds each known preset's own checks. Adding a preset is a
// constant and an entry here.
var presetRules = map[Preset]func(f *faults, prefix string, a Agent){
	PresetCommand: func(f *faults, prefix string, a Agent) {
		checkArgv(f, at(prefix, "command"), a.Command)
		// A command may be given a model and its provider, or neither.
		switch {
		case a.Provider == "" && a.ProviderKind != "":
			f.add(at(prefix, "provider_kind"), "must be empty when there is no provider")
		case a.Provider != "" && a.Model == "":
			f.add(at(prefix, "model"), "is required with a provider")
		case a.Provider != "":
			checkProviderKind(f, at(prefix, "provider_kind"), a)
		}
	},
	PresetCodex:      checkCLIAgent,
	PresetOpenCode:   checkCLIAgent,
	PresetClaudeCode: checkCLIAgent,
}

// checkCLIAgent checks an agent that runs a known CLI: no argv of the
// repository's, and a model served by a provider of a kind the CLI speaks.
func checkCLIAgent(f *faults, prefix string, a Agent) {
	if len(a.Command) > 0 {
		f.add(at(prefix, "command"), "must be empty for preset %s, which runs its own CLI (command is for preset %s)", a.Preset, PresetCommand)
	}
	if a.Model == "" {
		f.add(at(prefix, "model"), "is required for preset %s", a.Preset)
	}
	if a.Provider == "" {
		f.add(at(prefix, "provider"), "is required for preset %s", a.Preset)
	}
	checkProviderKind(f, at(prefix, "provider_kind"), a)
}

// checkProviderKind checks that the agent names a provider kind its preset
// can talk to.
func checkProviderKind(f *faults, field string, a Agent) {
	switch {
	case a.ProviderKind == "":
		f.add(field, "is required (%s)", strings.Join(ProviderKinds(), " or "))
	case !slices.Contains(ProviderKinds(), a.ProviderKind):
		f.add(field, "must be %s, not %s", strings.Join(ProviderKinds(), " or "), safeQuote(a.ProviderKind))
	case !a.Preset.Speaks(a.ProviderKind):
		f.add(field, "is %s, which preset %s cannot talk to (it speaks %s)", a.ProviderKind, a.Preset, strings.Join(presetProviderKinds[a.Preset], " or "))
	}
}

// KnownPresets lists the presets this build can run, sorted.
func KnownPresets() []Preset {
	out := make([]Preset, 0, len(presetRules))
	for p := range presetRules {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Known reports whether this build can run the preset.
func (p Preset) Known() bool { _, ok := presetRules[p]; return ok }

// Speaks reports whether the preset can use a provider of kind: a CLI
// preset only the APIs it speaks, PresetCommand any.
func (p Preset) Speaks(kind string) bool {
	if p == PresetCommand {
		return slices.Contains(ProviderKinds(), kind)
	}
	return slices.Contains(presetProviderKinds[p], kind)
}

// Agent is what runs in the sandbox, from the repo config's `agent:` and
// the server's model list. Endpoints and keys are server-side only and
// never appear here: the agent reaches its provider through the model
// proxy, by the provider's name.
type Agent struct {
	Preset Preset `json:"preset"`
	// Command is the argv for PresetCommand; empty for every other preset.
	Command []string `json:"command,omitempty"`
	// Model is among those the server allows for the preset; the app has
	// checked that. Required for every preset but PresetCommand.
	Model string `json:"model,omitempty"`
	// Provider is the server-side name of the provider serving Model
	// (config agents.providers), which the model proxy routes on
	// (/v1/providers/{provider}/...). A name only: no URL, no key.
	// Required for every preset but PresetCommand.
	Provider string `json:"provider,omitempty"`
	// ProviderKind is the API Provider speaks (ProviderKindOpenAI or
	// ProviderKindAnthropic), so the CLI is set up to talk it. Required with
	// Provider.
	ProviderKind string `json:"provider_kind,omitempty"`
	// ToolsImage is the agents' tools image (server config
	// agents.tools_image, decision 0069), pinned by digest: a registry
	// reference name@sha256:<hex> or an OCI layout oci:/abs/dir@sha256:<hex>.
	// The supervisor binds its root read-only at /opt/inspect/tools in
	// every sandbox, and the CLI presets run from there. "" for none: the
	// CLIs are looked for on the sandbox's root.
	ToolsImage string `json:"tools_image,omitempty"`
}

// Validate checks the agent as Spec.Validate does, naming fields
// "agent.*".
func (a Agent) Validate() error {
	var f faults
	a.validate(&f, "agent")
	scanSecrets(&f, "agent", reflect.ValueOf(a))
	return f.err("agent")
}

var (
	providerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	modelNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$`)
)

// ValidProviderName checks a provider's name: 1 to 63 of lower-case
// letters, digits, '_' and '-', starting with a letter or digit. It is a
// path segment of the model proxy's URLs and a key in CLI configs, so it
// needs no escaping anywhere.
func ValidProviderName(s string) error {
	if !providerNameRE.MatchString(s) {
		return errors.New("must be 1 to 63 of lower-case letters, digits, '_' and '-', starting with a letter or digit")
	}
	return nil
}

// ValidModelName checks a model's name: 1 to 128 of letters, digits and
// . _ : @ / -, starting with a letter or digit (never '-', so it cannot
// pass for an option where it is an argv element). Provider model ids
// (gpt-5-codex, claude-opus-4-1@20250805, openai/gpt-oss-120b) fit.
func ValidModelName(s string) error {
	if !modelNameRE.MatchString(s) {
		return errors.New("must be 1 to 128 of letters, digits and . _ : @ / -, starting with a letter or digit")
	}
	return nil
}

// Command is one setup or verify step: an argv (never a shell string built
// by us) with its own timeout.
type Command struct {
	// Name labels the command in evidence and the verification table;
	// names are unique within a phase.
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Timeout Duration `json:"timeout"`
	// Screenshots, on a verify command only, are globs (as artifacts'
	// patterns) of the image files the command writes, collected on the
	// base and on the change to be shown side by side (v11).
	Screenshots []string `json:"screenshots,omitempty"`
}

// Snapshot pins a snapshot image and says how to catch it up. With no
// Digest (the repo has no snapshot yet) the session clones cold, binds an
// empty directory at each cache path and runs Setup, so a repo whose env
// points into its caches works before its first snapshot too.
type Snapshot struct {
	// Store is where the image lives: a registry repository prefix
	// ("registry.example.com/inspect", the repo's images under
	// "<prefix>/<owner>/<name>"), or "oci:" and the absolute path of an OCI
	// image layout on the executor's host.
	Store string `json:"store,omitempty"`
	// Digest pins the image ("sha256:" + 64 hex); empty for none.
	Digest string `json:"digest,omitempty"`
	// Caches are the image's dependency caches and the lockfiles
	// (relative to /workspace) that key them. When a lockfile at the
	// pinned SHA differs from the snapshot's, Setup runs again.
	Caches []Cache `json:"caches,omitempty"`
	// Setup is the repo's snapshot setup (from the default branch).
	Setup []Command `json:"setup,omitempty"`
}

// Cache is a dependency cache at a fixed absolute path in the sandbox.
type Cache struct {
	Path      string   `json:"path"`
	Lockfiles []string `json:"lockfiles"`
}

// Caps on a spec's snapshot and environment.
const (
	MaxCaches    = 8
	MaxLockfiles = 16
	MaxEnvVars   = 32
	MaxEnvBytes  = 4 << 10
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

func (sn *Snapshot) validate(f *faults, prefix string) {
	switch {
	case sn.Digest == "" && sn.Store != "":
		f.add(at(prefix, "digest"), "is required with a store")
	case sn.Digest != "":
		if err := ValidateSnapshotStore(sn.Store); err != nil {
			f.add(at(prefix, "store"), "%v", err)
		}
		if !IsImageDigest(sn.Digest) {
			f.add(at(prefix, "digest"), `must be "sha256:" followed by 64 lowercase hex digits`)
		}
	}
	validateCaches(f, at(prefix, "caches"), sn.Caches)
	validateCommands(f, at(prefix, "setup"), sn.Setup)
}

// ValidateCaches checks a list of caches as a spec does: each path valid,
// 1 to MaxLockfiles lockfiles with valid paths, no path listed twice or
// inside another.
func ValidateCaches(caches []Cache) error {
	var f faults
	validateCaches(&f, "caches", caches)
	return f.err("caches")
}

func validateCaches(f *faults, prefix string, caches []Cache) {
	if len(caches) > MaxCaches {
		f.add(prefix, "has %d caches, more than the %d allowed", len(caches), MaxCaches)
	}
	for i, c := range caches {
		p := index(prefix, i)
		if err := ValidateCachePath(c.Path); err != nil {
			f.add(at(p, "path"), "%v", err)
		}
		if len(c.Lockfiles) == 0 || len(c.Lockfiles) > MaxLockfiles {
			f.add(at(p, "lockfiles"), "must list 1 to %d files", MaxLockfiles)
		}
		for j, l := range c.Lockfiles {
			if err := ValidatePath(l); err != nil {
				f.add(index(at(p, "lockfiles"), j), "%v", err)
			}
		}
		for j, o := range caches[:i] {
			if CachePathsConflict(o.Path, c.Path) {
				f.add(at(p, "path"), "is the same as, or nests with, %s", index(prefix, j))
			}
		}
	}
}

// CachePathsConflict reports whether two cache paths are the same or one
// lies inside the other (each would then hold part of the other's layer).
func CachePathsConflict(a, b string) bool {
	return within(a, b) || within(b, a)
}

// AbsSnapshotStore is store with a relative "oci:" directory made absolute
// against the working directory (as a user types it on a command line or
// in a config file); any other store is returned as it is.
func AbsSnapshotStore(store string) (string, error) {
	dir, ok := strings.CutPrefix(store, "oci:")
	if !ok || dir == "" || filepath.IsAbs(dir) {
		return store, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return "oci:" + abs, nil
}

// ValidateSnapshotStore checks a snapshot store: "oci:" and an absolute,
// clean path, or a registry repository prefix (host[:port]/path, no scheme,
// tag or digest).
func ValidateSnapshotStore(store string) error {
	if dir, ok := strings.CutPrefix(store, "oci:"); ok {
		if !path.IsAbs(dir) || path.Clean(dir) != dir {
			return errors.New(`an "oci:" store must name an absolute, clean path`)
		}
		return nil
	}
	if store == "" || strings.Contains(store, "://") || strings.ContainsAny(store, "@ \t\n") || strings.HasSuffix(store, "/") {
		return errors.New(`must be a registry repository prefix such as "registry.example.com/inspect", or "oci:/abs/path"`)
	}
	host, _, _ := strings.Cut(store, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return errors.New("must start with a registry host (with a dot or a port)")
	}
	return nil
}

// ValidateEnv checks an environment for the sandbox as Spec.Validate does
// (repo config uses it to report faults early).
func ValidateEnv(env map[string]string) error {
	var f faults
	validateEnv(&f, "env", env)
	scanSecrets(&f, "env", reflect.ValueOf(env))
	return f.err("environment")
}

func validateEnv(f *faults, prefix string, env map[string]string) {
	if len(env) > MaxEnvVars {
		f.add(prefix, "has %d variables, more than the %d allowed", len(env), MaxEnvVars)
	}
	for k, v := range env {
		switch {
		case !envNameRE.MatchString(k):
			f.add(prefix, "%s is not a variable name", safeQuote(k))
		case strings.HasPrefix(k, "INSPECT_") || k == "HOME" || k == "LD_PRELOAD" || k == "LD_LIBRARY_PATH":
			f.add(at(prefix, k), "is set by Inspect and may not be overridden")
		case len(v) > MaxEnvBytes || strings.ContainsRune(v, 0):
			f.add(at(prefix, k), "must be at most %d bytes with no NUL", MaxEnvBytes)
		default:
			if err := ValidateEnvPath(k, v); err != nil {
				f.add(at(prefix, k), "%v", err)
			}
		}
	}
}

// Limits bound one attempt. The supervisor enforces them; the app enforces
// them again on what comes back.
type Limits struct {
	// Deadline is the session's absolute deadline. No attempt runs past
	// it, whenever it started.
	Deadline time.Time `json:"deadline"`
	// Timeout is the wall-clock budget of this attempt from the moment the
	// supervisor starts; the earlier of the two ends it.
	Timeout Duration `json:"timeout"`
	// MaxOutputBytes is how much of each command's output the supervisor
	// keeps (the tail that goes into evidence), at most HardMaxOutputBytes.
	MaxOutputBytes int64 `json:"max_output_bytes"`
	// MaxChangedFiles and MaxChangeBytes bound the change manifest.
	MaxChangedFiles int   `json:"max_changed_files"`
	MaxChangeBytes  int64 `json:"max_change_bytes"`
}

// Manifest returns the limits a change manifest for this spec must meet.
func (l Limits) Manifest() ManifestLimits {
	return ManifestLimits{MaxFiles: l.MaxChangedFiles, MaxBytes: l.MaxChangeBytes}
}

// DecodeSpec reads a spec strictly (size cap, version, no unknown fields)
// and validates it.
func DecodeSpec(r io.Reader) (Spec, error) {
	var s Spec
	if err := decodeDocument(r, "session spec", MaxSpecBytes, SpecVersion, &s); err != nil {
		return Spec{}, err
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Validate reports every fault in the spec, each naming its field, as a
// *ValidationError; nil when the spec is sound.
func (s *Spec) Validate() error {
	var f faults
	if s.Version != SpecVersion {
		f.add("version", "must be %q, not %s", SpecVersion, safeQuote(s.Version))
	}
	checkID(&f, "session_id", s.SessionID)
	checkID(&f, "attempt_id", s.AttemptID)
	s.Repo.validate(&f, "repo")
	checkSHA(&f, "pinned_sha", s.PinnedSHA)
	s.Target.validate(&f, "target")
	if s.Snapshot != nil {
		s.Snapshot.validate(&f, "snapshot")
	}
	validateEnv(&f, "env", s.Env)
	checkLine(&f, "base_image", s.BaseImage, 512, false) // as SnapshotJob's
	checkText(&f, "instructions", s.Instructions, MaxInstructionsBytes, true)
	checkLogin(&f, "requester.login", s.Requester.Login)
	if s.Requester.ID <= 0 {
		f.add("requester.id", "must be a positive GitHub user id")
	}
	if len(s.Context) > MaxContextItems {
		f.add("context", "has %d items, more than the %d allowed", len(s.Context), MaxContextItems)
	}
	for i, c := range s.Context {
		c.validate(&f, index("context", i))
	}
	s.Agent.validate(&f, "agent")
	validateCommands(&f, "setup", s.Setup)
	validateCommands(&f, "verify", s.Verify)
	s.Limits.validate(&f, "limits")
	validateRegistries(&f, "registries", s.Registries)
	if s.Artifacts != nil {
		s.Artifacts.validate(&f, "artifacts", HasScreenshots(s.Verify))
	}
	validateServices(&f, "services", s.Services)
	if st := s.Steer; st != nil {
		if st.Mode != SteerInterrupt && st.Mode != SteerQueue {
			f.add("steer.mode", "must be %q or %q, not %s", SteerInterrupt, SteerQueue, safeQuote(st.Mode))
		}
		if st.TurnTimeout < 0 {
			f.add("steer.turn_timeout", "must not be negative")
		}
	}
	if s.AgentState != nil {
		checkID(&f, "agent_state.attempt_id", s.AgentState.AttemptID)
	}
	scanSecrets(&f, "", reflect.ValueOf(s).Elem())
	return f.err("session spec")
}

func (r Repo) validate(f *faults, prefix string) {
	checkOwner(f, at(prefix, "owner"), r.Owner)
	checkRepoName(f, at(prefix, "name"), r.Name)
	if r.ID <= 0 {
		f.add(at(prefix, "id"), "must be a positive GitHub repository id")
	}
	checkCloneURL(f, at(prefix, "clone_url"), r.CloneURL)
	checkBranch(f, at(prefix, "default_branch"), r.DefaultBranch, true)
}

func (t Target) validate(f *faults, prefix string) {
	switch t.Kind {
	case TargetPullRequest:
		checkBranch(f, at(prefix, "head_branch"), t.HeadBranch, true)
	case TargetIssue, TargetBranch:
		if t.HeadBranch != "" {
			f.add(at(prefix, "head_branch"), "must be empty for an issue or a branch")
		}
	case "":
		f.add(at(prefix, "kind"), "is required (pull_request, issue or branch)")
	default:
		f.add(at(prefix, "kind"), "must be pull_request, issue or branch, not %s", safeQuote(string(t.Kind)))
	}
	switch {
	case t.Kind == TargetBranch && t.Number != 0:
		f.add(at(prefix, "number"), "must be 0 for a branch")
	case t.Kind != TargetBranch && t.Number <= 0:
		f.add(at(prefix, "number"), "must be a positive pull request or issue number")
	}
	checkBranch(f, at(prefix, "base_branch"), t.BaseBranch, true)
}

func (c ContextItem) validate(f *faults, prefix string) {
	switch {
	case c.Kind == "":
		f.add(at(prefix, "kind"), "is required")
	case !slices.Contains(contextKinds, c.Kind):
		f.add(at(prefix, "kind"), "must be one of %s, not %s", joinKinds(contextKinds), safeQuote(string(c.Kind)))
	}
	if c.Author != "" {
		checkLogin(f, at(prefix, "author"), c.Author)
	}
	checkLine(f, at(prefix, "source"), c.Source, MaxArgBytes, false)
	checkText(f, at(prefix, "text"), c.Text, MaxContextTextBytes, false)
	if c.Kind == ContextCheckOutput && !c.Untrusted {
		f.add(at(prefix, "untrusted"), "must be true for check_output: a pull request's code wrote it")
	}
}

func (a Agent) validate(f *faults, prefix string) {
	rule, ok := presetRules[a.Preset]
	switch {
	case a.Preset == "":
		f.add(at(prefix, "preset"), "is required")
	case !ok:
		f.add(at(prefix, "preset"), "%s is not a preset this build knows (known: %v)", safeQuote(string(a.Preset)), KnownPresets())
	default:
		rule(f, prefix, a)
	}
	if a.Model != "" {
		if err := ValidModelName(a.Model); err != nil {
			f.add(at(prefix, "model"), "%v", err)
		}
	}
	if a.Provider != "" {
		if err := ValidProviderName(a.Provider); err != nil {
			f.add(at(prefix, "provider"), "%v", err)
		}
	}
	if a.ToolsImage != "" {
		if err := ValidToolsImage(a.ToolsImage); err != nil {
			f.add(at(prefix, "tools_image"), "%v", err)
		}
	}
}

var toolsImageRE = regexp.MustCompile(`^(oci:/[^@\x00-\x1f]*|[a-z0-9][a-z0-9._/:-]{0,254})@sha256:[0-9a-f]{64}$`)

// ValidToolsImage checks an agents' tools image reference: pinned by
// digest, as name@sha256:<hex> in a registry or oci:/abs/dir@sha256:<hex>
// for an OCI layout on the supervisor's host. A tag is refused, so every
// session of a server runs the same bytes.
func ValidToolsImage(ref string) error {
	if !toolsImageRE.MatchString(ref) || (strings.HasPrefix(ref, "oci:") && !strings.HasPrefix(ref, "oci:/")) {
		return errors.New("must be pinned by digest: REGISTRY/NAME@sha256:<hex> or oci:/abs/dir@sha256:<hex>")
	}
	return nil
}

func validateCommands(f *faults, prefix string, cmds []Command) {
	if len(cmds) > MaxCommandsPerPhase {
		f.add(prefix, "has %d commands, more than the %d allowed", len(cmds), MaxCommandsPerPhase)
	}
	seen := make(map[string]bool, len(cmds))
	for i, c := range cmds {
		p := index(prefix, i)
		checkLine(f, at(p, "name"), c.Name, MaxNameBytes, true)
		if c.Name != "" && seen[c.Name] {
			f.add(at(p, "name"), "%s is used by an earlier command; names are unique within %s", safeQuote(c.Name), prefix)
		}
		seen[c.Name] = true
		checkArgv(f, at(p, "argv"), c.Argv)
		if c.Timeout <= 0 {
			f.add(at(p, "timeout"), "must be a positive duration")
		}
		if len(c.Screenshots) > 0 && prefix != "verify" {
			f.add(at(p, "screenshots"), "belongs on a verify command only")
		}
		if len(c.Screenshots) > MaxScreenshotPatterns {
			f.add(at(p, "screenshots"), "has %d patterns, more than the %d allowed", len(c.Screenshots), MaxScreenshotPatterns)
		}
		for j, g := range c.Screenshots {
			if err := ValidateArtifactPattern(g); err != nil {
				f.add(index(at(p, "screenshots"), j), "%v", err)
			}
		}
	}
}

// MaxScreenshotPatterns caps a verify command's screenshots: globs.
const MaxScreenshotPatterns = 16

func (l Limits) validate(f *faults, prefix string) {
	if l.Deadline.IsZero() {
		f.add(at(prefix, "deadline"), "is required (an absolute RFC 3339 time)")
	}
	if l.Timeout <= 0 {
		f.add(at(prefix, "timeout"), "must be a positive duration")
	}
	if l.MaxOutputBytes <= 0 || l.MaxOutputBytes > HardMaxOutputBytes {
		f.add(at(prefix, "max_output_bytes"), "must be between 1 and %d", HardMaxOutputBytes)
	}
	if l.MaxChangedFiles <= 0 || l.MaxChangedFiles > HardMaxChangedFiles {
		f.add(at(prefix, "max_changed_files"), "must be between 1 and %d", HardMaxChangedFiles)
	}
	if l.MaxChangeBytes <= 0 || l.MaxChangeBytes > HardMaxChangeBytes {
		f.add(at(prefix, "max_change_bytes"), "must be between 1 and %d", HardMaxChangeBytes)
	}
}

// checkOwner checks a GitHub user or organisation login.
func checkOwner(f *faults, field, s string) {
	if s == "" {
		f.add(field, "is required")
		return
	}
	if !validLogin(s, false) {
		f.add(field, "must be a GitHub login: up to 39 letters, digits or '-', not starting with '-'")
	}
}

// checkLogin checks a user's login; bots ("name[bot]") are allowed, since
// allowlisted bots may trigger sessions.
func checkLogin(f *faults, field, s string) {
	if s == "" {
		f.add(field, "is required")
		return
	}
	if !validLogin(s, true) {
		f.add(field, "must be a GitHub login: up to 39 letters, digits or '-', not starting with '-', optionally ending in [bot]")
	}
}

func validLogin(s string, allowBot bool) bool {
	if allowBot {
		s, _ = strings.CutSuffix(s, "[bot]")
	}
	if s == "" || len(s) > 39 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkRepoName checks a repository name as GitHub allows it.
func checkRepoName(f *faults, field, s string) {
	if s == "" {
		f.add(field, "is required")
		return
	}
	ok := len(s) <= 100 && s != "." && s != ".."
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		f.add(field, "must be a GitHub repository name: up to 100 letters, digits, '.', '_' or '-'")
	}
}

// checkBranch checks a branch name by git's ref rules and Inspect's own
// (policy.CheckBranchName: no leading '-', so a branch is never read as an
// option in argv; nothing invisible). Branch names are untrusted text.
func checkBranch(f *faults, field, s string, required bool) {
	n := f.count()
	checkLine(f, field, s, MaxNameBytes, required)
	if f.count() > n || s == "" {
		return
	}
	if why := policy.CheckBranchName(s); why != "" {
		f.add(field, "%s", strings.TrimPrefix(why, "a branch name "))
	}
}

// checkCloneURL checks that a clone URL is plain http(s) and carries no
// credential: no user info, and no query (where tokens also hide). Its
// faults never echo the URL.
func checkCloneURL(f *faults, field, s string) {
	if s == "" {
		f.add(field, "is required")
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		f.add(field, "is not a valid URL")
	case u.User != nil:
		f.add(field, "must not carry user info (credentials); the supervisor adds the read token itself")
	case u.Scheme != "https" && u.Scheme != "http":
		f.add(field, "must be an https URL (http only for a local stand-in)")
	case u.Host == "":
		f.add(field, "must name a host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		f.add(field, "must have no query or fragment")
	case strings.ContainsFunc(s, policy.IsHiddenInLine) || strings.ContainsAny(s, " \t"):
		f.add(field, "must not contain spaces, control or invisible characters")
	}
}

func joinKinds(kinds []ContextKind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
