package policy

import "fmt"

// DestinationFacts is everything DecideDestination decides on. The pull
// request's facts are read fresh when the change is pushed, not when the
// session started.
type DestinationFacts struct {
	IsPR bool // the session is on a pull request; else on an issue or a branch
	// OnBranch: the session was started on a branch from the dashboard,
	// with no issue or pull request behind it. Only IsPR=false goes with it.
	OnBranch bool
	Verified bool // every verify command passed
	// SameRepo: the pull request's head branch is in the session's
	// repository. A fork's (or a deleted fork's) is not.
	SameRepo bool
	// AlreadyPushed: the pull request's head is the session's commit
	// already, so an earlier run pushed it and died before recording that.
	AlreadyPushed bool
	// HeadMoved: the pull request's head is no longer the commit the
	// session pinned, so a push there would not be a fast-forward of what
	// the session saw.
	HeadMoved bool
	// FollowUp: Inspect opened the pull request (its bot is the author and
	// the branch is an inspect/ one), so the branch is Inspect's own.
	FollowUp bool
	// DraftsRefused: GitHub refused a draft pull request in the repository
	// ("Draft pull requests are not supported in this repository.": drafts
	// need a public repository or a Team or Enterprise Cloud plan).
	DraftsRefused bool
}

// DestinationKind is what the report writes for a change.
type DestinationKind int

const (
	// NewPullRequest: a new branch at the commit, and a pull request from
	// it against Destination.Base, a draft when Destination.Draft.
	NewPullRequest DestinationKind = iota
	// OntoPRBranch: fast-forward the pull request's own branch to the
	// commit. When GitHub refuses because it is not a fast-forward (the
	// head moved after it was read), decide again with HeadMoved set.
	OntoPRBranch
	// AlreadyOnPRBranch: nothing to write; the commit is the pull
	// request's head already.
	AlreadyOnPRBranch
)

func (k DestinationKind) String() string {
	switch k {
	case NewPullRequest:
		return "new_pull_request"
	case OntoPRBranch:
		return "onto_pr_branch"
	case AlreadyOnPRBranch:
		return "already_on_pr_branch"
	}
	return fmt.Sprintf("DestinationKind(%d)", int(k))
}

// Base is the branch a new pull request targets.
type Base int

const (
	// BaseDefaultBranch: the base the session's spec names, which for an
	// issue is the repository's default branch.
	BaseDefaultBranch Base = iota
	// BasePRBranch: the pull request's own head branch, so that its author
	// can take the proposal or leave it.
	BasePRBranch
	// BasePRBase: the pull request's base branch, as read when pushing.
	BasePRBase
	// BaseSessionBranch: the branch a branch session was started on (the
	// spec's target branch), never written to itself.
	BaseSessionBranch
)

func (b Base) String() string {
	switch b {
	case BaseDefaultBranch:
		return "default_branch"
	case BasePRBranch:
		return "pr_branch"
	case BasePRBase:
		return "pr_base"
	case BaseSessionBranch:
		return "session_branch"
	}
	return fmt.Sprintf("Base(%d)", int(b))
}

// Destination is DecideDestination's answer. Base and Draft matter only
// for NewPullRequest.
type Destination struct {
	Kind  DestinationKind
	Base  Base
	Draft bool
	// Unverified: a pull request that would have been a draft is a ready
	// one (DraftsRefused) with a change that failed verification, so its
	// title, body and a label must say so, as the draft state would have.
	Unverified bool
}

// DecideDestination says where a validated change goes (decision 0009):
//
//	session                       verification   PR head   goes to
//	issue                         passed         -         new PR against the default branch
//	issue                         failed         -         new draft PR against the default branch
//	branch (from the dashboard)   passed         -         new PR against that branch
//	branch (from the dashboard)   failed         -         new draft PR against that branch
//	same-repo PR                  any            our commit nothing: an earlier run pushed it
//	same-repo PR                  passed         unmoved   fast-forward onto the PR branch
//	same-repo PR                  failed         unmoved   new draft PR against the PR branch
//	same-repo PR                  any            moved     new draft PR against the PR branch
//	PR Inspect opened (follow-up) any            unmoved   fast-forward onto its branch
//	PR Inspect opened (follow-up) any            moved     new draft PR against its branch
//	fork PR                       any            any       new draft PR against the PR's base
//
// Where GitHub refuses drafts (DraftsRefused), a draft is a ready pull
// request instead, marked Unverified when verification failed.
//
// A person's branch only ever receives a verified fast-forward of exactly
// what they had; everything else is a proposal they can take or leave. A
// follow-up's branch is Inspect's own and its pull request is where the
// change is reviewed anyway, so an unverified change goes onto it too. A
// fork's branch is not Inspect's to push to or to target. A branch named
// on the dashboard has no pull request to review a push in, so it is never
// pushed to, even verified: the change is a pull request into it.
func DecideDestination(f DestinationFacts) Destination {
	d := decideDestination(f)
	if d.Kind == NewPullRequest && d.Draft && f.DraftsRefused {
		d.Draft, d.Unverified = false, !f.Verified
	}
	return d
}

// decideDestination is DecideDestination where drafts are allowed.
func decideDestination(f DestinationFacts) Destination {
	switch {
	case !f.IsPR && f.OnBranch:
		return Destination{Kind: NewPullRequest, Base: BaseSessionBranch, Draft: !f.Verified}
	case !f.IsPR:
		return Destination{Kind: NewPullRequest, Base: BaseDefaultBranch, Draft: !f.Verified}
	case !f.SameRepo:
		return Destination{Kind: NewPullRequest, Base: BasePRBase, Draft: true}
	case f.AlreadyPushed:
		return Destination{Kind: AlreadyOnPRBranch}
	case (f.Verified || f.FollowUp) && !f.HeadMoved:
		return Destination{Kind: OntoPRBranch}
	}
	return Destination{Kind: NewPullRequest, Base: BasePRBranch, Draft: true}
}
