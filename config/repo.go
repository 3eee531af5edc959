package config

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/appconfig"
	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// RepoConfigPaths are where a repository's config may live, in order. The
// org-wide fallback is the same file name in the owner's `.github` repo.
var RepoConfigPaths = []string{".github/inspect.yml", ".github/inspect.yaml"}

// Labels. The trigger label is the repo's choice (label:); the outcome
// labels are Inspect's own, and every label starting with
// OutcomeLabelPrefix is reserved for them.
const (
	DefaultTriggerLabel = "inspect"
	OutcomeLabelDone    = "inspect:done"
	OutcomeLabelFailed  = "inspect:failed"
	OutcomeLabelPrefix  = "inspect:"
	// UnverifiedLabel marks a ready pull request whose change failed
	// verification, where GitHub refused it as a draft (decision 0009).
	UnverifiedLabel = "inspect:unverified"
)

// MaxLabelChars is GitHub's longest label name, in characters.
const MaxLabelChars = 50

// MaxRepairChecks caps repair.checks.
const MaxRepairChecks = 50

// Repo is a repository's `.github/inspect.yml`. It may choose and narrow,
// never widen: no credentials, endpoints or limits above the server's.
type Repo struct {
	// Enabled false pauses Inspect for this repository.
	Enabled *bool `yaml:"enabled"`
	// Label is the issue label that starts a session; "" means
	// DefaultTriggerLabel (see TriggerLabel).
	Label  string        `yaml:"label"`
	Agent  Agent         `yaml:"agent"`
	Verify []RepoCommand `yaml:"verify"`
	Setup  []RepoCommand `yaml:"setup"`
	// ProtectedPaths are globs the agent's change may not touch, on top of
	// the server's own (.github/workflows/** is always protected).
	ProtectedPaths []string  `yaml:"protected_paths"`
	Limits         RepoLimit `yaml:"limits"`
	// Env is added to every sandboxed command's environment, in snapshot
	// builds and sessions alike (GOFLAGS=-trimpath, GOMODCACHE=/cache/...),
	// so both see the caches at the same paths. No credentials. A
	// directory it names outside /workspace and /tmp is writable in every
	// session (contract.EnvCacheDirs), or the config is refused
	// (contract.ValidateEnvPath).
	Env map[string]string `yaml:"env"`
	// Snapshot describes the repo's prepared environment (issue 5).
	Snapshot RepoSnapshot `yaml:"snapshot"`
	// Repair turns on automatic repair sessions for failing checks on
	// pull requests.
	Repair RepoRepair `yaml:"repair"`
	// Registries narrow the server's package registries for this
	// repository's sessions, by the server's names (registries_repo.go).
	Registries map[string]RepoRegistry `yaml:"registries"`
	// Artifacts are globs, relative to the repository root, naming files
	// verify writes that a person looks at (screenshots/*.png,
	// reports/**): collected after verify, listed in the PR, never part of
	// the change (contract.ValidateArtifactPattern).
	Artifacts []string `yaml:"artifacts"`
	// Services are started in the session's environment (services.go).
	Services []RepoService `yaml:"services"`
	// Steer is what a `/inspect <message>` on the thread of a running
	// session does (decision 0071): "interrupt" (the default, "") stops
	// the agent and continues its conversation with the message at once,
	// "queue" delivers it when the agent's current run ends, "off" keeps
	// the rule before turns (a later request waits and starts a session
	// of its own). SteerMode reads it.
	Steer string `yaml:"steer"`
	// Reproduce asks that a session's change add or change a test that
	// fails on the base and passes with the change (decision 0082).
	Reproduce RepoReproduce `yaml:"reproduce"`
}

// Reproduce-first modes (repo config reproduce.when).
const (
	ReproduceNever  = "never"
	ReproduceBugs   = "bugs"
	ReproduceAlways = "always"
)

// DefaultBugLabels are the issue labels that mean a bug when
// reproduce.labels is not set.
var DefaultBugLabels = []string{"bug"}

// RepoReproduce is the repo's reproduce-first choice (decision 0082).
type RepoReproduce struct {
	// When is never (the default, ""), bugs (sessions on an issue or pull
	// request carrying one of Labels, and repairs) or always.
	When string `yaml:"when"`
	// Labels are the labels that mean a bug, with when: bugs; unset means
	// DefaultBugLabels.
	Labels []string `yaml:"labels"`
}

