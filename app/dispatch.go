package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner"
	"github.com/inspecthq/inspect/runner/contract"
)

// Executor is runner.Executor: cmd/ picks runner/local on the app's host
// or runner/buildkite in production. Results never come through it; they
// arrive over the session channel.
type Executor = runner.Executor

// dispatch builds a prepared session's spec and starts its attempt. A
// replay finds the attempt it created and only starts what did not start.
func (s *Service) dispatch(ctx context.Context, w *store.Work) error {
	sess, err := s.store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	if sess.State != store.Preparing || s.executor == nil {
		return nil
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Logger()
	ctx = log.WithContext(ctx)
	number := 1
	if sess.AttemptID != "" {
		a, err := s.store.GetAttempt(ctx, sess.AttemptID)
		if err != nil {
			return err
		}
		number = a.Number + 1
		switch {
		case a.State == store.AttemptEnded:
			// Ended: lost and re-dispatched (see redispatch), or replaced
			// below by an earlier run. A fresh attempt follows.
		case s.foreignLocalAttempt(a):
			// Another replica's sandbox, handed back or dead with it: never
			// adopted, since this replica could neither watch nor stop it.
			if err := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); err != nil {
				return err
			}
		case a.ExternalID != "":
			return s.markDispatched(ctx, sess.ID, a.Deadline)
		default:
			// An earlier run created the attempt and may have started it
			// without recording that: adopt the run if the executor can
			// find it, else end the attempt rather than guess, and make a
			// fresh one below.
			if found, err := s.adoptRun(ctx, a); err != nil || found {
				return err
			}
			if err := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); err != nil {
				return err
			}
		}
	}
	c, err := s.gh.Installation(ctx, sess.InstallationID)
	if err != nil {
		return err
	}
	spec, reply, err := s.buildSpec(ctx, c, sess)
	if err != nil {
		return err
	}
	if reply != "" {
		return s.end(ctx, sess.ID, store.Errored, "config_invalid", reply)
	}
	if (sess.Redispatches > 0 || sess.Handbacks > 0) && !sess.Deadline.IsZero() {
		// A re-dispatch or a handback never buys time, however many tries
		// its start takes.
		spec.Limits.Deadline = sess.Deadline.UTC()
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	claim := contract.NewSecret()
	a := store.Attempt{ID: spec.AttemptID, SessionID: sess.ID, Number: number, Deadline: spec.Limits.Deadline, Spec: string(specJSON)}
	if s.hostsAttempts() {
		// Its sandbox lives and dies with this replica (see
		// replaceDeadHostAttempt).
		a.Host = s.WorkerName
	}
	if err := s.store.CreateAttempt(ctx, a, claim, s.clock.Now()); err != nil {
		return err
	}
	ext, err := s.executor.Start(ctx, runner.Attempt{
		SessionID: sess.ID, AttemptID: a.ID, Number: a.Number, ChannelURL: s.channelURL, ClaimCode: claim, Deadline: a.Deadline,
		RequesterLogin: sess.RequesterLogin, RequesterID: sess.RequesterID,
	})
	if errors.Is(err, runner.ErrAtCapacity) {
		// Not a failure: the session waits for a free slot. The attempt
		// made for it is ended, and a fresh one is made on the next try.
		if endErr := s.store.EndAttempt(ctx, a.ID, s.clock.Now()); endErr != nil {
			return endErr
		}
		return &postponed{after: s.cfg.Workers.PollInterval * 5, why: "the executor is at capacity"}
	}
	if err != nil {
		return fmt.Errorf("starting the attempt: %w", err)
	}
	if err := s.store.SetAttemptExternalID(ctx, a.ID, ext, s.clock.Now()); err != nil {
		return err
	}
	log.Info().Str("attempt_id", a.ID).Str("external_id", ext).Msg("session dispatched")
	if err := s.markDispatched(ctx, sess.ID, a.Deadline); err != nil {
		return err
	}
	// A cancel may have ended the session while the attempt was starting;
	// then nobody else knows to stop it.
	if now, err := s.store.GetSession(ctx, sess.ID); err == nil && now.State == store.Done {
		s.stopAttempt(ctx, a.ID)
	}
	return nil
}

