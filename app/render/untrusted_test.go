package render

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// attack is the answer of issue 18's review: it closes, mentions, loads
// an image and injects HTML, if GitHub reads it as Markdown.
const attack = "Fixes #3 @octocat ![x](https://example.com/x.png) <img src=x>"

// breakouts try to leave a fence or a code span: fences of both kinds and
// every length, a lone backtick, a marker, a quote, another repository's
// issue and a URL closing reference, after and before line breaks of each
// kind.
var breakouts = []string{
	attack,
	"```\n" + attack + "\n```",
	"~~~\n" + attack + "\n~~~",
	"`````````\n" + attack + "\n`````````",
	"`" + attack + "` and ``" + attack,
	"\r\n```\r\n" + attack + "\r```\r" + attack,
	"> Closes other/repo#9, resolved: https://github.com/acme/widgets/issues/4\n<!-- inspect:final=x -->\n@acme/reviewers",
	"    ```\n" + attack,
	"| a | b |\n|---|---|\n| `x | " + attack + " |",
}

// TestUntrustedTextCannotAct renders every place where text Inspect did
// not write reaches GitHub, with each breakout in it, and judges the result
// by GitHub's rules (fakegithub.MarkdownEffects): nothing the text says
// closes or references an issue, mentions anyone, loads an image or is
// raw HTML. What Inspect itself says (the issue it fixes, the requester it
// addresses, its own <details>) is allowed; hidden characters are not, and
// the text must still be there to read.
func TestUntrustedTextCannotAct(t *testing.T) {
	for i, evil := range breakouts {
		sess := baseSession() // issue #12, asked by alice
		sess.Instructions = evil
		spec := contract.Spec{PinnedSHA: "9e8d7c6a5f4e3d2c1b0a993f9a7b2e8d4c6a1f0b"}
		sum := policy.ChangeSummary{Added: 1, Files: []policy.FileStat{{Path: evil, Status: policy.FileAdded}}}
		ev := contract.Evidence{
			FinalAnswer: evil,
			Commands: []contract.CommandResult{
				{Phase: contract.PhaseVerify, Argv: []string{"sh", "-c", evil}, ExitCode: 1},
				{Phase: contract.PhaseAgent, ExitCode: 2, OutputTail: evil},
			},
			Tests: &contract.TestSummary{Failed: 1, Failures: []contract.TestFailure{{Name: evil}}},
			Egress: &contract.EgressAudit{RefusedCount: 1, Refused: []contract.EgressRecord{
				{Kind: contract.EgressRegistry, Phase: contract.PhaseSetup, Upstream: evil, Method: evil, Path: evil, Status: 403}}},
			// A snapshot's label names its base: text from a registry.
			Workspace: &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: "sha256:" + strings.Repeat("ab", 32),
				BaseImage: &contract.BaseImage{Name: evil, Digest: "sha256:" + strings.Repeat("cd", 32)}},
		}
		// The comparison with the base names the repository's tests, and
		// its commands (decision 0081).
		ev.Baseline = &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "a-base",
			Verify: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: evil, ExitCode: 1}},
			Counts: contract.BaselineCounts{NewlyFailing: 1, Removed: 1, NotFixed: 1, StillFailing: 1},
			Tests: []contract.TestComparison{
				{Name: evil, Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing},
				{Name: evil + " removed", Base: contract.TestFailed, Fared: contract.TestRemoved},
				{Name: evil + " still", Base: contract.TestFailed, Change: contract.TestFailed, Fared: contract.TestStillFailing},
			},
			Reproduction: &contract.Reproduction{Why: evil}}
		notFixed := ev
		notFixed.Commands = nil // verify passed: the deleted test is the reason, named
		unavailable := ev
		unavailable.Baseline = &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: evil, Reproduction: &contract.Reproduction{Reproduced: true, Tests: []string{evil}}}
		committed := sess
		committed.CommitSHA, committed.Branch, committed.PRNumber = "3f9a7b2e8d4c6a1f0b9e8d7c6a5f4e3d2c1b0a99", "inspect/12-u1hz", 12 // #12 is the reference the test allows
		notReproduced := ev
		notReproduced.Commands, notReproduced.Baseline = nil, &contract.BaselineComparison{Status: contract.BaselineCompared, Reproduction: &contract.Reproduction{Why: evil}}
		done := sess
		done.Outcome, done.Detail = session.NoChange, NoChangeReply(sess, ev)
		done = store.Fixture(session.Done, done)
		_, checkSummary := DoneCheckRun(done, &ev, Extras{Cost: 1.5, Priced: true, SessionURL: "https://inspect.example.com/sessions/" + sess.ID})
		running := sess
		running = store.Fixture(session.Running, running)
		bodies := map[string]string{
			"PR body":               PRBody(sess, spec, false, sum, ev, Extras{}),
			"no change reply":       NoChangeReply(sess, ev),
			"progress comment":      ProgressBody(done, Origin{Label: evil, Checks: []string{evil}}, "/inspect", RunLink{}),
			"review progress":       ProgressBody(sess, Origin{Review: &ReviewSpot{Path: evil, Line: 3}}, "/inspect", RunLink{}),
			"waiting comment":       WaitingBody(sess, "01jpk2aaaaaaaaaaaaaaaaaaaa", "/inspect"),
			"agent failed":          AgentFailedReply(sess, ev),
			"service failed":        ServiceFailedReply(sess, contract.ServiceResult{Name: "pg", Failure: evil, OutputTail: evil}),
			"config error":          ConfigErrorReply(sess, errors.New(evil)),
			"agent unusable":        AgentUnusableReply("alice", errors.New(evil)),
			"API refusal":           RefusalReply("alice", "GitHub", 422, evil),
			"status listing":        StatusListing([]StatusRow{{Session: running, Progress: evil}}),
			"check run summary":     checkSummary,
			"against the base":      BaselineSection(ev.Baseline),
			"base unavailable":      BaselineSection(unavailable.Baseline),
			"PR body, not fixed":    PRBody(sess, spec, false, sum, notFixed, Extras{}),
			"reply, newly failing":  ChangeReply(committed, false, ev),
			"reply, not fixed":      ChangeReply(committed, false, notFixed),
			"reply, not reproduced": ChangeReply(committed, false, notReproduced),
			"label cancel":          UnlabelCancelledReply([]string{"a1"}, "mara", evil),
			"change refused":        ChangeRefusedReply(refusal(evil)),
			// Plain text: GitHub links references in both, a closing
			// keyword in the commit closes once it is on the default
			// branch, and nothing else renders.
			"commit message": CommitMessage(sess),
			"PR title":       PRTitle(sess),
		}
		for name, body := range bodies {
			e := fakegithub.MarkdownEffects(body)
			if name == "commit message" || name == "PR title" {
				e.Images, e.HTML = nil, nil
			}
			for _, c := range e.Closes {
				if c != "#12" {
					t.Errorf("breakout %d, %s: closes %s:\n%s", i, name, c, body)
				}
			}
			for _, r := range e.References {
				if r != "#12" {
					t.Errorf("breakout %d, %s: references %s:\n%s", i, name, r, body)
				}
			}
			for _, m := range e.Mentions {
				if m != "@alice" && m != "@mara" {
					t.Errorf("breakout %d, %s: mentions %s:\n%s", i, name, m, body)
				}
			}
			if len(e.Images) > 0 {
				t.Errorf("breakout %d, %s: loads %q:\n%s", i, name, e.Images, body)
			}
			for _, h := range e.HTML {
				if !slices.Contains([]string{"details", "/details", "summary", "/summary"}, h) {
					t.Errorf("breakout %d, %s: renders HTML %q:\n%s", i, name, h, body)
				}
			}
			// Inspect's own emoji ("⚠️") keep their presentation selector.
			if j := strings.IndexFunc(body, func(r rune) bool { return policy.IsHidden(r) && !policy.IsPresentationSelector(r) }); j >= 0 {
				t.Errorf("breakout %d, %s: a hidden character %U at %d:\n%s", i, name, []rune(body[j:])[0], j, body)
			}
			if strings.Contains(body, "<!-- inspect:") {
				t.Errorf("breakout %d, %s: carries one of Inspect's markers:\n%s", i, name, body)
			}
		}
		// The words are still there to read, where whole text is shown.
		for _, name := range []string{"PR body", "no change reply", "agent failed", "config error", "against the base"} {
			for _, word := range []string{"octocat", "example.com/x.png", "src=x", "Fixes", "3"} {
				if strings.Contains(evil, word) && !strings.Contains(bodies[name], word) {
					t.Errorf("breakout %d, %s: %q is not shown:\n%s", i, name, word, bodies[name])
				}
			}
		}
	}
}