// ReproduceFor says whether a session asks for a reproduction: with
// when: always every session, with bugs a repair (a failing check is a
// defect) or one whose issue or pull request carries one of the bug
// labels (case ignored, as GitHub matches label names).
func (r Repo) ReproduceFor(labels []string, repair bool) bool {
	switch r.Reproduce.When {
	case ReproduceAlways:
		return true
	case ReproduceBugs:
		if repair {
			return true
		}
		bugs := r.Reproduce.Labels
		if bugs == nil {
			bugs = DefaultBugLabels
		}
		for _, l := range labels {
			for _, b := range bugs {
				if strings.EqualFold(l, b) {
					return true
				}
			}
		}
	}
	return false
}

// SteerMode is the repo's steer: setting, validated (interrupt when unset
// or, in a config that was never validated, unreadable).
func (r Repo) SteerMode() session.SteerMode {
	m, err := session.ParseSteerMode(r.Steer)
	if err != nil {
		return session.SteerInterrupt
	}
	return m
}

// TurnTimeout is the deadline of one turn of the agent (decision 0071)
// within the session's: limits.turn_timeout, never past sessionTimeout
// (the server's, narrowed); 0 is none beyond the session's.
func (r Repo) TurnTimeout(sessionTimeout time.Duration) time.Duration {
	t := r.Limits.TurnTimeout
	if t <= 0 || (sessionTimeout > 0 && t >= sessionTimeout) {
		return 0
	}
	return t
}

// RepoRepair is the repo's choice about automatic repair. The server's
// repair.* keys bound it.
type RepoRepair struct {
	// Enabled turns automatic repair on; it is off by default.
	Enabled bool `yaml:"enabled"`
	// Checks are check-run names or commit-status contexts whose failure
	// asks for a repair, as patterns (policy.MatchCheckName: `*` and `?`,
	// ASCII case ignored). Required when Enabled.
	Checks []string `yaml:"checks"`
	// MaxSessions narrows the server's repair.max_sessions_per_pr; 0
	// means the server's.
	MaxSessions int `yaml:"max_sessions"`
}

// RepoSnapshot is how to prepare the repo's snapshot image.
type RepoSnapshot struct {
	// Setup runs in the sandbox after the default branch is cloned into
	// /workspace (installing dependencies, warming build caches), and
	// again in a session whose lockfiles differ from the snapshot's.
	Setup []RepoCommand `yaml:"setup"`
	// Caches are directories setup fills, each its own image layer keyed
	// by its lockfiles, so an unchanged key reuses the layer as is.
	Caches []RepoCache `yaml:"caches"`
}

// RepoCache is one dependency cache.
type RepoCache struct {
	// Path is absolute in the sandbox, e.g. /cache/go or
	// /workspace/node_modules.
	Path string `yaml:"path"`
	// Lockfiles are relative to the repository root, e.g. [go.sum].
	Lockfiles []string `yaml:"lockfiles"`
}

// WantsSnapshots reports whether the repo asks for snapshot images.
func (r Repo) WantsSnapshots() bool { return len(r.Snapshot.Setup) > 0 || len(r.Snapshot.Caches) > 0 }

// Agent chooses what runs in the sandbox: a preset, and for every preset
// but command a model among those the server offers it. The repo config
// parser checks the shape; whether the server offers the model is checked
// at session time (Validate, Spec), since the server's list may change
// without the repository's file changing.
type Agent struct {
	// Preset is one of contract.KnownPresets: command (the repository's
	// own argv), codex, opencode or claude-code. Empty means command.
	Preset string `yaml:"preset"`
	// Command is preset command's argv; the prompt file is appended as
	// its last argument. Only for preset command.
	Command []string `yaml:"command"`
	// Model is the model the agent runs with: required for every preset
	// but command, which may name one the server lists for it.
	Model string `yaml:"model"`
}

// PresetName is the preset the agent runs: Preset, or command when it is
// empty.
func (a Agent) PresetName() contract.Preset {
	if a.Preset == "" {
		return contract.PresetCommand
	}
	return contract.Preset(a.Preset)
}

// Configured reports whether the repository names an agent at all.
func (a Agent) Configured() bool { return a.Preset != "" || len(a.Command) > 0 }

