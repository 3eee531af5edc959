package baselines

import (
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// The key changes with each of its parts, and only with them.
func TestCacheDigestIsTheSnapshotTheBaseAndTheVerifyCommands(t *testing.T) {
	verify := []contract.Command{{Name: "unit tests", Argv: []string{"go", "test", "./..."}, Timeout: contract.Duration(time.Minute)}}
	const sha = "0123456789abcdef0123456789abcdef01234567"
	key := CacheDigest("", sha, verify)
	if key != CacheDigest("", sha, []contract.Command{verify[0]}) {
		t.Error("the same parts made another key")
	}
	other := []contract.Command{{Name: "unit tests", Argv: []string{"go", "test", "-race", "./..."}, Timeout: contract.Duration(time.Minute)}}
	for name, k := range map[string]string{
		"a snapshot":       CacheDigest("sha256:aa", sha, verify),
		"another base":     CacheDigest("", "89abcdef0123456789abcdef0123456789abcdef", verify),
		"another verify":   CacheDigest("", sha, other),
		"no verify":        CacheDigest("", sha, nil),
		"the parts joined": CacheDigest(sha, "", verify),
	} {
		if k == key {
			t.Errorf("%s made the same key", name)
		}
	}
	if len(key) != len("sha256:")+64 || key[:7] != "sha256:" {
		t.Errorf("key %q", key)
	}
}

// A comparison is made only of a finished base with named tests; else it
// says why not.
func TestCompareSaysWhyItCannot(t *testing.T) {
	change := contract.Evidence{Tests: &contract.TestSummary{Results: []contract.TestResult{{Name: "TestAdd", Outcome: contract.TestPassed}}}}
	failed := store.Baseline{CacheDigest: "sha256:k", AttemptID: "b1", ForAttempt: "a1", State: store.BaselineFailed, Why: "the base's verify ended timed_out"}
	if c := Compare(failed, "a1", change); c.Status != contract.BaselineUnavailable || c.Why != failed.Why || c.Reused || c.AttemptID != "b1" {
		t.Errorf("failed: %+v", c)
	}
	totals := store.Baseline{AttemptID: "b1", ForAttempt: "a1", State: store.BaselineDone, Result: `{"outcome":"ok","tests":{"passed":3}}`}
	if c := Compare(totals, "a2", contract.Evidence{Tests: &contract.TestSummary{Passed: 3}}); c.Status != contract.BaselineUnavailable || c.Why != whyNoTests || !c.Reused {
		t.Errorf("totals only: %+v", c)
	}
	done := store.Baseline{AttemptID: "b1", ForAttempt: "a1", BaseSHA: "abc", State: store.BaselineDone,
		Result: `{"outcome":"verify_failed","commands":[{"phase":"setup","name":"s"},{"phase":"verify","name":"v","exit_code":1}],"tests":{"failed":1,"results":[{"name":"TestAdd","outcome":"failed"}]}}`}
	c := Compare(done, "a1", change)
	if c.Status != contract.BaselineCompared || c.Counts.Fixed != 1 || len(c.Verify) != 1 || c.Verify[0].Name != "v" || c.BaseSHA != "abc" {
		t.Errorf("done: %+v", c)
	}
}