// refusal is policy's decision refusing a change to a protected path,
// beside a file named evil.
func refusal(evil string) policy.ChangeDecision {
	d, _ := policy.ValidateChange([]policy.ChangedFile{
		{Path: ".github/workflows/ci.yml", Mode: policy.ModeFile},
		{Path: ".github/workflows/" + strings.NewReplacer("\r", "", "\n", "").Replace(evil), Mode: policy.ModeFile},
	}, policy.ChangeLimits{})
	return d
}

// The issue's own closing keyword is Inspect's word and still acts, once.
func TestPRBodyClosesItsOwnIssueOnly(t *testing.T) {
	sess := baseSession()
	sess.Instructions = attack
	body := PRBody(sess, contract.Spec{}, true, policy.ChangeSummary{}, contract.Evidence{FinalAnswer: attack}, Extras{})
	e := fakegithub.MarkdownEffects(body)
	if !slices.Equal(e.Closes, []string{"#12"}) || !slices.Equal(e.Mentions, []string{"@alice"}) {
		t.Errorf("closes %q and mentions %q, want #12 and @alice only:\n%s", e.Closes, e.Mentions, body)
	}
	sess.IsPR = true
	if e := fakegithub.MarkdownEffects(PRBody(sess, contract.Spec{}, true, policy.ChangeSummary{}, contract.Evidence{FinalAnswer: attack}, Extras{})); len(e.Closes) != 0 {
		t.Errorf("a PR session's body closes %q", e.Closes)
	}
}
