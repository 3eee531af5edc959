package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// Each reply's exact words: a test fails when the wording changes, so a
// change of wording is a change of this table.
func TestReplies(t *testing.T) {
	sess := baseSession()
	usage := contract.Evidence{Usage: &contract.TokenUsage{Total: 1200, Requests: 3}}

	committed := sess
	committed.CommitSHA, committed.Branch = "3f9a7b2e8d4c6a1f", "inspect/12-u1hz"
	issuePR := committed
	issuePR.PRNumber = 13
	prOwnBranch := committed
	prOwnBranch.IsPR, prOwnBranch.Number, prOwnBranch.PRNumber, prOwnBranch.Branch = true, 12, 12, "fix-parser"

	agentFailed := contract.Evidence{Outcome: contract.OutcomeAgentFailed, Commands: []contract.CommandResult{
		{Phase: contract.PhaseSetup, ExitCode: 2, OutputTail: "setup failed"},
		{Phase: contract.PhaseAgent, ExitCode: 3, OutputTail: strings.Repeat("noise\n", 40) + "last ``` line <!-- x -->\n"},
	}}

	running := sess
	running = store.Fixture(session.Running, running)
	done := sess
	done.Outcome, done.Detail = session.NoChange, "nothing to do"
	done = store.Fixture(session.Done, done)

	cases := []struct {
		name, got, want string
	}{
		{"error before a commit", ErrorReply(sess),
			"⚠️ Inspect stopped this session because of an internal error, @alice. Nothing was changed. Operators can find the details under session `01jpk3v7m2e4w9q8r6t5y3u1hz`; you can try again with a new comment."},
		{"error after a push", ErrorReply(committed),
			"⚠️ Inspect stopped this session because of an internal error, @alice. Commit `3f9a7b2` was created and pushed to `inspect/12-u1hz`; check it before relying on it. Operators can find the details under session `01jpk3v7m2e4w9q8r6t5y3u1hz`; you can try again with a new comment."},
		{"api refusal keeps its message in one cell", RefusalReply("alice", "GitHub", 403, "Resource not\naccessible | by integration"),
			"⚠️ @alice, GitHub refused a request this session needed (`403`: `Resource not accessible \\| by integration`), so Inspect stopped it; retrying would not help. Operators can check the App's permissions and installation."},
		{"refusal of a request", RefusalDetail(false, "no"), "no"},
		{"refusal of a repair says nothing", RefusalDetail(true, "no"), ""},
		{"config error fences the parser's words, in a fence longer than theirs", ConfigErrorReply(sess, errors.New("line 3: ``` <!-- x")),
			"⚠️ @alice, Inspect cannot read this repository's configuration, so it did not start:\n\n````\nline 3: ``` ＜!-- x\n````\n\nFix the file on the default branch and comment again. See the configuration reference for the allowed keys."},
		{"no agent", NoAgentReply("alice"),
			"⚠️ @alice, this repository's `.github/inspect.yml` names no agent, so Inspect has nothing to run. Add `agent: {preset: codex, model: ...}` (or `{preset: command, command: [...]}`) on the default branch and comment again."},
		{"agent unusable", AgentUnusableReply("alice", errors.New("model x is not offered")),
			"⚠️ @alice, this repository's agent cannot run on this Inspect server:\n\n```\nmodel x is not offered\n```\n\nFix `agent:` in `.github/inspect.yml` on the default branch and comment again."},
		{"timed out", TimedOutReply("alice"), "⏱️ @alice, the session ran past its deadline and was stopped. Nothing was pushed."},
		{"run cancelled", RunCancelledReply(), "The session was cancelled. Nothing was pushed."},
		{"pull request closed", TargetGoneReply(false), "The pull request was closed, so Inspect cancelled the session. Nothing was pushed."},
		{"repository gone", TargetGoneReply(true), "Inspect can no longer reach this repository, so it cancelled the session. Nothing was pushed."},
		{"token budget", TokenBudgetReply("alice", 120000, 100000),
			"⚠️ @alice, the session used 120000 model tokens, more than its budget of 100000, so Inspect stopped it. Nothing was pushed. Ask for a smaller change, or an operator can raise `agents.token_budget`."},
		{"runner lost", RunnerLostReply("alice", "", false, "@inspect"),
			"⚠️ @alice, the session's runner stopped without reporting a result, so nothing was pushed. You can try again with `@inspect retry`."},
		{"runner lost before it claimed, with its log", RunnerLostReply("alice", "https://buildkite.com/acme/b/1", true, "@inspect"),
			"⚠️ @alice, the session's runner stopped without reporting a result, so nothing was pushed. It never reached Inspect (is `inspect` installed on the agent, and can it reach the app's URL?). Its log is at https://buildkite.com/acme/b/1. You can try again with `@inspect retry`."},
		{"result refused", ResultRefusedReply("alice", "/inspect"),
			"⚠️ @alice, the session's runner left a result Inspect could not accept, so nothing was pushed. You can try again with `/inspect retry`."},
		{"host died", HostDiedReply("alice", "@inspect"),
			"@alice, the Inspect server running this session stopped, and there was no time (or no second try) left to run it again. Nothing was pushed. Comment `@inspect retry` to start over."},
		{"agent failed shows the agent's last 30 lines, fenced", AgentFailedReply(sess, agentFailed),
			"⚠️ @alice, the agent did not finish (agent_failed), so nothing was pushed. It exited with code 3.\n\n<details><summary>Last output</summary>\n\n````\n" +
				strings.Repeat("noise\n", 29) + "last ``` line ＜!-- x -->\n````\n</details>"},
		{"agent errored without a failing command", AgentFailedReply(sess, contract.Evidence{Outcome: contract.OutcomeError}),
			"⚠️ @alice, the agent did not finish (error), so nothing was pushed."},
		{"a service that never became ready is named, with its last lines fenced", ServiceFailedReply(sess, contract.ServiceResult{
			Name: "postgres", Failure: "was not ready within 2s: context deadline exceeded", OutputTail: "FATAL: ``` #12 @bob\n"}),
			"⚠️ @alice, the service `postgres` `was not ready within 2s: context deadline exceeded`, so Inspect stopped the session. Nothing was pushed." +
				"\n\n<details><summary>Last output of `postgres`</summary>\n\n````\nFATAL: ``` ＃12 ＠bob\n````\n</details>\n\nCheck `services:` in `.github/inspect.yml` on the default branch."},
		{"no change, no answer", NoChangeReply(sess, contract.Evidence{FinalAnswer: "  \n"}), "@alice, the agent made no change and gave no answer."},
		{"no change fences the answer, with usage after it", NoChangeReply(sess, contract.Evidence{FinalAnswer: "Ask @bob.\n", Usage: usage.Usage}),
			"@alice, the agent made no change. Its answer:\n\n```\nAsk ＠bob.\n```\n\nModel usage: 1200 tokens over 3 requests."},
		{"config stopped parsing", ConfigUnparsableRefusal("alice"),
			"🛑 @alice, this repository's `.github/inspect.yml` no longer parses, so Inspect cannot check the change against its protected paths and pushed nothing. Fix the file and try again."},
		{"change refused", ChangeRefusedReply(policy.ChangeDecision{Reason: policy.ReasonTooManyFiles, Measured: 3, Limit: 2}),
			"🛑 Inspect didn't push this change, because it touches 3 files, and the limit is 2. Ask for a smaller change (one part at a time, for example), or make this one yourself."},
		{"verified on a branch", ChangeReply(committed, true, contract.Evidence{}), "✅ Verified change committed as `3f9a7b2` on `inspect/12-u1hz`."},
		{"verified in a pull request, with usage", ChangeReply(issuePR, true, usage),
			"✅ Verified change in pull request #13 (commit `3f9a7b2`). Model usage: 1200 tokens over 3 requests."},
		{"unverified in a draft", ChangeReply(issuePR, false, contract.Evidence{}),
			"❌ Verification failed; the change is in pull request #13, marked as not verified, for you to look at."},
		{"unverified on the PR's own branch", ChangeReply(prOwnBranch, false, contract.Evidence{}),
			"❌ Verification failed; the change was pushed to `fix-parser` (commit `3f9a7b2`) for you to look at."},

		{"no sessions", NoSessionsReply("@inspect"), "No Inspect sessions on this thread yet. Start one with `@inspect <instructions>`."},
		{"status listing", StatusListing([]StatusRow{{Session: running, Progress: "verify | go test"}, {Session: done}}),
			"**Inspect sessions on this thread** (newest first)\n\n| Session | Requested by | Status | Started |\n|---|---|---|---|\n" +
				"| `01jpk3v7m2e4w9q8r6t5y3u1hz` | alice | running: `verify \\| go test` | 2025-03-14 09:26 UTC |\n" +
				"| `01jpk3v7m2e4w9q8r6t5y3u1hz` | alice | done: no_change | 2025-03-14 09:26 UTC |\n"},
		{"nothing to cancel", NothingToCancelReply(), "Nothing to cancel: no Inspect session is active on this thread."},
		{"cancelled", CancelledReply([]string{"a1", "b2"}, "alice"), "Cancelled `a1`, `b2`, as @alice asked."},
		{"cancelled by a removed label", UnlabelCancelledReply([]string{"a1"}, "alice", "inspect"), "Cancelled `a1`: @alice removed the `inspect` label."},
		{"retry while active", StillActiveReply(running, "@inspect"),
			"Session `01jpk3v7m2e4w9q8r6t5y3u1hz` is still running. Use `@inspect cancel` first if you want to start over."},
		{"nothing to retry", NothingToRetryReply("@inspect"), "Nothing to retry on this thread. Start a session with `@inspect <instructions>`."},

		{"label instructions", LabelInstructions(12, " Parser\u200b panics\non empty input "), "Resolve issue #12: Parser panics on empty input"},
		{"label instructions without a title", LabelInstructions(12, "\u200b \n"), "Resolve issue #12."},
		{"repair instructions", RepairInstructions([]string{"ci / test", "lint`x"}, 15),
			"Make the failing checks pass: `ci / test`, `lintx`. Their output is in the context below."},
		{"repair instructions past the cap", RepairInstructions([]string{"a", "b", "c", "d"}, 2),
			"Make the failing checks pass: `a`, `b`, and 2 more. Their output is in the context below."},
		{"commit message", CommitMessage(sess),
			"Inspect: Fix the flaky `TestParse` in parser/parse_test.go.\n\nRequested by @alice in #12.\n\nCo-authored-by: alice <1001+alice@users.noreply.github.com>\nInspect-Session: 01jpk3v7m2e4w9q8r6t5y3u1hz\n"},
		{"pr title is the subject, cut at 60", PRTitle(store.Session{Instructions: strings.Repeat("é", 70) + "\nmore"}), "Inspect: " + strings.Repeat("é", 60) + "…"},
		{"run annotation", RunAnnotation(done), "**Inspect** session `01jpk3v7m2e4w9q8r6t5y3u1hz` for @alice: **no_change**\n\nnothing to do"},
		{"ignored commands, one", WithIgnoredNote("ok", 1, "@inspect"), "ok\n\n_Only the first `@inspect` command in a comment is used; 1 more command was ignored._"},
		{"ignored commands, none", WithIgnoredNote("ok", 0, "@inspect"), "ok"},
		{"one line", LineRange(0, 12), "line 12"},
		{"a range", LineRange(10, 12), "lines 10–12"},
		{"a range of one", LineRange(12, 12), "line 12"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestMarkers(t *testing.T) {
	user := session.Sender{Login: "alice"}
	cases := []struct {
		name, got, want string
	}{
		{"progress comment", SessionMarker("s1"), "<!-- inspect:session=s1 -->"},
		{"final reply", FinalMarker("s1"), "<!-- inspect:final=s1 -->"},
		{"reply to a comment", ReplyMarker(session.Trigger{Kind: session.KindComment, CommentID: 77, DeliveryID: "d1"}), "<!-- inspect:reply-to=77 -->"},
		{"reply to a review comment", ReplyMarker(session.Trigger{Kind: session.KindReviewComment, CommentID: 78}), "<!-- inspect:reply-to-review=78 -->"},
		{"reply to a label", ReplyMarker(session.Trigger{Kind: session.KindLabel, DeliveryID: "d1"}), "<!-- inspect:reply-to-delivery=d1 -->"},
		{"cancelled by a comment", CancelDetail(session.Trigger{Kind: session.KindComment, CommentID: 77, DeliveryID: "d1", Sender: user}), "Cancelled by @alice.<!-- inspect:cancel=77 -->"},
		{"cancelled by a button", CancelDetail(session.Trigger{Kind: session.KindCheckAction, CommentID: 77, DeliveryID: "d1", Sender: user}), "Cancelled by @alice.<!-- inspect:cancel=d1 -->"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestCheckRun(t *testing.T) {
	sess := baseSession()
	// Each outcome's conclusion is app/verdict's (TestConclusionOfEveryOutcome).
	pair := func(a, b string) string { return a + " / " + b }
	done := sess
	done.Outcome, done.Detail = session.Changed, "✅ done"
	done = store.Fixture(session.Done, done)
	cases := []struct {
		name, got, want string
	}{
		{"queued", pair(QueuedCheckRun(sess)), "Queued / Requested by @alice. Session `01jpk3v7m2e4w9q8r6t5y3u1hz`."},
		{"running", pair(RunningCheckRun(sess)), "Running / Session `01jpk3v7m2e4w9q8r6t5y3u1hz` is running."},
		{"done", pair(DoneCheckRun(done, nil, Extras{})), "done: changed / ✅ done"},
		{"failed tests", pair(FailedTestsCheckRun(contract.Evidence{Tests: &contract.TestSummary{Passed: 5, Failed: 2, Skipped: 1}}, Extras{})), "Verification failed / 2 failed, 5 passed, 1 skipped."},
		{"annotation", pair(FailureAnnotation(contract.TestFailure{Name: "TestX", Message: "want 1"})), "TestX / want 1"},
		{"annotation without a message", pair(FailureAnnotation(contract.TestFailure{Name: "TestX"})), "TestX / failed"},
		{"retry button", pair(RetryButton().Label, RetryButton().Description), "Retry / Run this request again"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
