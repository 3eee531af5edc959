package checkoutrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
)

// localOwner is the owner of the session's repository when --repo-name
// does not name one.
const localOwner = "local"

// buildSpec builds the session spec through the server's own code
// (config.Server.SessionSpec): the agent, commands, env, registries,
// snapshot and limits that the server config and the repository config
// decide, with placeholders where a GitHub session has facts a local one
// lacks (the repository id, the issue number). The clone URL is filled in
// once the server listens. It returns the repository config too: its
// protected paths judge the change.
func buildSpec(ctx context.Context, opt Options, co *checkout) (contract.Spec, config.Repo, string, error) {
	cfg, source, found, err := co.repoConfig(ctx, opt.Git, opt.ConfigFile)
	if err != nil {
		return contract.Spec{}, config.Repo{}, "", err
	}
	if len(opt.Agent) > 0 {
		// A command agent keeps the model the config gives it, if any:
		// the server must still offer it to preset command.
		model := ""
		if cfg.Agent.PresetName() == contract.PresetCommand {
			model = cfg.Agent.Model
		}
		cfg.Agent = config.Agent{Preset: string(contract.PresetCommand), Command: opt.Agent, Model: model}
		if found {
			source = "--agent, with the verify commands of " + source
		} else {
			source = "--agent, with no repository config (nothing verifies)"
		}
	}
	server := config.Defaults()
	if opt.Server != nil {
		server = *opt.Server
	}
	if opt.Timeout > 0 {
		server.Sessions.Timeout = opt.Timeout // the user's own session; a repository may still only narrow it
	}
	owner, name := localOwner, co.name()
	if opt.RepoName != "" {
		var ok bool
		if owner, name, ok = strings.Cut(opt.RepoName, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return contract.Spec{}, config.Repo{}, "", usageErrorf("--repo-name must be OWNER/NAME (got %q)", opt.RepoName)
		}
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
			Owner: owner, Name: name, ID: 1,
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
	}
	var agentErr *config.AgentError
	var regErr *config.RegistriesError
	switch err := server.SessionSpec(&spec, cfg, owner+"/"+name, time.Now()); {
	case errors.Is(err, config.ErrNoAgent):
		where := "no .github/inspect.yml is committed at HEAD"
		if found {
			where = source + " names no agent"
		}
		return contract.Spec{}, config.Repo{}, "", usageErrorf("no agent to run: %s; give --agent '[\"program\", \"arg\"]' or add `agent: {preset: command, command: [...]}` "+
			"(or a preset such as codex and its model, with --server-config naming the model's provider) to .github/inspect.yml", where)
	case errors.As(err, &agentErr):
		return contract.Spec{}, config.Repo{}, "", agentUnusable(cfg.Agent, source, opt.ServerSource, agentErr)
	case errors.As(err, &regErr):
		return contract.Spec{}, config.Repo{}, "", usageErrorf("%s: %v (the registries come from --server-config; --repo-name names the repository they serve)", source, regErr.Err)
	case err != nil:
		return contract.Spec{}, config.Repo{}, "", err
	}
	if err := pinSnapshot(ctx, opt, &spec); err != nil {
		return contract.Spec{}, config.Repo{}, "", err
	}
	// A token pasted into the instructions would make the spec invalid;
	// redact it, as the app does.
	contract.NewRedactor().RedactStrings(&spec)
	if err := spec.Validate(); err != nil {
		return contract.Spec{}, config.Repo{}, "", usageErrorf("%v", err)
	}
	return spec, cfg, source, nil
}

// agentUnusable says why the server config cannot run the repository's
// agent. Without a server config, what is missing is one: a preset's model
// is served by a provider that only a server config names.
func agentUnusable(agent config.Agent, source, serverSource string, err *config.AgentError) error {
	if serverSource == "" && agent.Model != "" {
		return usageErrorf("%s asks for agent preset %s with model %s, which needs a model provider, and no server config names one: "+
			"give --server-config FILE, a server config (the keys of `inspect serve --config`) whose agents.providers and agents.models "+
			"offer %s to preset %s", source, agent.PresetName(), agent.Model, agent.Model, agent.PresetName())
	}
	in := "the default server config (no --server-config)"
	if serverSource != "" {
		in = "--server-config " + serverSource
	}
	return usageErrorf("the agent of %s cannot run with %s: %v", source, in, err.Err)
}

// pinSnapshot pins the newest snapshot of the session's repository in
// --snapshot-store, as the app pins one from snapshots.store. Without a
// store, or without a snapshot there, the session clones cold and runs the
// snapshot setup itself (a note says so).
func pinSnapshot(ctx context.Context, opt Options, spec *contract.Spec) error {
	if opt.SnapshotStore == "" {
		return nil
	}
	if spec.Snapshot == nil {
		fmt.Fprintf(progressOf(opt), "inspect run: note: --snapshot-store is ignored: the repository config has no snapshot section\n")
		return nil
	}
	store, err := contract.AbsSnapshotStore(opt.SnapshotStore)
	if err != nil {
		return usageErrorf("--snapshot-store %s: %v", opt.SnapshotStore, err)
	}
	if err := contract.ValidateSnapshotStore(store); err != nil {
		return usageErrorf("--snapshot-store %q: %v", opt.SnapshotStore, err)
	}
	st, err := images.OpenStore(store)
	if err != nil {
		return usageErrorf("--snapshot-store %s: %v", opt.SnapshotStore, err)
	}
	repo := spec.Repo.Owner + "/" + spec.Repo.Name
	latest, err := st.Latest(ctx, repo)
	switch {
	case errors.Is(err, images.ErrNoSnapshot):
		fmt.Fprintf(progressOf(opt), "inspect run: note: %s holds no snapshot of %s (name it with --repo-name); the session clones cold and runs the snapshot setup\n", opt.SnapshotStore, repo)
	case err != nil:
		return fmt.Errorf("resolving the newest snapshot of %s in %s: %w", repo, opt.SnapshotStore, err)
	default:
		spec.Snapshot.Store, spec.Snapshot.Digest = store, latest.Digest.String()
	}
	return nil
}

func progressOf(opt Options) io.Writer {
	if opt.Progress == nil {
		return io.Discard
	}
	return opt.Progress
}
