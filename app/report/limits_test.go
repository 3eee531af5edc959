package report

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// A run that ran into a sandbox limit ends error with its own reason and a
// reply naming the limit and its value, and writes nothing, even with a
// change in hand.
func TestReportResultEndsALimitExceededRunNamingTheLimit(t *testing.T) {
	sess := store.Fixture(session.Reporting, store.Session{ID: "s-0123456789", RepoOwner: "acme", RepoName: "widgets", Number: 7, IsPR: true, RequesterLogin: "alice"})
	up := contract.ResultUpload{
		Evidence: contract.Evidence{Outcome: contract.OutcomeLimitExceeded, Limit: &contract.LimitHit{Name: contract.LimitMemory, Value: 4 << 30, Command: "agent"}},
		Manifest: &contract.Manifest{Files: []contract.FileChange{{Path: "calc.go", Mode: "100644", Content: []byte("package calc\n")}}},
	}
	f := &fakeReport{sess: sess}
	if err := decide(context.Background(), f, sess, contract.Spec{}, up); err != nil {
		t.Fatalf("decide: %v", err)
	}
	if !slices.Equal(f.calls, []string{"end error"}) {
		t.Fatalf("calls %q, want only the end", f.calls)
	}
	if f.ended.outcome != session.Errored || f.ended.reason != "limit_exceeded" {
		t.Fatalf("ended %+v, want error/limit_exceeded", *f.ended)
	}
	if !strings.Contains(f.ended.reply, "memory limit of 4 GiB") || !strings.Contains(f.ended.reply, "@alice") {
		t.Fatalf("reply %q does not name the limit and its value", f.ended.reply)
	}
}