// validate checks the agent's shape, without the server's model list.
func (a Agent) validate(add func(key, format string, args ...any)) {
	preset := a.PresetName()
	switch {
	case !preset.Known():
		add("agent.preset", "%q is not a known preset (known: %s)", a.Preset, presetList())
		return
	case preset == contract.PresetCommand:
		switch {
		case a.Preset == "" && len(a.Command) == 0 && a.Model != "":
			add("agent.preset", "is required with agent.model: one of %s", presetList())
		case a.Preset != "" && len(a.Command) == 0:
			add("agent.command", "must be an argv list when agent.preset is command")
		case len(a.Command) > 0 && a.Command[0] == "":
			add("agent.command[0]", "the program must not be empty")
		}
	default:
		if len(a.Command) > 0 {
			add("agent.command", "is only for preset command; preset %s runs its own CLI", preset)
		}
		if a.Model == "" {
			add("agent.model", "is required for preset %s: one of the models this Inspect server offers it", preset)
		}
	}
	if a.Model != "" {
		if err := contract.ValidModelName(a.Model); err != nil {
			add("agent.model", "%v", err)
		}
	}
}

// Validate checks the agent against the server's model list: its preset
// may use its model (a command agent may also name none). The error is
// for the requester: it names the key and lists the models the server
// offers the preset.
func (a Agent) Validate(server Server) error {
	var faults []string
	a.validate(func(key, format string, args ...any) {
		faults = append(faults, key+": "+fmt.Sprintf(format, args...))
	})
	if len(faults) > 0 {
		return errors.New(strings.Join(faults, "; "))
	}
	if !a.Configured() {
		return fmt.Errorf("agent: none is configured; set agent.preset (%s)", presetList())
	}
	preset := string(a.PresetName())
	if a.Model == "" {
		return nil // a command agent without a model; the others need one (validate)
	}
	if _, ok := server.ModelAllowed(preset, a.Model); ok {
		return nil
	}
	allowed := server.ModelsFor(preset)
	msg := fmt.Sprintf("agent.model: %q is not a model this Inspect server offers to preset %s; ", a.Model, preset)
	if others := server.modelPresetsByName(a.Model); len(others) > 0 {
		word := "preset"
		if len(others) > 1 {
			word = "presets"
		}
		msg = fmt.Sprintf("agent.model: %q is offered only to %s %s on this Inspect server; ", a.Model, word, strings.Join(others, ", "))
	}
	switch {
	case len(allowed) > 0:
		msg += "choose one of: " + strings.Join(allowed, ", ")
	case preset == string(contract.PresetCommand):
		msg += "it offers none to command agents, so remove agent.model"
	default:
		msg += "it offers none to that preset; ask its administrators, or choose another preset"
	}
	return errors.New(msg)
}

// Spec is the agent as the session spec carries it, with the provider
// that serves its model; an error (Validate's) when the server does not
// offer the model to the preset.
func (a Agent) Spec(server Server) (contract.Agent, error) {
	if err := a.Validate(server); err != nil {
		return contract.Agent{}, err
	}
	out := contract.Agent{Preset: a.PresetName(), Command: a.Command, Model: a.Model, ToolsImage: server.Agents.ToolsImage}
	if a.Model != "" {
		name, _ := server.ModelAllowed(string(out.Preset), a.Model)
		p, _ := server.Provider(name) // Server.Validate: every model's provider exists
		out.Provider, out.ProviderKind = name, p.Kind
	}
	return out, nil
}

// RepoCommand is one verify or setup step, as an argv (never a shell string
// built by us; a repo may of course choose ["sh", "-c", "..."] itself).
type RepoCommand struct {
	Name    string        `yaml:"name"`
	Run     []string      `yaml:"run"`
	Timeout time.Duration `yaml:"timeout"`
	// Screenshots, on a verify step only, are globs (as artifacts:) of
	// the images the step writes: collected on the base and on the
	// change and shown side by side (decision 0083).
	Screenshots []string `yaml:"screenshots"`
}

