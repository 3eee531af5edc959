// Package repair is the consider_repair work's handler: whether a failing
// check becomes a repair session, with the fresh repo config and the facts
// policy.DecideRepair needs. The engine (package app) wires a Handler with
// what it needs and nothing more (decision 0049).
package repair

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/gather"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Handler runs consider_repair work. Its fields are all it reaches of the
// engine.
type Handler struct {
	// Store reads a pull request's repairs and creates the session.
	Store Store
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// RepoConfig is the repository's fresh config (read at fetchStart); a
	// *config.RepoConfigError when the file does not parse.
	RepoConfig func(ctx context.Context, c *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error)
	// ScheduleSnapshots schedules the repository's snapshot builds under
	// the config just read.
	ScheduleSnapshots func(ctx context.Context, installationID, repoID int64, fullName string, cfg config.Repo) error
	// FailingChecks lists the failing checks on sha that cfg repairs,
	// never Inspect's own.
	FailingChecks func(ctx context.Context, c *github.Client, owner, name, sha string, cfg config.Repo) ([]gather.FailingCheck, error)
	// Postpone is the error that has the work wait `after` without
	// counting as a failed attempt.
	Postpone func(after time.Duration, why string) error
	// NewID is a new session's id.
	NewID func() string
	// Wake wakes the workers for the session's preparation.
	Wake func()
	// Now is the clock.
	Now func() time.Time
	// Paused is server.paused: no repair starts.
	Paused bool
	// Settings is the server's repair section.
	Settings config.Repair
	// Limits is the server's policy limits, narrowed by each repo's.
	Limits policy.Limits
	// PollInterval is workers.poll_interval.
	PollInterval time.Duration
}

// Store is what the handler reads and writes of the store.
type Store interface {
	Claimed(ctx context.Context, key string) (bool, error)
	PullRepairHistory(ctx context.Context, repoID int64, number int) (store.RepairHistory, error)
	IsSessionCommit(ctx context.Context, repoID int64, sha string) (bool, error)
	CreateSessionOnce(ctx context.Context, claimKeys []string, sess *store.Session, work []store.NewWork, now time.Time) (bool, error)
}

