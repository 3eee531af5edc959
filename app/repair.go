package app

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

// failingChecks lists the failing checks on sha that the repo's config
// repairs (gather.ListFailingChecks), never Inspect's own.
func (s *Service) failingChecks(ctx context.Context, c *github.Client, owner, name, sha string, cfg config.Repo) ([]gather.FailingCheck, error) {
	self := s.Identity()
	return gather.ListFailingChecks(ctx, c, owner, name, sha, cfg, policy.AppIdentity{ID: self.AppID, Slug: self.AppSlug})
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

// considerRepair decides whether a failing check becomes a repair session,
// with the fresh repo config and everything the guards need (policy
// DecideRepair). Skips are silent: nobody asked, so nothing is posted.
func (s *Service) considerRepair(ctx context.Context, w *store.Work) error {
	var f session.CheckFailure
	if err := json.Unmarshal([]byte(w.Payload), &f); err != nil {
		return fmt.Errorf("decoding repair payload: %w", err)
	}
	log := zerolog.Ctx(ctx).With().Str("repo", f.Repo.FullName()).Str("sha", f.HeadSHA).Str("check", f.Name).Logger()
	ctx = log.WithContext(ctx)
	if s.cfg.Paused {
		log.Info().Msg("repair dropped: the server is paused")
		return nil
	}
	// Store-only exits first: every failing check of a commit queues its
	// own item, and all but the first find the commit's repair claimed or
	// its PR busy. Waiting must not cost the installation's rate limit.
	var numbers []int
	if len(f.PullRequests) > 0 {
		pending, wait, err := s.repairPending(ctx, f)
		if err != nil || len(pending) == 0 {
			return err
		}
		if wait {
			return &postponed{after: s.repairRecheck(), why: "a session is active on the pull request"}
		}
		numbers = pending
	}
	c, err := s.gh.Installation(ctx, f.InstallationID)
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
	cfg, err := s.repoConfigs.Load(ctx, c, f.Repo.ID, repo, s.clock.Now())
	var cfgErr *config.RepoConfigError
	if errors.As(err, &cfgErr) {
		log.Info().Err(err).Msg("repair dropped: the repo's config does not parse")
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.snapshots.Schedule(ctx, f.InstallationID, f.Repo.ID, repo.GetFullName(), cfg); err != nil {
		return err
	}
	if !cfg.RepairEnabled() || repo.GetArchived() {
		log.Info().Bool("archived", repo.GetArchived()).Msg("repair dropped: repair is off for this repo")
		return nil
	}
	checks, err := s.failingChecks(ctx, c, owner, name, f.HeadSHA, cfg)
	if err != nil {
		return err
	}
	if numbers == nil {
		// A commit status names no pull request: ask which have this head.
		if numbers, err = pullsFor(ctx, c, owner, name, f); err != nil {
			return err
		}
	}
	limits := policy.Narrow(s.cfg.PolicyLimits(), cfg.PolicyLimits())
	now := s.clock.Now()
	var waitUntil time.Time
	waiting := false
	for _, number := range numbers {
		d, pr, err := s.repairDecision(ctx, c, f, number, cfg, len(checks) > 0, limits, now)
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
			if err := s.startRepair(ctx, f, pr, checks, d, limits.RepairsPerPR, now); err != nil {
				return err
			}
		}
	}
	if waiting {
		after := s.repairRecheck()
		if d := waitUntil.Sub(now); d > after {
			after = d
		}
		return &postponed{after: after, why: "a repair waits for its pull request"}
	}
	return nil
}

// repairRecheck is how often a repair that waits for its pull request's
// active session looks again: the debounce, at least five polls.
func (s *Service) repairRecheck() time.Duration {
	return max(s.cfg.Repair.Debounce, s.cfg.Workers.PollInterval*5)
}

// repairPending says, from the store alone, which of the payload's pull
// requests may still get a repair for this commit, and whether one of them
// has a session active (so the decision waits without asking GitHub).
func (s *Service) repairPending(ctx context.Context, f session.CheckFailure) ([]int, bool, error) {
	var pending []int
	wait := false
	for _, p := range f.PullRequests {
		claimed, err := s.store.Claimed(ctx, repairKey(f.Repo.ID, p.Number, f.HeadSHA))
		if err != nil {
			return nil, false, err
		}
		if claimed || slices.Contains(pending, p.Number) {
			continue // this commit's repair exists: nothing more to do for it
		}
		hist, err := s.store.PullRepairHistory(ctx, f.Repo.ID, p.Number)
		if err != nil {
			return nil, false, err
		}
		if hist.Repairs >= s.cfg.Repair.MaxSessionsPerPR {
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
func (s *Service) repairDecision(ctx context.Context, c *github.Client, f session.CheckFailure, number int, cfg config.Repo, matched bool, limits policy.Limits, now time.Time) (policy.RepairDecision, *github.PullRequest, error) {
	pr, _, err := c.PullRequests.Get(ctx, f.Repo.Owner, f.Repo.Name, number)
	if err != nil {
		return policy.RepairDecision{}, nil, fmt.Errorf("reading pull request #%d: %w", number, err)
	}
	hist, err := s.store.PullRepairHistory(ctx, f.Repo.ID, number)
	if err != nil {
		return policy.RepairDecision{}, nil, err
	}
	own, err := s.store.IsSessionCommit(ctx, f.Repo.ID, f.HeadSHA)
	if err != nil {
		return policy.RepairDecision{}, nil, err
	}
	author := pr.GetUser()
	facts := policy.RepairFacts{
		Enabled: cfg.RepairEnabled(), Matched: matched, PROpen: pr.GetState() == "open" && !pr.GetMerged(),
		Fork:        policy.IsFork(pr.GetHead().GetRepo().GetFullName(), pr.GetBase().GetRepo().GetFullName()),
		AuthorIsBot: policy.IsBotSender(author.GetLogin(), author.GetType()), AuthorRole: policy.RoleNone,
		HeadMoved: pr.GetHead().GetSHA() != f.HeadSHA, Repairs: hist.Repairs, Budget: limits.RepairsPerPR,
		OnOwnCommit: own, ActiveSession: hist.Active, LastRepairEnd: hist.LastEnd, Cooldown: s.cfg.Repair.Cooldown, Now: now,
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
func (s *Service) startRepair(ctx context.Context, f session.CheckFailure, pr *github.PullRequest, checks []gather.FailingCheck, d policy.RepairDecision, budget int, now time.Time) error {
	names := checkNames(checks)
	author := pr.GetUser()
	sess := &store.Session{
		ID: newID(), RepoID: f.Repo.ID, RepoOwner: f.Repo.Owner, RepoName: f.Repo.Name, InstallationID: f.InstallationID,
		Number: pr.GetNumber(), IsPR: true, TriggerKind: session.KindRepair, DeliveryID: f.DeliveryID,
		RequesterLogin: author.GetLogin(), RequesterID: author.GetID(), RequesterType: cmp.Or(author.GetType(), "User"),
		Instructions: render.RepairInstructions(names, gather.MaxRepairChecks), HeadSHA: f.HeadSHA,
		TriggerInfo: store.TriggerInfo{Checks: names, RepairNumber: d.Number, RepairBudget: budget, RepairLast: d.Last}.Encode(),
	}
	// One repair per (PR, commit), and each repair number once: two
	// commits' failures racing past the budget check cannot both take the
	// last repair.
	keys := []string{repairKey(f.Repo.ID, pr.GetNumber(), f.HeadSHA), fmt.Sprintf("repair-n:%d:%d:%d", f.Repo.ID, pr.GetNumber(), d.Number)}
	created, err := s.store.CreateSessionOnce(ctx, keys, sess, []store.NewWork{{Kind: store.PrepareSession}}, now)
	if err != nil {
		return err
	}
	if created {
		zerolog.Ctx(ctx).Info().Str("session_id", sess.ID).Int("number", pr.GetNumber()).Int("repair", d.Number).Msg("repair session queued")
		s.wakeWorkers()
	}
	return nil
}

func repairKey(repoID int64, number int, sha string) string {
	return fmt.Sprintf("repair:%d:%d:%s", repoID, number, sha)
}
