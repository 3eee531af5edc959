package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/policy"
)

// Branch sessions: a run started on the dashboard on a branch, with no
// issue or pull request behind it (store.TriggerInfo.Branch; Number is 0).
// Decision 0009 says where they answer:
//   - the session's page is the reply: no comment is posted anywhere, no
//     reaction, no label, and nothing queues behind another session, as
//     there is no thread to share (each run opens its own pull request);
//   - the check run is on the branch's head as preparation pinned it;
//   - the change goes to a new pull request into the branch (draft when
//     verification failed), never onto the branch itself, its body saying
//     who asked.

// reasonBranchMissing ends a branch session whose branch was gone when it
// was prepared (deleted after the form was posted).
const reasonBranchMissing = "branch_missing"

// branchFacts reads what policy needs about a branch session: the
// requester's role, read as for a comment, and the branch's head, which
// the session pins. headSHA is "" when the branch no longer exists.
func branchFacts(ctx context.Context, c *github.Client, owner, name, branch, login, senderType string) (target policy.Target, role policy.Role, headSHA string, err error) {
	target = policy.Target{IsBranch: true}
	var r string
	// The branch and the role side by side: neither needs the other.
	err = sideBySide(ctx, func(ctx context.Context) error {
		// go-github escapes each part of the ref for the path.
		ref, _, err := c.Git.GetRef(ctx, owner, name, "heads/"+branch)
		switch {
		case ghwrite.IsStatus(err, http.StatusNotFound):
		case err != nil:
			return fmt.Errorf("reading the branch: %w", err)
		default:
			headSHA = ref.GetObject().GetSHA()
		}
		return nil
	}, senderRole(c, owner, name, login, senderType, &r))
	if err != nil {
		return target, "", "", err
	}
	return target, policy.Role(r), headSHA, nil
}