func checkNames(checks []gather.FailingCheck) []string {
	var names []string
	for _, ch := range checks {
		if n := render.CleanLine(ch.Name); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// Handle decides whether a failing check becomes a repair session, with
// the fresh repo config and everything the guards need (policy
// DecideRepair). Skips are silent: nobody asked, so nothing is posted.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	var f session.CheckFailure
	if err := json.Unmarshal([]byte(w.Payload), &f); err != nil {
		return fmt.Errorf("decoding repair payload: %w", err)
	}
	log := zerolog.Ctx(ctx).With().Str("repo", f.Repo.FullName()).Str("sha", f.HeadSHA).Str("check", f.Name).Logger()
	ctx = log.WithContext(ctx)
	if h.Paused {
		log.Info().Msg("repair dropped: the server is paused")
		return nil
	}
	// Store-only exits first: every failing check of a commit queues its
	// own item, and all but the first find the commit's repair claimed or
	// its PR busy. Waiting must not cost the installation's rate limit.
	var numbers []int
	if len(f.PullRequests) > 0 {
		pending, wait, err := h.repairPending(ctx, f)
		if err != nil || len(pending) == 0 {
			return err
		}
		if wait {
			return h.Postpone(h.recheck(), "a session is active on the pull request")
		}
		numbers = pending
	}
	c, err := h.Installation(ctx, f.InstallationID)
	if err != nil {
		return err
	}
	owner, name := f.Repo.Owner, f.Repo.Name
	repo, _, err := c.Repositories.Get(ctx, owner, name)
	if ghwrite.IsStatus(err, http.StatusNotFound) {
		log.Info().Msg("repair dropped: the repository is gone")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the repository: %w", err)
	}
	cfg, err := h.RepoConfig(ctx, c, f.Repo.ID, repo, h.Now())
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		log.Info().Err(err).Msg("repair dropped: the repo's config does not parse")
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.ScheduleSnapshots(ctx, f.InstallationID, f.Repo.ID, repo.GetFullName(), cfg); err != nil {
		return err
	}
	if !cfg.RepairEnabled() || repo.GetArchived() {
		log.Info().Bool("archived", repo.GetArchived()).Msg("repair dropped: repair is off for this repo")
		return nil
	}
	checks, err := h.FailingChecks(ctx, c, owner, name, f.HeadSHA, cfg)
	if err != nil {
		return err
	}
	if numbers == nil {
		// A commit status names no pull request: ask which have this head.
		if numbers, err = pullsFor(ctx, c, owner, name, f); err != nil {
			return err
		}
	}
	limits := policy.Narrow(h.Limits, cfg.PolicyLimits())
	now := h.Now()
	var waitUntil time.Time
	waiting := false
	for _, number := range numbers {
		d, pr, err := h.repairDecision(ctx, c, f, number, cfg, len(checks) > 0, limits, now)
		if err != nil {
			return err
		}
		plog := log.With().Int("number", number).Str("reason", string(d.Reason)).Logger()
		switch d.Verdict {
		case policy.RepairSkip:
			plog.Info().Msg("no repair")
		case policy.RepairWait:
			plog.Info().Time("until", d.Until).Msg("repair waits")
			if !waiting || (!d.Until.IsZero() && d.Until.Before(waitUntil)) {
				waitUntil = d.Until
			}
			waiting = true
		case policy.RepairStart:
			if err := h.startRepair(ctx, f, pr, checks, d, limits.RepairsPerPR, now); err != nil {
				return err
			}
		}
	}
	if waiting {
		after := h.recheck()
		if d := waitUntil.Sub(now); d > after {
			after = d
		}
		return h.Postpone(after, "a repair waits for its pull request")
	}
	return nil
}

// recheck is how often a repair that waits for its pull request's
// active session looks again: the debounce, at least five polls.
func (h *Handler) recheck() time.Duration {
	return max(h.Settings.Debounce, h.PollInterval*5)
}

// repairPending says, from the store alone, which of the payload's pull
// requests may still get a repair for this commit, and whether one of them
// has a session active (so the decision waits without asking GitHub).
func (h *Handler) repairPending(ctx context.Context, f session.CheckFailure) ([]int, bool, error) {
	var pending []int
	wait := false
	for _, p := range f.PullRequests {
		claimed, err := h.Store.Claimed(ctx, repairKey(f.Repo.ID, p.Number, f.HeadSHA))
		if err != nil {
			return nil, false, err
		}
		if claimed || slices.Contains(pending, p.Number) {
			continue // this commit's repair exists: nothing more to do for it
		}
		hist, err := h.Store.PullRepairHistory(ctx, f.Repo.ID, p.Number)
		if err != nil {
			return nil, false, err
		}
		if hist.Repairs >= h.Settings.MaxSessionsPerPR {
			// The server's budget bounds every repo's: spent.
			zerolog.Ctx(ctx).Info().Int("number", p.Number).Str("reason", string(policy.ReasonBudgetSpent)).Msg("no repair")
			continue
		}
		pending = append(pending, p.Number)
		wait = wait || hist.Active
	}
	return pending, wait, nil
}

// pullsFor names the open pull requests whose head is the failing commit.
func pullsFor(ctx context.Context, c *github.Client, owner, name string, f session.CheckFailure) ([]int, error) {
	numbers := []int{}
	prs, _, err := c.PullRequests.ListPullRequestsWithCommit(ctx, owner, name, f.HeadSHA, &github.ListOptions{PerPage: 100})
	if err != nil {
		return nil, fmt.Errorf("listing the commit's pull requests: %w", err)
	}
	for _, pr := range prs {
		if pr.GetState() == "open" && pr.GetHead().GetSHA() == f.HeadSHA {
			numbers = append(numbers, pr.GetNumber())
		}
	}
	return numbers, nil
}

// repairDecision gathers the guards' facts for one pull request.
func (h *Handler) repairDecision(ctx context.Context, c *github.Client, f session.CheckFailure, number int, cfg config.Repo, matched bool, limits policy.Limits, now time.Time) (policy.RepairDecision, *github.PullRequest, error) {
	pr, _, err := c.PullRequests.Get(ctx, f.Repo.Owner, f.Repo.Name, number)
	if err != nil {
		return policy.RepairDecision{}, nil, fmt.Errorf("reading pull request #%d: %w", number, err)
	}
	hist, err := h.Store.PullRepairHistory(ctx, f.Repo.ID, number)
	if err != nil {
		return policy.RepairDecision{}, nil, err
	}
	own, err := h.Store.IsSessionCommit(ctx, f.Repo.ID, f.HeadSHA)
	if err != nil {
		return policy.RepairDecision{}, nil, err
	}
	author := pr.GetUser()
	facts := policy.RepairFacts{
		Enabled: cfg.RepairEnabled(), Matched: matched, PROpen: pr.GetState() == "open" && !pr.GetMerged(),
		Fork:        policy.IsFork(pr.GetHead().GetRepo().GetFullName(), pr.GetBase().GetRepo().GetFullName()),
		AuthorIsBot: policy.IsBotSender(author.GetLogin(), author.GetType()), AuthorRole: policy.RoleNone,
		HeadMoved: pr.GetHead().GetSHA() != f.HeadSHA, Repairs: hist.Repairs, Budget: limits.RepairsPerPR,
		OnOwnCommit: own, ActiveSession: hist.Active, LastRepairEnd: hist.LastEnd, Cooldown: h.Settings.Cooldown, Now: now,
	}
	if matched && facts.PROpen && !facts.Fork && !facts.AuthorIsBot {
		role, err := ghclient.RoleName(ctx, c, f.Repo.Owner, f.Repo.Name, author.GetLogin())
		if err != nil {
			return policy.RepairDecision{}, nil, err
		}
		facts.AuthorRole = policy.Role(role)
	}
	return policy.DecideRepair(facts), pr, nil
}

// startRepair creates the repair session, once per (pull request, commit)
// whatever replays or concurrent failures of the same commit do.
func (h *Handler) startRepair(ctx context.Context, f session.CheckFailure, pr *github.PullRequest, checks []gather.FailingCheck, d policy.RepairDecision, budget int, now time.Time) error {
	names := checkNames(checks)
	author := pr.GetUser()
	sess := &store.Session{
		ID: h.NewID(), RepoID: f.Repo.ID, RepoOwner: f.Repo.Owner, RepoName: f.Repo.Name, InstallationID: f.InstallationID,
		Number: pr.GetNumber(), IsPR: true, TriggerKind: session.KindRepair, DeliveryID: f.DeliveryID,
		RequesterLogin: author.GetLogin(), RequesterID: author.GetID(), RequesterType: cmp.Or(author.GetType(), "User"),
		Instructions: render.RepairInstructions(names, gather.MaxRepairChecks), HeadSHA: f.HeadSHA,
		TriggerInfo: store.TriggerInfo{Checks: names, RepairNumber: d.Number, RepairBudget: budget, RepairLast: d.Last}.Encode(),
	}
	// One repair per (PR, commit), and each repair number once: two
	// commits' failures racing past the budget check cannot both take the
	// last repair.
	keys := []string{repairKey(f.Repo.ID, pr.GetNumber(), f.HeadSHA), fmt.Sprintf("repair-n:%d:%d:%d", f.Repo.ID, pr.GetNumber(), d.Number)}
	created, err := h.Store.CreateSessionOnce(ctx, keys, sess, []store.NewWork{{Kind: store.PrepareSession}}, now)
	if err != nil {
		return err
	}
	if created {
		zerolog.Ctx(ctx).Info().Str("session_id", sess.ID).Int("number", pr.GetNumber()).Int("repair", d.Number).Msg("repair session queued")
		h.Wake()
	}
	return nil
}

func repairKey(repoID int64, number int, sha string) string {
	return fmt.Sprintf("repair:%d:%d:%s", repoID, number, sha)
}
