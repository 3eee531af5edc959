package gather

import (
	"context"
	"testing"

	"github.com/inspecthq/inspect/app/buildkitelog"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
)

// A check run's Buildkite job is found through its details URL, a
// status's through its target URL; nothing else is asked of Buildkite.
func TestBuildkiteLogTailFollowsTheCheckKind(t *testing.T) {
	bk := fakebuildkite.New(t)
	b := bk.AddFinishedBuild("acme", "ci", "failed", "--- FAIL: TestX\n")
	g := Gatherer{Buildkite: &buildkitelog.Reader{APIBase: bk.URL(), Org: "acme", Token: bk.Token()}}
	ctx := context.Background()
	link := fakebuildkite.JobWebURL(b)
	for _, tc := range []struct {
		name string
		ch   FailingCheck
		want string
	}{
		{"a status's target", FailingCheck{Name: "s", TargetURL: link}, "--- FAIL: TestX\n"},
		{"a check run's details", FailingCheck{Name: "c", RunID: 9, DetailsURL: link}, "--- FAIL: TestX\n"},
		{"a check run's target is not its link", FailingCheck{Name: "c", RunID: 9, TargetURL: link}, ""},
		{"another host", FailingCheck{Name: "s", TargetURL: "https://ci.example/acme/ci/builds/1#" + b.JobID}, ""},
	} {
		if got := g.buildkiteLogTail(ctx, tc.ch); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if n := len(bk.Requests()); n != 2 {
		t.Errorf("%d requests to Buildkite, want 2", n)
	}
}
