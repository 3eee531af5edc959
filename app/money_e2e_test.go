package app_test

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/session"
)

// pricedModel names the scripted model "scripted-1", priced at $1000 a
// million tokens in and out: a request of 600 tokens in and 100 out costs
// $0.70 (decision 0053's ModelCost).
func pricedModel(c *configServer, baseURL string) {
	c.Agents.Providers = map[string]config.Provider{"scripted": {Kind: "openai", BaseURL: baseURL, Key: modelKey}}
	c.Agents.Models = []config.Model{{Name: "scripted-1", Provider: "scripted", Presets: []string{"command", "codex"}, InputPrice: 1000, OutputPrice: 1000}}
}

// The PR body and the check run of a session say what it cost at the
// server's prices, where it ran (the snapshot's short digest, its age,
// its drift, the base image's name and digest, the tools image's digest)
// and link to its page on the dashboard. A PR session whose verification
// failed has both: a draft PR against the PR's branch, and its check run.
func TestPRAndCheckRunSayTheCostWhereItRanAndLinkThePage(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "web-key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, ex := newSessionHarness(t, func(c *configServer) {
		pricedModel(c, "http://127.0.0.1:1/v1") // never reached: the test counts the usage itself
		c.Web.PublicURL, c.Web.KeyPath, c.Web.ClientID, c.Web.ClientSecret = "https://inspect.example.com", keyFile, "Iv1.test", "secret"
	})
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": strings.Replace(agentConfig, "  command: [\"./fix.sh\"]\n", "  command: [\"./fix.sh\"]\n  model: scripted-1\n", 1),
	}, "a priced model")
	withRealPR(t, h)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the flaky test", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	// What the model proxy would have counted: 40,000 in (30,000 of them
	// cache reads, priced at input_price as no cached price is set) and
	// 2,000 out, at $1000 a million: $42.00.
	if _, err := h.st.AddUsage(context.Background(), spec.AttemptID, store.Usage{InputTokens: 40_000, OutputTokens: 2_000, TotalTokens: 42_000, CacheReadTokens: 30_000, Requests: 3}, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev := contract.Evidence{
		Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
		StartedAt: started, EndedAt: started.Add(42 * time.Second), Outcome: contract.OutcomeVerifyFailed,
		Tests: &contract.TestSummary{Passed: 3, Failed: 1, Failures: []contract.TestFailure{{Name: "TestAdd", File: "calc_test.go", Line: 6, Message: "Add(1, 2) != 3"}}},
		Workspace: &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: "sha256:" + strings.Repeat("5e", 32),
			SnapshotCreatedAt: started.Add(-3*time.Hour - 10*time.Minute), DriftCommits: 2,
			BaseImage: &contract.BaseImage{Name: "ghcr.io/acme/toolchain-go", Digest: "sha256:" + strings.Repeat("ba", 32)}},
		ToolsImage: "sha256:" + strings.Repeat("70", 32),
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseAgent, Name: "agent", Argv: spec.Agent.Command, DurationMS: 30000},
			{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: 1, DurationMS: 1200},
		},
	}
	sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev, Manifest: &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: spec.PinnedSHA, Files: []contract.FileChange{fixedCalc}}}, nil, 204)
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.VerificationFailed || sess.PRNumber == 0 || sess.PRNumber == prNumber {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	lines := []string{
		"Cost: $42.00 at this server's model prices.",
		"Restored from snapshot `sha256:5e5e5e5e5e5e`, 3h10m old, 2 commits behind the pinned commit.",
		"Base image `ghcr.io/acme/toolchain-go` at `sha256:" + strings.Repeat("ba", 32) + "`.",
		"Tools image `sha256:" + strings.Repeat("70", 32) + "`.",
		"The session, live and in full: https://inspect.example.com/sessions/" + sess.ID,
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	runs := h.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].Conclusion != "failure" {
		t.Fatalf("check runs = %+v", runs)
	}
	for _, want := range lines {
		if strings.Count(body, want) != 1 {
			t.Errorf("the PR body has %q %d times:\n%s", want, strings.Count(body, want), body)
		}
		if !strings.Contains(runs[0].Summary, want) {
			t.Errorf("the check run's summary lacks %q:\n%s", want, runs[0].Summary)
		}
	}
	// No provenance keys: nothing attested, and nothing said of it.
	if _, err := h.st.GetAttestation(context.Background(), spec.AttemptID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an attestation without provenance keys: %v", err)
	}
	if strings.Contains(strings.ToLower(runs[0].Summary+body), "provenance") {
		t.Errorf("the check run or the PR speaks of provenance without keys:\n%s\n%s", runs[0].Summary, body)
	}
}

// A running session whose repository's day's spend reaches the money
// budget is stopped at its next model request, as the token budget stops
// one, and says so; the next trigger in the repository is refused with a
// reply naming the budget, the spend and when it frees up.
func TestMoneyBudgetStopsTheSessionAndRefusesTheNext(t *testing.T) {
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(modelKey)
	h, lx := newSandboxHarness(t, func(c *configServer) {
		pricedModel(c, model.URL()+"/v1")
		c.Limits.DailyMoneyPerRepo = 1
	})
	for range 5 {
		model.Script(fakemodel.Turn{Message: "more", Usage: fakemodel.Usage{InputTokens: 600, OutputTokens: 100}})
	}
	agent := `for i in 1 2 3 4 5; do
  curl -sS -o /dev/null -w "%{http_code}\n" -H 'Content-Type: application/json' -d '{"model":"scripted-1","input":"again"}' http://127.0.0.1:8931/v1/providers/scripted/responses >> "$INSPECT_ANSWER_FILE"
done
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "a chatty agent")
	admittedAt := h.clock.Now()
	sess := h.runSandboxSession(lx, "/inspect talk a lot")
	// $0.70 after the first request, $1.40 after the second; the third is
	// refused.
	if sess.Outcome != session.Errored || sess.Reason != "money_budget" || !strings.Contains(sess.Detail, "have cost $1.40") ||
		!strings.Contains(sess.Detail, "daily money budget of $1.00") {
		t.Fatalf("session = %s/%s %s: %s\n%s", sess.State(), sess.Outcome, sess.Reason, sess.Detail, h.logs)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the provider got %d requests; the budget (reached by the second) should stop the rest", n)
	}
	h.expectOneReply(issueNumber, "so Inspect stopped this session at its next model request")

	h.clock.Advance(time.Hour)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect and another thing"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	latest := h.sessionOn(issueNumber)
	if latest.Outcome != session.Refused || latest.Reason != "money_budget" {
		t.Fatalf("second session = %s/%s (%s)", latest.Outcome, latest.Reason, latest.Detail)
	}
	frees := admittedAt.Add(24 * time.Hour).UTC().Truncate(time.Minute)
	if !admittedAt.Add(24 * time.Hour).Equal(frees) {
		frees = frees.Add(time.Minute)
	}
	replies := h.commentsWith(issueNumber, "won't start another session yet")
	if len(replies) != 1 {
		t.Fatalf("refusal replies = %d: %+v", len(replies), h.comments(issueNumber))
	}
	for _, want := range []string{"have cost $1.40 at this server's model prices", "daily money budget of $1.00 (`limits.daily_money_per_repo`",
		"falls below the budget at " + frees.Format("2006-01-02 15:04 UTC")} {
		if !strings.Contains(replies[0].Body, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, replies[0].Body)
		}
	}
}
