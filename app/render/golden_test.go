package render

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// The progress comment and the PR body are what people read most; their
// golden files in testdata/ are also their readable examples. A wording
// change shows there as a diff: run `go test ./app/render -update`, then
// read the diff before committing it.

func TestProgressCommentGolden(t *testing.T) {
	for _, tc := range progressCases() {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.blocker != "" {
				got = WaitingBody(tc.sess, tc.blocker, tc.commandWord)
			} else {
				got = ProgressBody(tc.sess, tc.origin.render(), tc.commandWord, RunLink{URL: tc.run.url, State: tc.run.state, Attempt: tc.run.attempt})
			}
			golden(t, "progress-"+tc.name+".golden", got)
		})
	}
}

func TestPRBodyGolden(t *testing.T) {
	for _, tc := range prBodyCases() {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "prbody-"+tc.name+".golden", PRBody(tc.sess, tc.spec, tc.verified, tc.sum, tc.ev, tc.extras))
		})
	}
}

// TestCheckRunGolden: the check run's summary carries what the PR body's
// Environment and Session sections do: where it ran, the cost and the
// link, after the outcome's detail and the egress summary.
func TestCheckRunGolden(t *testing.T) {
	for _, tc := range prBodyCases() {
		if tc.extras.SessionURL == "" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			sess := tc.sess
			sess.Detail = "The change was verified and pushed."
			_, done := DoneCheckRun(sess, &tc.ev, tc.extras)
			got := done
			if tc.ev.Tests != nil {
				_, failed := FailedTestsCheckRun(tc.ev, tc.extras)
				got += "\n---\n" + failed
			}
			golden(t, "checkrun-"+tc.name+".golden", got)
		})
	}
}

func (o origin) render() Origin {
	out := Origin{Repair: o.repair, Label: o.label, Checks: o.checks,
		RepairNumber: o.repairNumber, RepairBudget: o.repairBudget, RepairLast: o.repairLast, QueuedFor: o.queuedFor}
	if o.reviewPath != "" {
		out.Review = &ReviewSpot{Path: o.reviewPath, Line: o.reviewLine, StartLine: o.reviewStart}
	}
	return out
}

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./app/render -update` to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (if the change is meant, run `go test ./app/render -update` and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
