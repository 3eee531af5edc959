package policy

import "testing"

// TestDecideDestination has one case per row of decision 0009 (and of
// DecideDestination's table), and then the facts that must not matter.
func TestDecideDestination(t *testing.T) {
	newPR := func(b Base, draft bool) Destination { return Destination{Kind: NewPullRequest, Base: b, Draft: draft} }
	onto := Destination{Kind: OntoPRBranch}
	already := Destination{Kind: AlreadyOnPRBranch}
	cases := []struct {
		name string
		f    DestinationFacts
		want Destination
	}{
		// 0009: issue, passed / failed.
		{"issue, verified", DestinationFacts{Verified: true}, newPR(BaseDefaultBranch, false)},
		{"issue, verification failed", DestinationFacts{}, newPR(BaseDefaultBranch, true)},
		// 0009: branch (from the dashboard), passed / failed: never onto the branch.
		{"branch, verified", DestinationFacts{OnBranch: true, Verified: true}, newPR(BaseSessionBranch, false)},
		{"branch, verification failed", DestinationFacts{OnBranch: true}, newPR(BaseSessionBranch, true)},
		{"branch ignores PR facts", DestinationFacts{OnBranch: true, Verified: true, SameRepo: true, AlreadyPushed: true, FollowUp: true},
			newPR(BaseSessionBranch, false)},
		// 0009: same-repo PR, passed, unmoved.
		{"same-repo PR, verified, unmoved", DestinationFacts{IsPR: true, SameRepo: true, Verified: true}, onto},
		// 0009: same-repo PR, failed, or head moved.
		{"same-repo PR, verification failed", DestinationFacts{IsPR: true, SameRepo: true}, newPR(BasePRBranch, true)},
		{"same-repo PR, verified, head moved", DestinationFacts{IsPR: true, SameRepo: true, Verified: true, HeadMoved: true}, newPR(BasePRBranch, true)},
		{"same-repo PR, failed, head moved", DestinationFacts{IsPR: true, SameRepo: true, HeadMoved: true}, newPR(BasePRBranch, true)},
		// 0009: follow-up on a PR Inspect opened.
		{"follow-up, verified, unmoved", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true, Verified: true}, onto},
		{"follow-up, verification failed, unmoved", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true}, onto},
		{"follow-up, verified, head moved", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true, Verified: true, HeadMoved: true}, newPR(BasePRBranch, true)},
		{"follow-up, failed, head moved", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true, HeadMoved: true}, newPR(BasePRBranch, true)},
		// 0009: fork PR (opted in), any.
		{"fork PR, verified, unmoved", DestinationFacts{IsPR: true, Verified: true}, newPR(BasePRBase, true)},
		{"fork PR, failed", DestinationFacts{IsPR: true}, newPR(BasePRBase, true)},
		{"fork PR, head moved", DestinationFacts{IsPR: true, Verified: true, HeadMoved: true}, newPR(BasePRBase, true)},
		{"fork PR whose head is our commit", DestinationFacts{IsPR: true, Verified: true, AlreadyPushed: true}, newPR(BasePRBase, true)},
		{"fork PR that looks like a follow-up", DestinationFacts{IsPR: true, FollowUp: true}, newPR(BasePRBase, true)},
		// 0009: a PR head equal to our commit means an earlier run pushed it.
		{"already pushed, verified", DestinationFacts{IsPR: true, SameRepo: true, Verified: true, AlreadyPushed: true, HeadMoved: true}, already},
		{"already pushed, failed follow-up", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true, AlreadyPushed: true, HeadMoved: true}, already},
		{"already pushed, failed", DestinationFacts{IsPR: true, SameRepo: true, AlreadyPushed: true, HeadMoved: true}, already},
		// 0009: where GitHub refuses drafts, a ready PR, marked when unverified.
		{"no drafts: issue, verification failed", DestinationFacts{DraftsRefused: true},
			Destination{Kind: NewPullRequest, Base: BaseDefaultBranch, Unverified: true}},
		{"no drafts: issue, verified", DestinationFacts{Verified: true, DraftsRefused: true}, newPR(BaseDefaultBranch, false)},
		{"no drafts: branch, verification failed", DestinationFacts{OnBranch: true, DraftsRefused: true},
			Destination{Kind: NewPullRequest, Base: BaseSessionBranch, Unverified: true}},
		{"no drafts: branch, verified", DestinationFacts{OnBranch: true, Verified: true, DraftsRefused: true}, newPR(BaseSessionBranch, false)},
		{"no drafts: same-repo PR, verification failed", DestinationFacts{IsPR: true, SameRepo: true, DraftsRefused: true},
			Destination{Kind: NewPullRequest, Base: BasePRBranch, Unverified: true}},
		{"no drafts: same-repo PR, verified, head moved", DestinationFacts{IsPR: true, SameRepo: true, Verified: true, HeadMoved: true, DraftsRefused: true},
			newPR(BasePRBranch, false)},
		{"no drafts: fork PR, failed", DestinationFacts{IsPR: true, DraftsRefused: true},
			Destination{Kind: NewPullRequest, Base: BasePRBase, Unverified: true}},
		{"no drafts: fork PR, verified", DestinationFacts{IsPR: true, Verified: true, DraftsRefused: true}, newPR(BasePRBase, false)},
		{"no drafts: onto the PR branch is no draft", DestinationFacts{IsPR: true, SameRepo: true, Verified: true, DraftsRefused: true}, onto},
		{"no drafts: failed follow-up still goes onto its branch", DestinationFacts{IsPR: true, SameRepo: true, FollowUp: true, DraftsRefused: true}, onto},
		// An issue has no PR head: those facts do not matter.
		{"issue ignores PR facts", DestinationFacts{Verified: true, SameRepo: true, AlreadyPushed: true, HeadMoved: true, FollowUp: true}, newPR(BaseDefaultBranch, false)},
	}
	for _, tc := range cases {
		if got := DecideDestination(tc.f); got != tc.want {
			t.Errorf("%s: DecideDestination(%+v) = %+v, want %+v", tc.name, tc.f, got, tc.want)
		}
	}
}