// adoptRun records the run an executor started for an attempt whose start
// was not recorded. It reports whether there was one.
func (s *Service) adoptRun(ctx context.Context, a store.Attempt) (bool, error) {
	finder, ok := s.executor.(runner.AttemptFinder)
	if !ok {
		return false, nil
	}
	ext, found, err := finder.Find(ctx, a.SessionID, a.Number)
	if err != nil || !found {
		return false, err
	}
	if err := s.store.SetAttemptExternalID(ctx, a.ID, ext, s.clock.Now()); err != nil {
		return false, err
	}
	zerolog.Ctx(ctx).Info().Str("attempt_id", a.ID).Str("external_id", ext).Msg("adopted a run started earlier")
	return true, s.markDispatched(ctx, a.SessionID, a.Deadline)
}

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
	cfg, err := s.sessionRepoConfig(ctx, c, sess)
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		return contract.Spec{}, render.ConfigErrorReply(sess, cfgErr), nil
	}
	if err != nil {
		return contract.Spec{}, "", err
	}
	if !cfg.Agent.Configured() {
		return contract.Spec{}, render.NoAgentReply(sess.RequesterLogin), nil
	}
	agent, err := cfg.Agent.Spec(s.cfg)
	if err != nil {
		return contract.Spec{}, render.AgentUnusableReply(sess.RequesterLogin, err), nil
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
		Agent:        agent,
	}
	var pr *github.PullRequest
	comments := -1 // the thread's comment count, when GitHub said
	if sess.IsPR {
		var err error
		pr, _, err = c.PullRequests.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number)
		if err != nil {
			return contract.Spec{}, "", fmt.Errorf("reading the pull request: %w", err)
		}
		spec.PinnedSHA = sess.HeadSHA
		spec.Target = contract.Target{Kind: contract.TargetPullRequest, Number: sess.Number, BaseBranch: pr.GetBase().GetRef(), HeadBranch: pr.GetHead().GetRef()}
		spec.Context = append(spec.Context,
			contract.ContextItem{Kind: contract.ContextTitle, Author: pr.GetUser().GetLogin(), Text: pr.GetTitle(), Untrusted: true},
			contract.ContextItem{Kind: contract.ContextBody, Author: pr.GetUser().GetLogin(), Text: pr.GetBody(), Untrusted: true})
	} else {
		issue, _, err := c.Issues.Get(ctx, sess.RepoOwner, sess.RepoName, sess.Number)
		if err != nil {
			return contract.Spec{}, "", fmt.Errorf("reading the issue: %w", err)
		}
		if issue.Comments != nil {
			comments = issue.GetComments()
		}
		ref, _, err := c.Git.GetRef(ctx, sess.RepoOwner, sess.RepoName, "heads/"+defaultBranch)
		if err != nil {
			return contract.Spec{}, "", fmt.Errorf("reading the default branch: %w", err)
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
	extra, err := s.gatherContext(ctx, c, sess, cfg, spec.PinnedSHA, pr, comments)
	if err != nil {
		return contract.Spec{}, "", err
	}
	agentsMD, err := defaultBranchAgentsMD(ctx, c, sess.RepoOwner, sess.RepoName, defaultBranch)
	if err != nil {
		return contract.Spec{}, "", err
	}
	// The default branch's AGENTS.md comes first: a pull request's own copy
	// (in the checkout) is the PR author's to change, this one the repo's.
	spec.Context = append(append(agentsMD, spec.Context...), extra...)
	// A repo may only narrow the server's limits (policy.Narrow).
	limits := policy.Narrow(s.cfg.PolicyLimits(), cfg.PolicyLimits())
	timeout, maxFiles := limits.SessionTimeout, limits.MaxChangedFiles
	spec.Verify = cfg.VerifyCommands(s.cfg.Sessions.CommandTimeout, timeout)
	spec.Setup = cfg.SetupCommands(s.cfg.Sessions.CommandTimeout, timeout)
	spec.Env = cfg.Env
	spec.Snapshot = s.pinSnapshot(ctx, sess, cfg, timeout)
	spec.Limits = contract.Limits{
		Deadline: s.clock.Now().Add(timeout).UTC().Truncate(time.Second), Timeout: contract.Duration(timeout),
		MaxOutputBytes: 64 << 10, MaxChangedFiles: maxFiles, MaxChangeBytes: s.cfg.Sessions.MaxChangeBytes,
	}
	// Untrusted text may carry a pasted token; the spec refuses any, so
	// redact first rather than fail the session.
	contract.NewRedactor().RedactStrings(&spec)
	if err := spec.Validate(); err != nil {
		return contract.Spec{}, "", fmt.Errorf("building the spec: %w", err)
	}
	return spec, "", nil
}

// sessionRepoConfig is the repo config a session runs under: the cached
// entry (prepare refreshed it), or, when the cache lost it meanwhile (an
// org-wide push drops inherited entries), a fresh read. A file that does
// not parse is a *config.RepoConfigError; callers fail closed on it.
func (s *Service) sessionRepoConfig(ctx context.Context, c *github.Client, sess store.Session) (config.Repo, error) {
	entry, found, err := s.store.CachedRepoConfig(ctx, sess.RepoID, s.clock.Now())
	if err != nil {
		return config.Repo{}, err
	}
	if !found {
		repo, _, err := c.Repositories.Get(ctx, sess.RepoOwner, sess.RepoName)
		if err != nil {
			return config.Repo{}, fmt.Errorf("reading the repository: %w", err)
		}
		return s.loadRepoConfig(ctx, c, sess.InstallationID, sess.RepoID, repo, s.clock.Now())
	}
	if entry.Status == store.ConfigInvalid {
		return config.Repo{}, &config.RepoConfigError{Source: entry.Source, Path: ".github/inspect.yml", Err: errors.New(entry.Error)}
	}
	cfg, err := config.ParseRepo([]byte(entry.Content))
	if err != nil {
		return config.Repo{}, &config.RepoConfigError{Source: entry.Source, Path: ".github/inspect.yml", Err: err}
	}
	return cfg, nil
}

// defaultBranchAgentsMD is the default branch's AGENTS.md as a context item
// (none when there is no such file). It is the repository's own guidance,
// merged by its writers, so it is not marked untrusted.
func defaultBranchAgentsMD(ctx context.Context, c *github.Client, owner, repo, branch string) ([]contract.ContextItem, error) {
	f, _, _, err := c.Repositories.GetContents(ctx, owner, repo, "AGENTS.md", &github.RepositoryContentGetOptions{Ref: branch})
	if isStatus(err, http.StatusNotFound) || (err == nil && f == nil) {
		return nil, nil // no file (or a directory of that name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading AGENTS.md from %s: %w", branch, err)
	}
	text, err := f.GetContent()
	if err != nil {
		return nil, fmt.Errorf("decoding AGENTS.md: %w", err)
	}
	return []contract.ContextItem{{Kind: contract.ContextAgentsMD, Source: "AGENTS.md@" + branch, Text: clip(text)}}, nil
}
