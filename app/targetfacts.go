package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// targetRead is what targetFacts read of a PR or issue besides policy's
// facts.
type targetRead struct {
	headSHA string   // a pull request's head commit
	labels  []string // an issue's labels, by name, as GitHub has them now
}

// hasLabel reports whether the issue carries the label; GitHub's label
// names ignore case.
func (r targetRead) hasLabel(label string) bool {
	return slices.ContainsFunc(r.labels, func(l string) bool { return strings.EqualFold(l, label) })
}

// targetFacts reads what policy needs about a PR or issue, and the
// sender's role on the repo (none for a bot, whose permission is the
// allowlist's to decide), plus a PR's head commit and an issue's labels.
func targetFacts(ctx context.Context, c *github.Client, owner, name string, tg session.Target, login, senderType string) (policy.Target, policy.Role, targetRead, error) {
	var target policy.Target
	var read targetRead
	var role string
	// The target and the role side by side: neither needs the other.
	err := sideBySide(ctx, func(ctx context.Context) error {
		if tg.IsPullRequest() {
			pr, _, err := c.PullRequests.Get(ctx, owner, name, tg.Number())
			if err != nil {
				return fmt.Errorf("reading the pull request: %w", err)
			}
			read.headSHA = pr.GetHead().GetSHA()
			target = policy.Target{IsPR: true, State: pr.GetState(), Merged: pr.GetMerged(), Locked: pr.GetLocked(),
				HeadRepoFullName: pr.GetHead().GetRepo().GetFullName(), BaseRepoFullName: pr.GetBase().GetRepo().GetFullName()}
			return nil
		}
		issue, _, err := c.Issues.Get(ctx, owner, name, tg.Number())
		if err != nil {
			return fmt.Errorf("reading the issue: %w", err)
		}
		target = policy.Target{State: issue.GetState(), Locked: issue.GetLocked()}
		// The issue carries all its labels (GitHub allows 100); no page
		// of its labels endpoint is needed.
		for _, l := range issue.Labels {
			read.labels = append(read.labels, l.GetName())
		}
		return nil
	}, senderRole(c, owner, name, login, senderType, &role))
	if err != nil {
		return policy.Target{}, "", targetRead{}, err
	}
	return target, policy.Role(role), read, nil
}

// senderRole reads login's role into role, beside another read; nil (no
// read) for a bot, whose role is never asked (policy.IsBotSender).
func senderRole(c *github.Client, owner, name, login, senderType string, role *string) func(context.Context) error {
	if policy.IsBotSender(login, senderType) {
		return nil
	}
	return func(ctx context.Context) error {
		var err error
		*role, err = ghclient.RoleName(ctx, c, owner, name, login)
		return err
	}
}