// TestDecideDestinationRefusedFastForward: when GitHub refuses the
// fast-forward, the caller decides again with HeadMoved set, and gets the
// draft against the PR branch, never another push.
func TestDecideDestinationRefusedFastForward(t *testing.T) {
	for _, f := range []DestinationFacts{
		{IsPR: true, SameRepo: true, Verified: true},
		{IsPR: true, SameRepo: true, FollowUp: true},
		{IsPR: true, SameRepo: true, FollowUp: true, Verified: true},
	} {
		if d := DecideDestination(f); d.Kind != OntoPRBranch {
			t.Fatalf("%+v: %+v, want a push onto the PR branch first", f, d)
		}
		f.HeadMoved = true
		if d, want := DecideDestination(f), (Destination{Kind: NewPullRequest, Base: BasePRBranch, Draft: true}); d != want {
			t.Errorf("%+v after a refused fast-forward: %+v, want %+v", f, d, want)
		}
	}
}

// TestDecideDestinationExhaustive checks the rules that hold over every
// fact set: a person's branch only gets a verified fast-forward of what
// they had, a fork's branch is never written or targeted, and every
// proposal on a pull request is a draft, or, where GitHub refuses drafts,
// a ready one marked unverified exactly when verification failed.
func TestDecideDestinationExhaustive(t *testing.T) {
	for bits := 0; bits < 1<<8; bits++ {
		f := DestinationFacts{
			IsPR: bits&1 != 0, Verified: bits&2 != 0, SameRepo: bits&4 != 0,
			AlreadyPushed: bits&8 != 0, HeadMoved: bits&16 != 0, FollowUp: bits&32 != 0,
			DraftsRefused: bits&64 != 0, OnBranch: bits&128 != 0,
		}
		if f.IsPR && f.OnBranch {
			continue // a session is on a pull request or on a branch, never both
		}
		if d := DecideDestination(f); d.Kind != NewPullRequest && d.Unverified {
			t.Errorf("%+v: %+v is marked unverified without a pull request of its own", f, d)
		}
		d := DecideDestination(f)
		switch d.Kind {
		case OntoPRBranch:
			if !f.IsPR || f.OnBranch || !f.SameRepo || f.HeadMoved || f.AlreadyPushed || !(f.Verified || f.FollowUp) {
				t.Errorf("%+v: pushes onto the PR branch", f)
			}
			if d.Draft || d.Unverified || d.Base != BaseDefaultBranch {
				t.Errorf("%+v: %+v carries a base or draft it does not use", f, d)
			}
		case AlreadyOnPRBranch:
			if !f.IsPR || !f.SameRepo || !f.AlreadyPushed {
				t.Errorf("%+v: counted as already pushed", f)
			}
		case NewPullRequest:
			switch {
			case f.OnBranch && d.Base != BaseSessionBranch:
				t.Errorf("%+v: a branch session's PR targets %v", f, d.Base)
			case !f.IsPR && !f.OnBranch && d.Base != BaseDefaultBranch:
				t.Errorf("%+v: an issue's PR targets %v", f, d.Base)
			case d.Draft && f.DraftsRefused:
				t.Errorf("%+v: a draft where GitHub refuses drafts", f)
			case d.Unverified != (f.DraftsRefused && !f.Verified):
				t.Errorf("%+v: unverified=%v", f, d.Unverified)
			case f.IsPR && !d.Draft && !f.DraftsRefused:
				t.Errorf("%+v: a proposal on a pull request that is not a draft", f)
			case f.IsPR && !f.SameRepo && d.Base != BasePRBase:
				t.Errorf("%+v: a fork PR's proposal targets %v", f, d.Base)
			case f.IsPR && f.SameRepo && d.Base != BasePRBranch:
				t.Errorf("%+v: a same-repo PR's proposal targets %v", f, d.Base)
			case !f.IsPR && !f.DraftsRefused && d.Draft == f.Verified:
				t.Errorf("%+v: an issue's PR has draft=%v", f, d.Draft)
			}
		default:
			t.Errorf("%+v: unknown kind %v", f, d.Kind)
		}
	}
}

func TestDestinationStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{NewPullRequest.String(), "new_pull_request"},
		{OntoPRBranch.String(), "onto_pr_branch"},
		{AlreadyOnPRBranch.String(), "already_on_pr_branch"},
		{DestinationKind(9).String(), "DestinationKind(9)"},
		{BaseDefaultBranch.String(), "default_branch"},
		{BasePRBranch.String(), "pr_branch"},
		{BasePRBase.String(), "pr_base"},
		{BaseSessionBranch.String(), "session_branch"},
		{Base(9).String(), "Base(9)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
