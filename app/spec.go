package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/gather"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// The session spec: everything the agent gets, assembled in one place from
// the session, the default branch's repo config, the gathered context
// (app/gather) and the pinned snapshot. It carries no credential.

// buildSpec gathers what the agent gets. A non-empty reply means the repo's
// config cannot run a session (no agent); the caller ends the session with it.
func (s *Service) buildSpec(ctx context.Context, c *github.Client, sess store.Session) (contract.Spec, string, error) {
	defaultBranch := sess.DefaultBranch
	if defaultBranch == "" {
		repo, _, err := c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
		if err != nil {
			return contract.Spec{}, "", fmt.Errorf("reading the repository: %w", err)
		}
		defaultBranch = repo.GetDefaultBranch()
	}
	cfg, err := s.repoConfigs.ForSession(ctx, c, sess)
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		return contract.Spec{}, render.ConfigErrorReply(sess, cfgErr), nil
	}
	if err != nil {
		return contract.Spec{}, "", err
	}
	spec := contract.Spec{
		Version:   contract.SpecVersion,
		SessionID: sess.ID,
		AttemptID: newID(),
		Repo: contract.Repo{
			Owner: sess.RepoOwner, Name: sess.RepoName, ID: sess.RepoID,
			CloneURL:      strings.TrimSuffix(s.cfg.GitHub.WebURL, "/") + "/" + sess.RepoOwner + "/" + sess.RepoName + ".git",
			DefaultBranch: defaultBranch,
		},
		Instructions: sess.Instructions,
		Requester:    contract.Requester{Login: sess.RequesterLogin, ID: sess.RequesterID},
	}
	// The agent, commands, env, registries, snapshot caches and limits:
	// what the server's config and the repo's decide, as `inspect run`
	// decides them too.
	var agentErr *config.AgentError
	var regErr *config.RegistriesError
	switch err := s.cfg.SessionSpec(&spec, cfg, sess.FullName(), s.clock.Now()); {
	case errors.Is(err, config.ErrNoAgent):
		return contract.Spec{}, render.NoAgentReply(sess.RequesterLogin), nil
	case errors.As(err, &agentErr):
		return contract.Spec{}, render.AgentUnusableReply(sess.RequesterLogin, agentErr.Err), nil
	case errors.As(err, &regErr):
		return contract.Spec{}, render.ConfigErrorReply(sess, regErr.Err), nil
	case err != nil:
		return contract.Spec{}, "", err
	}
	// Messages that come while the session runs are turns of it (decision
	// 0071), unless the repo keeps the rule before turns. A branch session
	// has no thread, but its page takes messages too.
	if mode := cfg.SteerMode(); mode != session.SteerOff {
		spec.Steer = &contract.Steer{Mode: string(mode), TurnTimeout: contract.Duration(cfg.TurnTimeout(spec.Limits.Timeout.Std()))}
	}
	var pr *github.PullRequest
	var issue *github.Issue
	var ref *github.Reference
	var agentsMD []contract.ContextItem
	comments := -1 // the thread's comment count, when GitHub said
	target := sess.Target()
	// The thread, the default branch's head for an issue and AGENTS.md
	// side by side (decision 0048): none needs another.
	err = sideBySide(ctx, func(ctx context.Context) error {
		var err error
		agentsMD, err = gather.DefaultBranchAgentsMD(ctx, c, sess.RepoOwner, sess.RepoName, defaultBranch)
		return err
	}, func(ctx context.Context) error {
		var err error
		switch {
		case target.IsBranch():
		case target.IsPullRequest():
			if pr, _, err = c.PullRequests.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number); err != nil {
				return fmt.Errorf("reading the pull request: %w", err)
			}
		default:
			if issue, _, err = c.Issues.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number); err != nil {
				return fmt.Errorf("reading the issue: %w", err)
			}
		}
		return nil
	}, func(ctx context.Context) error {
		if target.IsBranch() || target.IsPullRequest() {
			return nil
		}
		var err error
		if ref, _, err = c.Git.GetRef(ctx, sess.RepoOwner, sess.RepoName, "heads/"+defaultBranch); err != nil {
			return fmt.Errorf("reading the default branch: %w", err)
		}
		return nil
	})
	if err != nil {
		return contract.Spec{}, "", err
	}
	switch {
	case target.IsBranch():
		// The branch's head as preparation pinned it; no thread to read
		// (a comment count of 0: nothing to gather).
		spec.PinnedSHA = sess.HeadSHA
		spec.Target = contract.Target{Kind: contract.TargetBranch, BaseBranch: target.BranchName()}
		comments = 0
	case target.IsPullRequest():
		spec.PinnedSHA = sess.HeadSHA
		spec.Target = contract.Target{Kind: contract.TargetPullRequest, Number: sess.Number, BaseBranch: pr.GetBase().GetRef(), HeadBranch: pr.GetHead().GetRef()}
		spec.Context = append(spec.Context,
			contract.ContextItem{Kind: contract.ContextTitle, Author: pr.GetUser().GetLogin(), Text: pr.GetTitle(), Untrusted: true},
			contract.ContextItem{Kind: contract.ContextBody, Author: pr.GetUser().GetLogin(), Text: pr.GetBody(), Untrusted: true})
	default:
		if issue.Comments != nil {
			comments = issue.GetComments()
		}
		spec.PinnedSHA = ref.GetObject().GetSHA()
		spec.Target = contract.Target{Kind: contract.TargetIssue, Number: sess.Number, BaseBranch: defaultBranch}
		spec.Context = append(spec.Context,
			contract.ContextItem{Kind: contract.ContextTitle, Author: issue.GetUser().GetLogin(), Text: issue.GetTitle(), Untrusted: true},
			contract.ContextItem{Kind: contract.ContextBody, Author: issue.GetUser().GetLogin(), Text: issue.GetBody(), Untrusted: true})
	}
	if pr != nil && pr.Comments != nil {
		comments = pr.GetComments()
	}
	// Reproduce first (decision 0082), from the labels the issue or pull
	// request carried when it was read above: no request of its own.
	spec.Reproduce = cfg.ReproduceFor(targetLabels(issue, pr), sess.TriggerKind == session.KindRepair)
	// The session's context: the store, our bot's login and the app's
	// GitHub reads it needs.
	gatherer := gather.Gatherer{Store: s.store, Bot: s.botLogin(), RoleName: ghclient.RoleName, FailingChecks: failingChecksAs(s.Identity),
		Buildkite: buildkiteLogs(ctx, s.cfg)}
	// A request after a session on this thread (or its pull request)
	// ended continues that session's conversation (decision 0072): a new
	// session linked to it, its history and its authors this one's. A
	// retry is its own session's again; a repair nobody asked for.
	if sess.Info().Continues == "" && sess.RetryOf == "" && sess.TriggerKind != session.KindRepair {
		prev, ok, err := gatherer.Continues(ctx, sess)
		if err != nil {
			return contract.Spec{}, "", err
		}
		if ok {
			if sess, err = s.transitions.Record(ctx, sess.ID, func(x *store.Session) {
				if ti := x.Info(); ti.Continues == "" {
					ti.Continues = prev.ID
					x.TriggerInfo = ti.Encode()
				}
			}); err != nil {
				return contract.Spec{}, "", err
			}
		}
	}
	// The agent resumes the conversation the continued session's attempt
	// kept, when it kept one (its supervisor starts fresh otherwise).
	if prevID := sess.Info().Continues; prevID != "" {
		if spec.AgentState, err = keptAgentState(ctx, s.store, prevID); err != nil {
			return contract.Spec{}, "", err
		}
	}
	extra, err := gatherer.Context(ctx, c, sess, cfg, spec.PinnedSHA, pr, comments)
	if err != nil {
		return contract.Spec{}, "", err
	}
	// The default branch's AGENTS.md comes first: a pull request's own copy
	// (in the checkout) is the PR author's to change, this one the repo's.
	spec.Context = append(append(agentsMD, spec.Context...), extra...)
	s.snapshots.Pin(ctx, sess.FullName(), spec.Snapshot)
	// Untrusted text may carry a pasted token; the spec refuses any, so
	// redact first rather than fail the session.
	contract.NewRedactor().RedactStrings(&spec)
	if err := spec.Validate(); err != nil {
		return contract.Spec{}, "", fmt.Errorf("building the spec: %w", err)
	}
	return spec, "", nil
}

// targetLabels are the names of the labels on the session's issue or pull
// request (nil for a branch session, which has neither).
func targetLabels(issue *github.Issue, pr *github.PullRequest) []string {
	var labels []*github.Label
	switch {
	case issue != nil:
		labels = issue.Labels
	case pr != nil:
		labels = pr.Labels
	}
	names := make([]string, 0, len(labels))
	for _, l := range labels {
		names = append(names, l.GetName())
	}
	return names
}

// keptAgentState names the agent state the session's last attempt kept
// (decision 0072), or nil when it kept none or it was pruned.
func keptAgentState(ctx context.Context, st *store.Store, sessionID string) (*contract.AgentStateRef, error) {
	prev, err := st.GetSession(ctx, sessionID)
	if err != nil || prev.AttemptID == "" {
		return nil, err
	}
	kept, err := st.HasAgentState(ctx, prev.AttemptID)
	if err != nil || !kept {
		return nil, err
	}
	return &contract.AgentStateRef{AttemptID: prev.AttemptID}, nil
}
