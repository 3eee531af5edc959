package gather

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// maxCommitsSince caps the commits listed as pushed since the last session.
const maxCommitsSince = 30

// Continues finds the session whose conversation sess continues (decision
// 0072): the newest earlier session on its pull request (or the one that
// opened it) or its issue that ended with a request behind it and was not
// refused. ok is false when there is none.
func (g Gatherer) Continues(ctx context.Context, sess store.Session) (prev store.Session, ok bool, err error) {
	target := sess.Target()
	if target.IsBranch() {
		return store.Session{}, false, nil // each branch run is its own
	}
	var all []store.Session
	if target.IsPullRequest() {
		all, err = g.Store.SessionsForPull(ctx, sess.RepoID, sess.Number, 100)
	} else {
		all, err = g.Store.SessionsForTarget(ctx, sess.RepoID, sess.Number, 100)
	}
	if err != nil {
		return store.Session{}, false, err
	}
	for _, e := range all {
		if e.ID == sess.ID || e.State() != session.Done || e.Outcome == session.Refused || e.Instructions == "" || !e.CreatedAt.Before(sess.CreatedAt) {
			continue
		}
		if !ok || e.CreatedAt.After(prev.CreatedAt) {
			prev, ok = e, true
		}
	}
	return prev, ok, nil
}

// commitsSince tells the agent which commits others pushed onto the
// branch since prev's commit, up to pinned, the head it now works on
// (decision 0072). Nothing when prev made no commit or the head is it.
func (g Gatherer) commitsSince(ctx context.Context, c *github.Client, sess, prev store.Session, pinned string) ([]contract.ContextItem, error) {
	if prev.CommitSHA == "" || prev.CommitSHA == pinned {
		return nil, nil
	}
	cmp, _, err := c.Repositories.CompareCommits(ctx, sess.RepoOwner, sess.RepoName, prev.CommitSHA, pinned, nil)
	if err != nil {
		// A force-push may have dropped the commit: the agent is told so
		// rather than nothing.
		return []contract.ContextItem{{Kind: contract.ContextEarlierSession, Untrusted: true,
			Text: fmt.Sprintf("Session %s's commit %s is no longer an ancestor of the head you work on (%s): the branch was rewritten since.", prev.ID, short(prev.CommitSHA), short(pinned))}}, nil
	}
	commits := cmp.Commits
	if len(commits) == 0 {
		return nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Commits pushed since session %s's commit %s, up to the head you work on (%s):\n\n", prev.ID, short(prev.CommitSHA), short(pinned))
	if len(commits) > maxCommitsSince {
		fmt.Fprintf(&b, "(the newest %d of %d)\n", maxCommitsSince, len(commits))
		commits = commits[len(commits)-maxCommitsSince:]
	}
	for _, cm := range commits {
		who := cm.GetAuthor().GetLogin()
		if who == "" {
			who = cm.GetCommit().GetAuthor().GetName()
		}
		subject, _, _ := strings.Cut(cm.GetCommit().GetMessage(), "\n")
		fmt.Fprintf(&b, "- %s by %s: %s\n", short(cm.GetSHA()), who, subject)
	}
	return []contract.ContextItem{{Kind: contract.ContextEarlierSession, Text: clip(b.String()), Untrusted: true}}, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
