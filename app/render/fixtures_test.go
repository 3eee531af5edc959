package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// The golden cases' inputs. Fixed times and ids keep the output stable.

var (
	t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	t1 = t0.Add(4*time.Minute + 31*time.Second)
)

func baseSession() store.Session {
	return store.Session{
		ID: "01jpk3v7m2e4w9q8r6t5y3u1hz", RepoID: 42, RepoOwner: "acme", RepoName: "widgets", InstallationID: 7,
		Number: 12, TriggerKind: session.KindComment, CommentID: 9001, RequesterLogin: "alice", RequesterID: 1001, RequesterType: "User",
		Instructions: "Fix the flaky `TestParse` in parser/parse_test.go.\n\nIt fails about one run in ten; ask @bob if unsure. <!-- inspect:final=x -->",
		CreatedAt:    t0,
	}
}

// origin is how a golden session came in, in plain fields.
type origin struct {
	repair       bool
	label        string
	reviewPath   string
	reviewLine   int
	reviewStart  int
	checks       []string
	repairNumber int
	repairBudget int
	repairLast   bool
	queuedFor    string
}

// runLink is where a golden session runs: a build's URL, state and attempt.
type runLink struct {
	url, state string
	attempt    int
}

type progressCase struct {
	name        string
	sess        store.Session
	origin      origin
	run         runLink
	blocker     string // non-empty: the waiting body instead
	commandWord string
}

func progressCases() []progressCase {
	preparing := baseSession()
	preparing = store.Fixture(session.Preparing, preparing)

	running := baseSession()
	running.RetryOf = "01jpk2aaaaaaaaaaaaaaaaaaaa"
	running = store.Fixture(session.Running, running)

	queued := baseSession()
	queued.WaitingSince = t0
	queued = store.Fixture(session.Queued, queued)

	admitted := baseSession()
	admitted.WaitingSince, admitted.AdmittedAt = t0, t1
	admitted = store.Fixture(session.Running, admitted)

	changed := baseSession()
	changed.Outcome = session.Changed
	changed = store.Fixture(session.Done, changed)
	changed.Detail = "✅ Verified change in pull request #13 (commit `3f9a7b2`). Model usage: 48210 tokens over 17 requests."

	noChange := baseSession()
	noChange.Outcome = session.NoChange
	noChange = store.Fixture(session.Done, noChange)
	noChange.Detail = "@alice, the agent made no change. Its answer:\n\n> The test is not flaky here;\n> | it | passes |"

	cancelled := baseSession()
	cancelled.Outcome = session.Cancelled
	cancelled = store.Fixture(session.Done, cancelled)

	label := baseSession()
	label.TriggerKind, label.CommentID, label.Outcome = "label", 0, session.Errored
	label = store.Fixture(session.Done, label)
	label.Instructions = "Resolve issue #12: Parser panics on empty input"
	label.Detail = "⏱️ @alice, the session ran past its deadline and was stopped. Nothing was pushed."

	review := baseSession()
	review.TriggerKind, review.CommentID, review.IsPR = "review_comment", 0, true
	review = store.Fixture(session.Dispatched, review)

	repair := baseSession()
	repair.TriggerKind, repair.CommentID, repair.IsPR = "repair", 0, true
	repair = store.Fixture(session.Preparing, repair)
	repair.Instructions = "Make the failing checks pass: `ci / test`, `lint`. Their output is in the context below."

	notes := baseSession()
	notes.Truncated, notes.IgnoredCommands = true, 2
	notes = store.Fixture(session.Preparing, notes)

	waiting := baseSession()
	waiting = store.Fixture(session.Queued, waiting)

	return []progressCase{
		{name: "preparing", sess: preparing, commandWord: "@inspect"},
		{name: "running-on-a-build-retry", sess: running, run: runLink{"https://buildkite.com/acme/inspect/builds/77", "running", 2}, commandWord: "@inspect"},
		{name: "queued-for-capacity", sess: queued, origin: origin{queuedFor: "Queued: 2nd in line for this repository's 1 concurrent session."}, commandWord: "@inspect"},
		{name: "started-after-waiting", sess: admitted, run: runLink{"https://buildkite.com/acme/inspect/builds/78", "", 1}, commandWord: "@inspect"},
		{name: "done-changed", sess: changed, commandWord: "@inspect"},
		{name: "done-no-change", sess: noChange, commandWord: "/inspect"},
		{name: "done-cancelled-without-detail", sess: cancelled, commandWord: "@inspect"},
		{name: "label-done-timed-out", sess: label, origin: origin{label: "inspect|fix"}, commandWord: "@inspect"},
		{name: "review-comment", sess: review, origin: origin{reviewPath: "parser/parse.go", reviewLine: 40, reviewStart: 31}, commandWord: "@inspect"},
		{name: "repair-last", sess: repair, origin: origin{repair: true, checks: []string{"ci / test", "lint"}, repairNumber: 3, repairBudget: 3, repairLast: true}, commandWord: "@inspect"},
		{name: "truncated-and-ignored", sess: notes, commandWord: "@inspect"},
		{name: "waiting-for-another-session", sess: waiting, blocker: "01jpk2bbbbbbbbbbbbbbbbbbbb", commandWord: "@inspect"},
	}
}

