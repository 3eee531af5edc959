package outcomes_test

import (
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/outcomes"
)

var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

func TestWithdrawnIsARequesterOrInspectCloseWithinTenMinutes(t *testing.T) {
	open := outcomes.Fate{State: outcomes.Open, OpenedAt: t0, Dims: outcomes.Dims{Requester: "alice"}}
	for _, c := range []struct {
		name  string
		actor outcomes.Actor
		after time.Duration
		want  bool
	}{
		{"requester at 9m", outcomes.Actor{Login: "alice"}, 9 * time.Minute, true},
		{"requester at 10m", outcomes.Actor{Login: "alice"}, 10 * time.Minute, true},
		{"requester at 11m", outcomes.Actor{Login: "alice"}, 11 * time.Minute, false},
		{"inspect at 1m", outcomes.Actor{Login: "inspect[bot]", Bot: true, Inspect: true}, time.Minute, true},
		{"reviewer at 1m", outcomes.Actor{Login: "bob"}, time.Minute, false},
	} {
		got, changed := outcomes.Apply(open, outcomes.Event{Kind: outcomes.EventClosed, At: t0.Add(c.after), Actor: c.actor})
		if !changed || got.State != outcomes.Closed || got.Withdrawn != c.want {
			t.Errorf("%s: %+v, withdrawn want %v", c.name, got, c.want)
		}
		if k := outcomes.Contribution(got); k.Withdrawn+k.Closed != 1 || k.Opened != 1 {
			t.Errorf("%s: contribution %+v", c.name, k)
		}
	}
}

func TestBotsReviewsAndCommentsAreNotReviewEffort(t *testing.T) {
	f := outcomes.Fate{State: outcomes.Open, OpenedAt: t0}
	for _, a := range []outcomes.Actor{{Login: "dependabot[bot]", Bot: true}, {Login: "inspect[bot]", Inspect: true, Bot: true}} {
		if _, changed := outcomes.Apply(f, outcomes.Event{Kind: outcomes.EventReview, ReviewState: "changes_requested", Actor: a, At: t0}); changed {
			t.Errorf("%s's review counted", a.Login)
		}
		if _, changed := outcomes.Apply(f, outcomes.Event{Kind: outcomes.EventThreadComment, Actor: a, At: t0}); changed {
			t.Errorf("%s's comment counted", a.Login)
		}
	}
	got, _ := outcomes.Apply(f, outcomes.Event{Kind: outcomes.EventReview, ReviewState: "approved", Actor: outcomes.Actor{Login: "bob"}, At: t0.Add(time.Hour)})
	if got.ReviewRounds != 0 || !got.FirstReviewAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("an approval: %+v", got)
	}
}

func TestARevertCountsWithinThirtyDaysOfTheMerge(t *testing.T) {
	merged := outcomes.Fate{State: outcomes.Merged, MergedAt: t0}
	if _, changed := outcomes.Apply(merged, outcomes.Event{Kind: outcomes.EventReverted, At: t0.Add(31 * 24 * time.Hour)}); changed {
		t.Error("a revert after 31 days counted")
	}
	got, changed := outcomes.Apply(merged, outcomes.Event{Kind: outcomes.EventReverted, At: t0.Add(29 * 24 * time.Hour), RevertedBy: "pr:o/r#9"})
	if !changed || outcomes.Contribution(got).Reverted != 1 {
		t.Errorf("a revert after 29 days: %+v", got)
	}
	if _, changed := outcomes.Apply(outcomes.Fate{State: outcomes.Closed}, outcomes.Event{Kind: outcomes.EventReverted, At: t0}); changed {
		t.Error("a closed PR was reverted")
	}
}

func TestRevertsAreFoundByGitHubsAndGitsWords(t *testing.T) {
	if got := outcomes.RevertedPRs("Reverts Acme/App#12\n\nBecause it broke prod.", "acme/app"); len(got) != 1 || got[0] != 12 {
		t.Errorf("revert PR body: %v", got)
	}
	if got := outcomes.RevertedPRs("Reverts other/repo#12", "acme/app"); len(got) != 0 {
		t.Errorf("another repository's PR: %v", got)
	}
	sha := "0123456789abcdef0123456789abcdef01234567"
	if got := outcomes.RevertedCommits("Revert \"fix\"\n\nThis reverts commit " + sha + ".\n"); len(got) != 1 || got[0] != sha {
		t.Errorf("git revert message: %v", got)
	}
	change := []outcomes.FilePatch{{Path: "a.go", Patch: "@@ -1 +1 @@\n-old\n+new"}}
	if !outcomes.IsReverse(change, []outcomes.FilePatch{{Path: "a.go", Patch: "@@ -1 +1 @@\n-new\n+old"}}) {
		t.Error("the reverse patch was not found")
	}
	if outcomes.IsReverse(change, []outcomes.FilePatch{{Path: "a.go", Patch: "@@ -1 +1 @@\n-new\n+newer"}}) {
		t.Error("a further change was taken for a revert")
	}
}

func TestMedianAndBucket(t *testing.T) {
	if m, ok := outcomes.Median(outcomes.Hist{1: 2, 5: 1, 9: 1}); !ok || m != 3 {
		t.Errorf("median of 1,1,5,9 = %v", m)
	}
	if _, ok := outcomes.Median(outcomes.Hist{}); ok {
		t.Error("an empty median")
	}
	for v, want := range map[int64]int64{7: 5, 60: 60, 61: 60, 200: 180, 99999: 43200} {
		if got := outcomes.Bucket(outcomes.MetricMergeMinutes, v); got != want {
			t.Errorf("Bucket(minutes, %d) = %d, want %d", v, got, want)
		}
	}
	if got := outcomes.Bucket(outcomes.MetricRounds, 14); got != 10 {
		t.Errorf("14 rounds count as %d, want 10 (ten or more)", got)
	}
	if w := outcomes.Week(time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)); w != "2026-11-30" {
		t.Errorf("week of a Sunday: %s", w)
	}
}
