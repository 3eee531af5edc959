package policy

import "testing"

func TestFailingConclusion(t *testing.T) {
	for _, tc := range []struct {
		conclusion string
		want       bool
	}{
		{"failure", true},
		{"timed_out", true},
		{"startup_failure", true},
		{"success", false},
		{"cancelled", false},
		{"skipped", false},
		{"neutral", false},
		{"stale", false},
		{"action_required", false},
		{"", false},
		{"Failure", false}, // GitHub's values are lowercase; nothing else matches
		{"error", false},   // a status state, not a conclusion
	} {
		if got := FailingConclusion(tc.conclusion); got != tc.want {
			t.Errorf("FailingConclusion(%q) = %v, want %v", tc.conclusion, got, tc.want)
		}
	}
}

func TestFailingState(t *testing.T) {
	for _, tc := range []struct {
		state string
		want  bool
	}{
		{"failure", true},
		{"error", true},
		{"pending", false},
		{"success", false},
		{"", false},
		{"timed_out", false}, // a conclusion, not a state
		{"FAILURE", false},
	} {
		if got := FailingState(tc.state); got != tc.want {
			t.Errorf("FailingState(%q) = %v, want %v", tc.state, got, tc.want)
		}
	}
}

func TestOwnCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		appID    int64
		appSlug  string
		selfID   int64
		selfSlug string
		want     bool
	}{
		{"same id", 42, "other", 42, "inspect", true},
		{"same slug", 7, "inspect", 42, "inspect", true},
		{"slug case ignored", 7, "Inspect", 42, "inspect", true},
		{"both differ", 7, "ci", 42, "inspect", false},
		{"no id of ours matches no id", 0, "ci", 0, "inspect", false},
		{"no slug of ours matches no slug", 7, "", 42, "", false},
		{"an empty slug is not ours", 7, "", 42, "inspect", false},
		{"nothing known of ours", 0, "", 0, "", false},
		{"id alone", 42, "", 42, "", true},
		{"a slug that only starts like ours", 7, "inspect-ci", 42, "inspect", false},
	} {
		if got := OwnCheck(tc.appID, tc.appSlug, tc.selfID, tc.selfSlug); got != tc.want {
			t.Errorf("%s: OwnCheck(%d, %q, %d, %q) = %v, want %v", tc.name, tc.appID, tc.appSlug, tc.selfID, tc.selfSlug, got, tc.want)
		}
	}
}

// The one rule for which failing check counts, over the three signals;
// every site that asks (the three handlers, the worker's listing of check
// runs and of statuses) asks it.
func TestCountsAsFailure(t *testing.T) {
	self := AppIdentity{ID: 42, Slug: "inspect"}
	for _, tc := range []struct {
		name  string
		check CheckFacts
		want  CheckReason // "" when it counts
	}{
		{"another app's failed run", CheckFacts{Source: SourceCheckRun, Result: "failure", AppID: 7, AppSlug: "ci"}, ""},
		{"another app's timed-out suite", CheckFacts{Source: SourceCheckSuite, Result: "timed_out", AppID: 7, AppSlug: "ci"}, ""},
		{"a startup failure", CheckFacts{Source: SourceCheckRun, Result: "startup_failure", AppSlug: "github-actions"}, ""},
		{"our run by id", CheckFacts{Source: SourceCheckRun, Result: "failure", AppID: 42, AppSlug: "renamed"}, CheckOurs},
		{"our suite by slug", CheckFacts{Source: SourceCheckSuite, Result: "failure", AppID: 9, AppSlug: "Inspect"}, CheckOurs},
		{"a passing run", CheckFacts{Source: SourceCheckRun, Result: "success", AppID: 7}, CheckNotFailing},
		{"a cancelled run", CheckFacts{Source: SourceCheckRun, Result: "cancelled", AppID: 7}, CheckNotFailing},
		{"a run with a status's state", CheckFacts{Source: SourceCheckRun, Result: "error", AppID: 7}, CheckNotFailing},
		{"our passing run is ours first", CheckFacts{Source: SourceCheckRun, Result: "success", AppID: 42}, CheckOurs},
		{"a failed status", CheckFacts{Source: SourceCommitStatus, Result: "failure", CreatorLogin: "jenkins", CreatorType: "User"}, ""},
		{"an erroring status", CheckFacts{Source: SourceCommitStatus, Result: "error"}, ""},
		{"a status with a conclusion", CheckFacts{Source: SourceCommitStatus, Result: "timed_out"}, CheckNotFailing},
		{"a pending status", CheckFacts{Source: SourceCommitStatus, Result: "pending"}, CheckNotFailing},
		{"a status our bot posted", CheckFacts{Source: SourceCommitStatus, Result: "failure", CreatorLogin: "Inspect[bot]", CreatorType: "Bot"}, CheckOurs},
		{"a user named like our bot", CheckFacts{Source: SourceCommitStatus, Result: "failure", CreatorLogin: "inspect[bot]", CreatorType: "User"}, ""},
		{"another bot's status", CheckFacts{Source: SourceCommitStatus, Result: "failure", CreatorLogin: "ci[bot]", CreatorType: "Bot"}, ""},
		{"a status's app fields are not read", CheckFacts{Source: SourceCommitStatus, Result: "failure", AppID: 42, AppSlug: "inspect"}, ""},
		{"no source", CheckFacts{Result: "failure", AppID: 7}, CheckUnknownSource},
	} {
		got, why := CountsAsFailure(tc.check, self)
		if got != (tc.want == "") || why != tc.want {
			t.Errorf("%s: CountsAsFailure = %v, %q; want reason %q", tc.name, got, why, tc.want)
		}
	}
	// With no identity of our own (not yet known), nothing is ours.
	if got, _ := CountsAsFailure(CheckFacts{Source: SourceCommitStatus, Result: "failure", CreatorLogin: "[bot]", CreatorType: "Bot"}, AppIdentity{}); !got {
		t.Error("an empty slug made a status ours")
	}
}
