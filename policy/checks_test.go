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