// RepoLimit narrows the server's limits; 0 means the server's, and a
// value above the server's is ignored (policy.Narrow).
type RepoLimit struct {
	SessionTimeout time.Duration `yaml:"session_timeout"`
	MaxFiles       int           `yaml:"max_files"`
	// MaxActive narrows limits.active_per_repo.
	MaxActive int `yaml:"max_active"`
	// DailySessions narrows limits.daily_per_repo.
	DailySessions int `yaml:"daily_sessions"`
	// DailyMoney narrows limits.daily_money_per_repo (US dollars).
	DailyMoney float64 `yaml:"daily_money"`
	// TurnTimeout caps each turn of the agent (the first, and each that
	// steers it): a turn past it is stopped as `/inspect stop` stops one.
	// 0 means none but the session's timeout, which covers every turn.
	TurnTimeout time.Duration `yaml:"turn_timeout"`
}

// TriggerLabel is the issue label that starts a session.
func (r Repo) TriggerLabel() string {
	if r.Label == "" {
		return DefaultTriggerLabel
	}
	return r.Label
}

// RepairEnabled reports whether automatic repair is on: the repo turns it
// on and is not paused (`enabled: false` pauses repairs too).
func (r Repo) RepairEnabled() bool { return r.IsEnabled() && r.Repair.Enabled }

// RepairsCheck reports whether a failing check (a check run's name or a
// commit status's context) asks for a repair: repair is on
// (RepairEnabled) and the name matches one of repair.checks.
func (r Repo) RepairsCheck(name string) bool {
	return r.RepairEnabled() && policy.MatchAnyCheck(r.Repair.Checks, name)
}

// PolicyLimits is what the repo asks of the server's limits, for
// policy.Narrow.
func (r Repo) PolicyLimits() policy.RepoLimits {
	return policy.RepoLimits{
		MaxActive:       r.Limits.MaxActive,
		DailySessions:   r.Limits.DailySessions,
		DailyMoney:      r.Limits.DailyMoney,
		SessionTimeout:  r.Limits.SessionTimeout,
		MaxChangedFiles: r.Limits.MaxFiles,
		RepairsPerPR:    r.Repair.MaxSessions,
	}
}

// IsEnabled reports whether the repository is not paused.
func (r Repo) IsEnabled() bool { return r.Enabled == nil || *r.Enabled }

// ParseRepo parses a repo config strictly. Empty content means defaults.
// A remote reference is refused (refuseRemote).
func ParseRepo(data []byte) (Repo, error) {
	if err := refuseRemote(data); err != nil {
		return Repo{}, err
	}
	var r Repo
	if err := decodeStrict(data, &r); err != nil {
		return Repo{}, err
	}
	if err := r.validate(); err != nil {
		return Repo{}, err
	}
	return r, nil
}

