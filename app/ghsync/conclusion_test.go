package ghsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/ghsync"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// storeOf answers for one session and its attempt; without the attempt
// (readable false) it cannot read the evidence.
type storeOf struct {
	sess     store.Session
	attempt  store.Attempt
	readable bool
}

func (s storeOf) GetSession(context.Context, string) (store.Session, error) { return s.sess, nil }
func (s storeOf) GetAttempt(context.Context, string) (store.Attempt, error) {
	if !s.readable {
		return store.Attempt{}, errors.New("connection reset")
	}
	return s.attempt, nil
}
func (s storeOf) SessionUsage(context.Context, string) (store.Usage, error) {
	return store.Usage{}, nil
}

// The check run's conclusion is the verdict's over the session's stored
// outcome and reason (decision 0081): a session that failed verification
// only where the base failed concludes neutral, titled so, with the
// comparison in its summary; and a later sync that cannot read the
// evidence concludes it the same.
func TestTheCheckRunConcludesByTheStoredVerdict(t *testing.T) {
	ctx := context.Background()
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	gh.AddInstallation(1, "acme")
	gh.AddRepo(fakegithub.Repo{ID: 101, Owner: "acme", Name: "widgets", InstallationID: 1})
	head := gh.CommitFiles("acme", "widgets", "feature", map[string]string{"a.go": "package a\n"}, "head")
	clients, err := ghclient.NewGitHubClients(gh.APIURL(), gh.AppID(), gh.AppPrivateKeyPEM(), "inspect-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	installation, err := clients.Installation(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	cr, _, err := installation.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: head})
	if err != nil {
		t.Fatal(err)
	}
	result, _ := json.Marshal(contract.ResultUpload{Evidence: contract.Evidence{
		Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", ExitCode: 1}},
		Tests:    &contract.TestSummary{Passed: 9, Failed: 1},
		Baseline: &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "s1-b1",
			Verify: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", ExitCode: 1}},
			Counts: contract.BaselineCounts{Fixed: 1, StillFailing: 1, Passing: 8},
			Tests: []contract.TestComparison{
				{Name: "TestTarget", Base: contract.TestFailed, Change: contract.TestPassed, Fared: contract.TestFixed},
				{Name: "TestOld", Base: contract.TestFailed, Change: contract.TestFailed, Fared: contract.TestStillFailing},
			}},
	}})
	// A branch session: no thread, so the sync writes the check run alone.
	sess := store.Session{ID: "s1", RepoOwner: "acme", RepoName: "widgets", InstallationID: 1, TriggerInfo: `{"branch":"feature"}`,
		HeadSHA: head, CheckRunID: cr.GetID(), AttemptID: "s1-a1", RequesterLogin: "alice"}
	sess.Outcome, sess.Reason, sess.Detail = session.VerificationFailed, "fails_where_base_failed", "❌ Verification failed, but only where the base failed."
	sess = store.Fixture(session.Done, sess)
	for _, readable := range []bool{true, false} {
		h := &ghsync.Handler{
			Store:        storeOf{sess: sess, attempt: store.Attempt{ID: "s1-a1", Spec: "{}", Result: string(result)}, readable: readable},
			Installation: func(ctx context.Context, id int64) (*github.Client, error) { return clients.Installation(ctx, id) },
			Now:          time.Now,
			RunLink:      func(context.Context, store.Session) render.RunLink { return render.RunLink{} },
			SignInHint:   func(context.Context, store.Session) string { return "" },
			CheckRunName: "Inspect",
		}
		if err := h.Handle(ctx, &store.Work{SessionID: "s1"}); err != nil {
			t.Fatalf("sync (evidence readable %t): %v", readable, err)
		}
		runs := gh.CheckRuns("acme", "widgets")
		if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "neutral" {
			t.Fatalf("evidence readable %t: check runs %+v, want one completed neutral", readable, runs)
		}
		if runs[0].Title != "done: verification_failed, fails only where the base failed" {
			t.Errorf("evidence readable %t: title %q", readable, runs[0].Title)
		}
		if got := strings.Contains(runs[0].Summary, "## Against the base"); got != readable {
			t.Errorf("evidence readable %t: the summary shows the comparison: %t\n%s", readable, got, runs[0].Summary)
		}
	}
}
