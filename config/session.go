package config

import (
	"errors"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// What the server's config and a repository's decide of one session, in
// one place for every way a session runs: the app's sessions (app/spec.go)
// and `inspect run` (runner/checkoutrun), so that a local run is the
// session the server would run (decision 0022).

// MaxOutputBytes is how much of each command's output a session's
// evidence keeps.
const MaxOutputBytes = 64 << 10

// ErrNoAgent is SessionSpec's error for a repository config that names no
// agent.
var ErrNoAgent = errors.New("the repository's config names no agent")

// AgentError is SessionSpec's error for an agent this server cannot run
// (Agent.Validate's reason: a model it does not offer the preset, or none
// at all).
type AgentError struct{ Err error }

func (e *AgentError) Error() string { return e.Err.Error() }
func (e *AgentError) Unwrap() error { return e.Err }

// RegistriesError is SessionSpec's error for a repository whose
// `registries:` names one the server does not open to it
// (NarrowRegistries' reason).
type RegistriesError struct{ Err error }

func (e *RegistriesError) Error() string { return e.Err.Error() }
func (e *RegistriesError) Unwrap() error { return e.Err }

// SessionSpec sets what the server's config and the repository's decide in
// a session's spec:
//   - the agent, with the provider that serves its model (ErrNoAgent, or
//     an *AgentError when the server cannot run it);
//   - the verify and setup commands, and env;
//   - the registries the server opens to the repository fullName, as
//     the repository narrows them (a *RegistriesError when it names one
//     the server does not open);
//   - the services;
//   - the snapshot's caches and setup (nil when the repository asks for
//     none); pinning an image's digest is the caller's, who knows the store;
//   - the base image (snapshots.base_image), every session's root when it
//     is not restored from a snapshot (decision 0079);
//   - the limits, which the repository may only narrow (policy.Narrow),
//     with the deadline counted from now.
//
// The rest of the spec (ids, repository, commit, target, instructions,
// context) is the caller's.
func (c Server) SessionSpec(spec *contract.Spec, repo Repo, fullName string, now time.Time) error {
	if !repo.Agent.Configured() {
		return ErrNoAgent
	}
	agent, err := repo.Agent.Spec(c)
	if err != nil {
		return &AgentError{Err: err}
	}
	registries, err := c.SessionRegistries(fullName, repo)
	if err != nil {
		return &RegistriesError{Err: err}
	}
	limits := policy.Narrow(c.PolicyLimits(), repo.PolicyLimits())
	timeout := limits.SessionTimeout
	spec.Agent = agent
	spec.Verify = repo.VerifyCommands(c.Sessions.CommandTimeout, timeout)
	spec.Setup = repo.SetupCommands(c.Sessions.CommandTimeout, timeout)
	spec.Env = repo.Env
	spec.Registries = registries
	spec.Snapshot = repo.SessionSnapshot(c.Sessions.CommandTimeout, timeout)
	spec.BaseImage = c.Snapshots.BaseImage
	// A verify step's screenshots are artifacts under the same caps, so a
	// repository that names screenshots but no artifacts: still gets the
	// server's (decision 0083).
	if len(repo.Artifacts) > 0 || contract.HasScreenshots(spec.Verify) {
		spec.Artifacts = &contract.ArtifactSpec{Patterns: repo.Artifacts, MaxFileBytes: c.Artifacts.MaxFileBytes, MaxSessionBytes: c.Artifacts.MaxSessionBytes}
	}
	spec.Services = repo.ServiceSpecs(c.Sessions.CommandTimeout, timeout)
	spec.Limits = contract.Limits{
		Deadline:        now.Add(timeout).UTC().Truncate(time.Second),
		Timeout:         contract.Duration(timeout),
		MaxOutputBytes:  MaxOutputBytes,
		MaxChangedFiles: limits.MaxChangedFiles,
		MaxChangeBytes:  c.Sessions.MaxChangeBytes,
	}
	return nil
}

// SessionRegistries are the registries a session of the repository
// fullName reaches, by name and phase, as its spec (and its snapshot
// builds' jobs) name them: the ones the server opens to it, as the
// repository narrows them (NarrowRegistries, decision 0021). Their URLs
// and tokens stay with the server (decision 0018).
func (c Server) SessionRegistries(fullName string, repo Repo) ([]contract.Registry, error) {
	return NarrowRegistries(c.Egress.SessionRegistries(fullName), repo.Registries)
}

// SessionSnapshot is the spec's snapshot before a digest is pinned: the
// repository's caches and its snapshot setup, each step's timeout def
// unless it sets one, and at most max. nil when the repository asks for
// no snapshot.
func (r Repo) SessionSnapshot(def, max time.Duration) *contract.Snapshot {
	if !r.WantsSnapshots() {
		return nil
	}
	return &contract.Snapshot{Caches: r.SnapshotCaches(), Setup: r.SnapshotSetupCommands(def, max)}
}

// CheckChange validates a session's change against the spec's limits and
// the repository's protected paths (on top of the ones no config can
// remove, which depend on the repository's name, without its owner: see
// policy.ProtectedPathsFor), as the server does before it pushes anything.
func (r Repo) CheckChange(m *contract.Manifest, limits contract.Limits, repoName string) (policy.ChangeDecision, policy.ChangeSummary) {
	var files []policy.ChangedFile
	if m != nil {
		files = make([]policy.ChangedFile, 0, len(m.Files))
		for _, f := range m.Files {
			files = append(files, policy.ChangedFile{Path: f.Path, Mode: string(f.Mode), Content: f.Content, Deleted: f.Deleted, Existed: !f.Added})
		}
	}
	return policy.ValidateChange(files, policy.ChangeLimits{
		MaxFiles: limits.MaxChangedFiles, MaxBytes: limits.MaxChangeBytes, ProtectedPaths: r.ProtectedPaths, Repo: repoName,
	})
}