func (r Repo) validate() error {
	var faults []string
	add := func(key, format string, args ...any) {
		faults = append(faults, key+": "+fmt.Sprintf(format, args...))
	}
	r.Agent.validate(add)
	if len(r.Verify) > contract.MaxCommandsPerPhase {
		add("verify", "has %d steps; at most %d", len(r.Verify), contract.MaxCommandsPerPhase)
	}
	for i, c := range r.Verify {
		if len(c.Run) == 0 {
			add(fmt.Sprintf("verify[%d].run", i), "must be a non-empty argv list")
		}
		if len(c.Screenshots) > contract.MaxScreenshotPatterns {
			add(fmt.Sprintf("verify[%d].screenshots", i), "has %d globs; at most %d", len(c.Screenshots), contract.MaxScreenshotPatterns)
		}
		for j, p := range c.Screenshots {
			if err := contract.ValidateArtifactPattern(p); err != nil {
				add(fmt.Sprintf("verify[%d].screenshots[%d]", i, j), "%v", err)
			}
		}
	}
	for i, c := range r.Setup {
		if len(c.Run) == 0 {
			add(fmt.Sprintf("setup[%d].run", i), "must be a non-empty argv list")
		}
		if len(c.Screenshots) > 0 {
			add(fmt.Sprintf("setup[%d].screenshots", i), "belongs on a verify step only")
		}
	}
	for i, c := range r.Snapshot.Setup {
		if len(c.Run) == 0 {
			add(fmt.Sprintf("snapshot.setup[%d].run", i), "must be a non-empty argv list")
		}
		if len(c.Screenshots) > 0 {
			add(fmt.Sprintf("snapshot.setup[%d].screenshots", i), "belongs on a verify step only")
		}
	}
	if len(r.Artifacts) > contract.MaxArtifactPatterns {
		add("artifacts", "has %d globs; at most %d", len(r.Artifacts), contract.MaxArtifactPatterns)
	}
	for i, p := range r.Artifacts {
		if err := contract.ValidateArtifactPattern(p); err != nil {
			add(fmt.Sprintf("artifacts[%d]", i), "%v", err)
		}
	}
	if len(r.Snapshot.Caches) > contract.MaxCaches {
		add("snapshot.caches", "has %d caches; at most %d", len(r.Snapshot.Caches), contract.MaxCaches)
	}
	for i, c := range r.Snapshot.Caches {
		if err := contract.ValidateCachePath(c.Path); err != nil {
			add(fmt.Sprintf("snapshot.caches[%d].path", i), "%v", err)
		}
		if len(c.Lockfiles) == 0 || len(c.Lockfiles) > contract.MaxLockfiles {
			add(fmt.Sprintf("snapshot.caches[%d].lockfiles", i), "must list 1 to %d files relative to the repository root", contract.MaxLockfiles)
		}
		for j, l := range c.Lockfiles {
			if err := contract.ValidatePath(l); err != nil {
				add(fmt.Sprintf("snapshot.caches[%d].lockfiles[%d]", i, j), "%v", err)
			}
		}
		for j := range i {
			if contract.CachePathsConflict(r.Snapshot.Caches[j].Path, c.Path) {
				add(fmt.Sprintf("snapshot.caches[%d].path", i), "overlaps snapshot.caches[%d].path", j)
			}
		}
	}
	if err := contract.ValidateEnv(r.Env); err != nil {
		add("env", "%v", err)
	}
	if r.Limits.SessionTimeout < 0 {
		add("limits.session_timeout", "must not be negative")
	}
	if r.Limits.TurnTimeout < 0 {
		add("limits.turn_timeout", "must not be negative")
	}
	if _, err := session.ParseSteerMode(r.Steer); err != nil {
		add("steer", "%v, not %q", err, r.Steer)
	}
	switch r.Reproduce.When {
	case "", ReproduceNever, ReproduceBugs, ReproduceAlways:
	default:
		add("reproduce.when", "must be never, bugs or always, not %q", r.Reproduce.When)
	}
	if r.Reproduce.Labels != nil && r.Reproduce.When != ReproduceBugs {
		add("reproduce.labels", "only applies with reproduce.when: bugs")
	}
	if r.Reproduce.Labels != nil && len(r.Reproduce.Labels) == 0 {
		add("reproduce.labels", "must list at least one label (or be left out for %q)", DefaultBugLabels[0])
	}
	if len(r.Reproduce.Labels) > MaxReproduceLabels {
		add("reproduce.labels", "has %d labels; at most %d", len(r.Reproduce.Labels), MaxReproduceLabels)
	}
	for i, l := range r.Reproduce.Labels {
		if err := validBugLabel(l); err != nil {
			add(fmt.Sprintf("reproduce.labels[%d]", i), "%v", err)
		}
	}
	if r.Limits.MaxFiles < 0 {
		add("limits.max_files", "must not be negative")
	}
	if r.Limits.MaxActive < 0 {
		add("limits.max_active", "must not be negative (0 means the server's limits.active_per_repo)")
	}
	if r.Limits.DailySessions < 0 {
		add("limits.daily_sessions", "must not be negative (0 means the server's limits.daily_per_repo)")
	}
	if !(r.Limits.DailyMoney >= 0) || math.IsInf(r.Limits.DailyMoney, 0) {
		add("limits.daily_money", "must be a number of US dollars, 0 or more (0 means the server's limits.daily_money_per_repo)")
	}
	if r.Label != "" {
		if err := validLabel(r.Label); err != nil {
			add("label", "%v", err)
		}
	}
	if r.Repair.Enabled && len(r.Repair.Checks) == 0 {
		add("repair.checks", "must list at least one check name pattern when repair.enabled is true")
	}
	if len(r.Repair.Checks) > MaxRepairChecks {
		add("repair.checks", "has %d patterns; at most %d", len(r.Repair.Checks), MaxRepairChecks)
	}
	for i, c := range r.Repair.Checks {
		if err := policy.ValidCheckPattern(c); err != nil {
			add(fmt.Sprintf("repair.checks[%d]", i), "%v", err)
		}
	}
	if r.Repair.MaxSessions < 0 {
		add("repair.max_sessions", "must not be negative (0 means the server's repair.max_sessions_per_pr)")
	}
	validateRepoRegistries(r.Registries, add)
	validateServices(r.Services, add)
	if len(faults) > 0 {
		return errors.New(strings.Join(faults, "; "))
	}
	return nil
}