type prBodyCase struct {
	name     string
	sess     store.Session
	spec     contract.Spec
	verified bool
	sum      policy.ChangeSummary
	ev       contract.Evidence
	extras   Extras
}

func prBodyCases() []prBodyCase {
	issue := baseSession()
	issue.CommitSHA = "3f9a7b2e8d4c6a1f0b9e8d7c6a5f4e3d2c1b0a99"
	pr := issue
	pr.IsPR = true

	spec := contract.Spec{AttemptID: "01jpk3v7m2e4w9q8r6t5y3u1hz-1", PinnedSHA: "9e8d7c6a5f4e3d2c1b0a993f9a7b2e8d4c6a1f0b",
		Agent: contract.Agent{Preset: contract.PresetCodex, Model: "gpt-5-codex"}}
	noModel := spec
	noModel.Agent = contract.Agent{Preset: contract.PresetCommand}

	sum := policy.ChangeSummary{Modified: 1, Added: 1, LinesAdded: 30, LinesRemoved: 4, Files: []policy.FileStat{
		{Path: "parser/parse.go", Status: policy.FileModified, LinesAdded: 9, LinesRemoved: 3},
		{Path: "parser/parse_test.go", Status: policy.FileAdded, LinesAdded: 21, Test: true},
	}, TestFiles: []string{"parser/parse_test.go"}}
	exact := []contract.ChangedFile{{Path: "parser/parse.go", Additions: 8, Deletions: 2}, {Path: "parser/parse_test.go", Additions: 21}}

	passed := contract.Evidence{
		StartedAt: t0, EndedAt: t1, Changes: exact,
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseSetup, Argv: []string{"go", "mod", "download"}, DurationMS: 5120},
			{Phase: contract.PhaseAgent, Argv: []string{"codex", "exec"}, DurationMS: 200000},
			{Phase: contract.PhaseVerify, Argv: []string{"go", "test", "./..."}, DurationMS: 13456},
			{Phase: contract.PhaseVerify, Argv: []string{"sh", "-c", "go vet ./... | tee `vet.log`"}, DurationMS: 2001},
		},
		Tests:       &contract.TestSummary{Passed: 212, Skipped: 3},
		Usage:       &contract.TokenUsage{Input: 40110, Output: 8100, Total: 48210, Requests: 17},
		FinalAnswer: "The test raced on a shared map; it now uses a fresh parser per case.\nSee @bob's note.",
	}

	var failures []contract.TestFailure
	for i := range 23 {
		failures = append(failures, contract.TestFailure{Name: "TestParse/case_" + strings.Repeat("x", i%3+1) + "_" + string(rune('a'+i))})
	}
	failed := contract.Evidence{
		StartedAt: t0, EndedAt: t0.Add(9 * time.Minute),
		Commands: []contract.CommandResult{
			{Phase: contract.PhaseAgent, Argv: []string{"./agent.sh"}, DurationMS: 60000},
			{Phase: contract.PhaseVerify, Argv: []string{"go", "test", "./..."}, ExitCode: 1, DurationMS: 41000},
			{Phase: contract.PhaseVerify, Argv: []string{"make", "e2e"}, ExitCode: -1, TimedOut: true, DurationMS: 300000},
		},
		Tests: &contract.TestSummary{Passed: 10, Failed: 23, Failures: failures},
	}

	unverifiedNoUsage := failed
	unverifiedNoUsage.Tests = &contract.TestSummary{Passed: 10, Failed: 2, Failures: failures[:2]}

	usageNoModel := contract.Evidence{StartedAt: t0, EndedAt: t1, Usage: &contract.TokenUsage{Input: 900, Output: 100, Total: 1000, Requests: 2}}

	small := policy.ChangeSummary{Deleted: 1, LinesRemoved: 7, Files: []policy.FileStat{{Path: "docs/old notes.md", Status: policy.FileDeleted, LinesRemoved: 7}}}

	// A session that fetched its modules through the registry egress, and
	// one whose sandbox was refused: a publish, a host, an audit call,
	// and a path that tries to write Markdown.
	withRegistry := passed
	withRegistry.Egress = &contract.EgressAudit{
		Model:    contract.EgressCount{Requests: 17, Bytes: 912_000},
		Registry: contract.EgressCount{Requests: 142, Bytes: 38_204_511},
		Records: []contract.EgressRecord{
			{Kind: contract.EgressRegistry, Phase: contract.PhaseSetup, Upstream: "gomods", Method: "GET", Path: "golang.org/x/mod/@v/list", Status: 200, Bytes: 16, Millis: 31},
		},
	}
	var refused []contract.EgressRecord
	for i := range 11 {
		refused = append(refused, contract.EgressRecord{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "npmjs", Method: "GET", Path: fmt.Sprintf("-/v1/search?text=%d", i), Status: 403})
	}
	withRefusals := failed
	withRefusals.Egress = &contract.EgressAudit{
		Registry:     contract.EgressCount{Requests: 3, Bytes: 2048},
		RefusedCount: 15,
		Refused: append([]contract.EgressRecord{
			{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "npmjs", Method: "PUT", Path: "left-pad", Status: 403},
			{Kind: contract.EgressRefused, Phase: contract.PhaseAgent, Method: "CONNECT", Path: "registry.npmjs.org:443", Status: 403},
			{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "npmjs", Method: "POST", Path: "-/npm/v1/security/advisories/bulk", Status: 403, Quiet: true},
			{Kind: contract.EgressRefused, Phase: contract.PhaseVerify, Upstream: "gomods", Method: "GET", Path: "x`|**@octocat** <!-- inspect:final=z -->\n[y](https://evil.example)", Status: 403},
		}, refused...),
	}

	// Where it ran: a snapshot 2 h 5 min old, 3 commits behind, on a named
	// base, with the agents' tools image; its cost and its page.
	restored := passed
	restored.Usage = &contract.TokenUsage{Input: 40110, Output: 8100, Total: 48210, Requests: 17, CacheRead: 30000}
	restored.Workspace = &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: "sha256:" + strings.Repeat("5e", 32),
		SnapshotCreatedAt: t0.Add(-2*time.Hour - 5*time.Minute), DriftCommits: 3,
		BaseImage: &contract.BaseImage{Name: "ghcr.io/acme/toolchain-go", Digest: "sha256:" + strings.Repeat("ba", 32)}}
	restored.ToolsImage = "sha256:" + strings.Repeat("70", 32)
	priced := Extras{Cost: 0.0731, Priced: true, SessionURL: "https://inspect.example.com/sessions/01jpk3v7m2e4w9q8r6t5y3u1hz"}
	// Cloned cold (no snapshot yet), a costly session, still linked.
	cold := unverifiedNoUsage
	cold.Usage = &contract.TokenUsage{Input: 1_800_000, Output: 90_000, Total: 1_890_000, Requests: 240}
	cold.Workspace = &contract.Workspace{Source: contract.WorkspaceClone}
	costly := Extras{Cost: 12.345, Priced: true, SessionURL: priced.SessionURL}

	// A continuation whose agent could not resume its conversation: the
	// kept state was too old (decision 0072).
	fresh := passed
	fresh.AgentState = &contract.AgentStateNote{Fresh: "the conversation state is 31 days old, past the 30 days it is kept"}

	return []prBodyCase{
		{name: "continuation-agent-started-fresh", sess: issue, spec: spec, verified: true, sum: sum, ev: fresh},
		{name: "issue-verified-with-cost-environment-and-link", sess: issue, spec: spec, verified: true, sum: sum, ev: restored, extras: priced},
		{name: "pr-unverified-cloned-cold-with-cost-and-link", sess: pr, spec: spec, verified: false, sum: sum, ev: cold, extras: costly},
		{name: "issue-verified-with-usage", sess: issue, spec: spec, verified: true, sum: sum, ev: passed},
		{name: "issue-verified-with-registry-egress", sess: issue, spec: spec, verified: true, sum: sum, ev: withRegistry},
		{name: "pr-unverified-with-egress-refusals", sess: pr, spec: noModel, verified: false, sum: sum, ev: withRefusals},
		{name: "pr-unverified-draft", sess: pr, spec: noModel, verified: false, sum: sum, ev: failed},
		{name: "pr-unverified-with-model-without-usage", sess: pr, spec: spec, verified: false, sum: sum, ev: unverifiedNoUsage},
		{name: "usage-without-a-model-nothing-verified", sess: issue, spec: noModel, verified: true, sum: small, ev: usageNoModel},
	}
}