// validLabel checks a trigger label: 1 to MaxLabelChars characters, no
// commas (GitHub's APIs list labels comma-separated), nothing GitHub would
// trim or that nobody can see, and not one of the reserved outcome labels.
func validLabel(l string) error {
	switch n := utf8.RuneCountInString(l); {
	case n > MaxLabelChars:
		return fmt.Errorf("%q is %d characters long; at most %d", l, n, MaxLabelChars)
	case strings.TrimSpace(l) != l:
		return fmt.Errorf("%q must not start or end with a space", l)
	case strings.ContainsRune(l, ','):
		return fmt.Errorf("%q must not contain a comma", l)
	case strings.ContainsAny(l, "?#%"):
		// The label goes into API paths (removing it from an issue), where
		// these would end or garble the path.
		return fmt.Errorf("%q must not contain ?, # or %%", l)
	case strings.IndexFunc(l, func(r rune) bool { return policy.IsHiddenInLine(r) && !policy.IsPresentationSelector(r) }) >= 0:
		return fmt.Errorf("%q has control or invisible characters", l)
	case len(l) >= len(OutcomeLabelPrefix) && strings.EqualFold(l[:len(OutcomeLabelPrefix)], OutcomeLabelPrefix):
		return fmt.Errorf("%q starts with %q, which is reserved for Inspect's outcome labels (%s, %s)", l, OutcomeLabelPrefix, OutcomeLabelDone, OutcomeLabelFailed)
	}
	return nil
}

// MaxReproduceLabels caps reproduce.labels.
const MaxReproduceLabels = 20

// validBugLabel checks a label of reproduce.labels: a label GitHub can
// hold (1 to MaxLabelChars characters, no leading or trailing space, no
// invisible characters). Inspect only compares it, so the characters a
// trigger label may not carry are allowed.
func validBugLabel(l string) error {
	switch n := utf8.RuneCountInString(l); {
	case n == 0:
		return errors.New("must not be empty")
	case n > MaxLabelChars:
		return fmt.Errorf("%q is %d characters long; at most %d", l, n, MaxLabelChars)
	case strings.TrimSpace(l) != l:
		return fmt.Errorf("%q must not start or end with a space", l)
	case strings.IndexFunc(l, func(r rune) bool { return policy.IsHiddenInLine(r) && !policy.IsPresentationSelector(r) }) >= 0:
		return fmt.Errorf("%q has control or invisible characters", l)
	}
	return nil
}

// RepoConfigError is a config file that exists but does not parse. It is
// reported to the user, so its message names the file and the fault.
type RepoConfigError struct {
	Source string // owner/name@ref
	Path   string
	Err    error
}

func (e *RepoConfigError) Error() string {
	return fmt.Sprintf("%s in %s: %v", e.Path, e.Source, e.Err)
}

func (e *RepoConfigError) Unwrap() error { return e.Err }

// LoadedRepo is a repo config and where it came from.
type LoadedRepo struct {
	Config Repo
	// Source is "owner/name@ref" of the file, or "" when none exists and
	// defaults apply.
	Source string
	Path   string
	// Raw is the file's content, kept so the cache can re-parse it.
	Raw []byte
}

// refuseRemote refuses a file with a top-level `remote` key: go-githubapp's
// appconfig would read such a file as a reference to the config in
// another repository (`remote:`, `path:`, `ref:`), which the protected
// paths of this repository's sessions (and of the owner's `.github`
// repository's) do not cover, so any session there could rewrite it. The
// loader never follows one (NewRepoLoader); this is the error the user
// sees, whether or not the rest of the file would make a reference.
func refuseRemote(data []byte) error {
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil {
		return nil // not a mapping, or no YAML at all: decodeStrict says what is wrong
	}
	if _, ok := top["remote"]; !ok {
		return nil
	}
	return errors.New("remote: Inspect does not follow remote references; put the configuration in this file, " +
		"or in inspect.yml at the root of the owner's .github repository, where Inspect's sessions cannot change it")
}

// RepoLoader loads a repository's config: its own file, else the owner's
// `.github` repository's (policy.OrgConfigRepo), else defaults
// (go-githubapp's appconfig rules), never following a remote reference.
type RepoLoader struct {
	loader *appconfig.Loader
}

// OrgConfigPaths are the org-wide config files at the root of the owner's
// `.github` repository: RepoConfigPaths without their `.github/`, as
// appconfig reads them by default. policy.ProtectedPathsFor protects the
// same files there.
var OrgConfigPaths = orgConfigPaths()

func orgConfigPaths() []string {
	out := make([]string, len(RepoConfigPaths))
	for i, p := range RepoConfigPaths {
		out[i] = strings.TrimPrefix(p, ".github/")
	}
	return out
}

// NewRepoLoader returns a loader over RepoConfigPaths, falling back to
// OrgConfigPaths in policy.OrgConfigRepo. Its remote-reference parser
// finds none, so a file holding one is parsed as the config itself, and
// ParseRepo refuses it naming the file that holds it.
func NewRepoLoader() *RepoLoader {
	return &RepoLoader{loader: appconfig.NewLoader(RepoConfigPaths,
		appconfig.WithOwnerDefault(policy.OrgConfigRepo, OrgConfigPaths),
		appconfig.WithRemoteRefParser(func(string, []byte) (*appconfig.RemoteRef, error) { return nil, nil }),
	)}
}

// Load fetches and strictly parses the config on ref (the default branch).
// A parse failure is a *RepoConfigError; a fetch failure is any other error.
func (l *RepoLoader) Load(ctx context.Context, client *github.Client, owner, repo, ref string) (LoadedRepo, error) {
	c, err := l.loader.LoadConfig(ctx, client, owner, repo, ref)
	if err != nil {
		return LoadedRepo{}, fmt.Errorf("fetching %s from %s: %w", c.Path, c.Source, err)
	}
	if c.IsUndefined() {
		return LoadedRepo{}, nil
	}
	parsed, err := ParseRepo(c.Content)
	if err != nil {
		return LoadedRepo{}, &RepoConfigError{Source: c.Source, Path: c.Path, Err: err}
	}
	return LoadedRepo{Config: parsed, Source: c.Source, Path: c.Path, Raw: c.Content}, nil
}

// VerifyCommands maps the repo's verify steps to spec commands: every
// step named (unnamed ones "verify N"), names unique (a repeat gets " (2)"),
// and every timeout set (def when the step has none) and at most max.
func (r Repo) VerifyCommands(def, max time.Duration) []contract.Command {
	return specCommands(r.Verify, "verify", def, max)
}

// SetupCommands maps the repo's session setup steps, as VerifyCommands does.
func (r Repo) SetupCommands(def, max time.Duration) []contract.Command {
	return specCommands(r.Setup, "setup", def, max)
}

// SnapshotSetupCommands maps the repo's snapshot setup steps, as
// VerifyCommands does, then the services' setup steps. Their names start
// "snapshot " (or are contract.ServiceSetupName) so they never clash with
// session setup steps, which run in the same phase.
func (r Repo) SnapshotSetupCommands(def, max time.Duration) []contract.Command {
	cmds := specCommands(r.Snapshot.Setup, "setup", def, max)
	for i := range cmds {
		cmds[i].Name = "snapshot " + cmds[i].Name
	}
	// The services' setup steps follow: a build runs them, and a session
	// computes its cache keys from the same list (decision 0025).
	return append(cmds, r.serviceSetupCommands(def, max)...)
}

// SnapshotCaches maps the repo's caches to the spec's.
func (r Repo) SnapshotCaches() []contract.Cache {
	var out []contract.Cache
	for _, c := range r.Snapshot.Caches {
		out = append(out, contract.Cache{Path: c.Path, Lockfiles: c.Lockfiles})
	}
	return out
}

func specCommands(steps []RepoCommand, label string, def, max time.Duration) []contract.Command {
	var out []contract.Command
	seen := map[string]bool{}
	for i, v := range steps {
		base := strings.TrimSpace(v.Name)
		if base == "" {
			base = fmt.Sprintf("%s %d", label, i+1)
		}
		name := base
		for n := 2; seen[name]; n++ {
			name = fmt.Sprintf("%s (%d)", base, n)
		}
		seen[name] = true
		t := v.Timeout
		if t <= 0 {
			t = def
		}
		out = append(out, contract.Command{Name: name, Argv: v.Run, Timeout: contract.Duration(min(t, max)), Screenshots: v.Screenshots})
	}
	return out
}
