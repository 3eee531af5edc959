package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/contract"
)

// The replies that end a session: each becomes the session's detail, shown
// in its progress comment and its check run's summary, or posted as its one
// final reply when it has no progress comment.

// Limits of the untrusted text a reply shows, in runes: an error message
// (which may quote a repository's file) and the end of a command's output
// (30 lines).
const (
	maxErrorRunes  = 2000
	maxOutputRunes = 8000
)

// ErrorReply is the reply of a session given up after an internal error.
func ErrorReply(sess store.Session) string {
	what := "Nothing was changed."
	if sess.CommitSHA != "" {
		// Giving up after the report began: say what exists, not "nothing".
		what = fmt.Sprintf("Commit `%.7s` was created", sess.CommitSHA)
		if sess.Branch != "" {
			what += fmt.Sprintf(" and pushed to `%s`", sess.Branch)
		}
		what += "; check it before relying on it."
	}
	again := "with a new comment"
	if !sess.Target().HasThread() {
		again = "with the Retry button on this page" // a branch session's page is its one reply
	}
	return fmt.Sprintf("⚠️ Inspect stopped this session because of an internal error, @%s. %s "+
		"Operators can find the details under session `%s`; you can try again %s.",
		sess.RequesterLogin, what, sess.ID, again)
}

// RefusalReply is what the requester is told when an API (service, "GitHub"
// or "Buildkite") refused the session's request for good.
func RefusalReply(login, service string, status int, message string) string {
	return fmt.Sprintf("⚠️ @%s, %s refused a request this session needed (`%d`: %s), so Inspect stopped it; retrying would not help. "+
		"Operators can check the App's permissions and installation.", login, service, status, cell(untrustedSpan(message)))
}

// RefusalDetail is what a refused session posts: the policy's reply, or
// nothing for a repair, which nobody asked for (a repair that cannot run
// is logged, never posted).
func RefusalDetail(repair bool, reply string) string {
	if repair {
		return ""
	}
	return reply
}

// ConfigErrorReply says the repository's configuration does not parse, so
// the session did not start.
func ConfigErrorReply(sess store.Session, err error) string {
	return fmt.Sprintf("⚠️ @%s, Inspect cannot read this repository's configuration, so it did not start:\n\n%s\n\n"+
		"Fix the file on the default branch and comment again. See the configuration reference for the allowed keys.",
		sess.RequesterLogin, untrustedBlock(err.Error(), maxErrorRunes))
}

// NoAgentReply says the repository's configuration names no agent.
func NoAgentReply(login string) string {
	return fmt.Sprintf("⚠️ @%s, this repository's `.github/inspect.yml` names no agent, so Inspect has nothing to run. "+
		"Add `agent: {preset: codex, model: ...}` (or `{preset: command, command: [...]}`) on the default branch and comment again.", login)
}

// AgentUnusableReply says the repository's agent cannot run on this server,
// and why.
func AgentUnusableReply(login string, err error) string {
	return fmt.Sprintf("⚠️ @%s, this repository's agent cannot run on this Inspect server:\n\n%s\n\n"+
		"Fix `agent:` in `.github/inspect.yml` on the default branch and comment again.", login, untrustedBlock(err.Error(), maxErrorRunes))
}

// TimedOutReply says the session ran past its deadline.
func TimedOutReply(login string) string {
	return fmt.Sprintf("⏱️ @%s, the session ran past its deadline and was stopped. Nothing was pushed.", login)
}

// RunCancelledReply is the detail of a session whose supervisor reported
// it cancelled.
func RunCancelledReply() string { return "The session was cancelled. Nothing was pushed." }

// TargetGoneReply says why a session was cancelled when its target went
// away: its pull request was closed, or (repoRemoved) the App can no longer
// reach the repository.
func TargetGoneReply(repoRemoved bool) string {
	if repoRemoved {
		return "Inspect can no longer reach this repository, so it cancelled the session. Nothing was pushed."
	}
	return "The pull request was closed, so Inspect cancelled the session. Nothing was pushed."
}

// BranchMissingReply says a branch session's branch was gone when the
// session was prepared (it existed when the form was posted).
func BranchMissingReply(login string) string {
	return fmt.Sprintf("⚠️ @%s, the branch this session was started on no longer exists, so Inspect did not start it. Nothing was pushed.", login)
}

// TokenBudgetReply says the session used more model tokens than its budget.
func TokenBudgetReply(login string, used, budget int64) string {
	return fmt.Sprintf("⚠️ @%s, the session used %d model tokens, more than its budget of %d, so Inspect stopped it. Nothing was pushed. "+
		"Ask for a smaller change, or an operator can raise `agents.token_budget`.", login, used, budget)
}

// RunnerLostReply says the session's runner stopped without a result.
// logURL is the run's log, when it has a web link; neverReached says the
// runner never reached the app at all.
func RunnerLostReply(login, logURL string, neverReached bool, commandWord string) string {
	where := ""
	if logURL != "" {
		where = fmt.Sprintf(" Its log is at %s.", logURL)
	}
	if neverReached {
		where = " It never reached Inspect (is `inspect` installed on the agent, and can it reach the app's URL?)." + where
	}
	return fmt.Sprintf("⚠️ @%s, the session's runner stopped without reporting a result, so nothing was pushed.%s "+
		"You can try again with `%s retry`.", login, where, commandWord)
}

// ResultRefusedReply says the runner left a result that failed the checks
// an upload gets.
func ResultRefusedReply(login, commandWord string) string {
	return fmt.Sprintf(
		"⚠️ @%s, the session's runner left a result Inspect could not accept, so nothing was pushed. You can try again with `%s retry`.",
		login, commandWord)
}

// HostDiedReply says the replica running the session died with no time or
// second try left to run it again.
func HostDiedReply(login, commandWord string) string {
	return fmt.Sprintf(
		"@%s, the Inspect server running this session stopped, and there was no time (or no second try) left to run it again. Nothing was pushed. Comment `%s retry` to start over.",
		login, commandWord)
}

// AgentFailedReply says the agent did not finish, with the end of its
// output when it exited non-zero.
func AgentFailedReply(sess store.Session, ev contract.Evidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ @%s, the agent did not finish (%s), so nothing was pushed.", sess.RequesterLogin, ev.Outcome)
	for _, c := range ev.Commands {
		if c.Phase == contract.PhaseAgent && !c.Succeeded() {
			fmt.Fprintf(&b, " It exited with code %d.\n\n<details><summary>Last output</summary>\n\n%s\n</details>", c.ExitCode, untrustedBlock(lastLines(c.OutputTail, 30), maxOutputRunes))
		}
	}
	return b.String()
}

// ServiceFailedReply says a repository's service ended the session: it
// exited while the session needed it, or never became ready. It names the
// service and shows why and the end of its output, as untrusted text (the
// service is the repository's code).
func ServiceFailedReply(sess store.Session, svc contract.ServiceResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ @%s, the service %s %s, so Inspect stopped the session. Nothing was pushed.",
		sess.RequesterLogin, untrustedSpan(svc.Name), untrustedSpan(svc.Failure))
	if strings.TrimSpace(svc.OutputTail) != "" {
		fmt.Fprintf(&b, "\n\n<details><summary>Last output of %s</summary>\n\n%s\n</details>", untrustedSpan(svc.Name), untrustedBlock(lastLines(svc.OutputTail, 30), maxOutputRunes))
	}
	b.WriteString("\n\nCheck `services:` in `.github/inspect.yml` on the default branch.")
	return b.String()
}

// NoChangeReply says the agent changed nothing, with its answer (as
// untrusted text) and the model usage.
func NoChangeReply(sess store.Session, ev contract.Evidence) string {
	answer := strings.TrimSpace(ev.FinalAnswer)
	if answer == "" {
		return fmt.Sprintf("@%s, the agent made no change and gave no answer.", sess.RequesterLogin) + usageNote(ev)
	}
	reply := fmt.Sprintf("@%s, the agent made no change. Its answer:\n\n%s", sess.RequesterLogin, untrustedBlock(answer, 4000))
	if note := usageNote(ev); note != "" {
		reply += "\n\n" + strings.TrimSpace(note) // a closing fence ends its line
	}
	return reply
}

// ConfigUnparsableRefusal says the repository's config stopped parsing
// before the change could be checked against its protected paths.
func ConfigUnparsableRefusal(login string) string {
	return fmt.Sprintf(
		"🛑 @%s, this repository's `.github/inspect.yml` no longer parses, so Inspect cannot check the change against its protected paths and pushed nothing. Fix the file and try again.", login)
}

// ChangeReply is the detail of a session that committed a change: where it
// went, whether it was verified (and, when it was not, why, by the
// verdict over its evidence: decision 0081), and the model usage. sess has
// the commit, the branch and the pull request recorded.
func ChangeReply(sess store.Session, verified bool, ev contract.Evidence) string {
	detail := fmt.Sprintf("✅ Verified change committed as `%.7s` on `%s`.", sess.CommitSHA, sess.Branch)
	if !verified {
		// A draft, or where GitHub takes no drafts a ready pull request
		// whose title, body and label say so (decision 0009): the words
		// hold for both.
		where := fmt.Sprintf("the change is in pull request #%d, marked as not verified, for you to look at.", sess.PRNumber)
		if sess.Target().IsPullRequest() && sess.PRNumber == sess.Number {
			where = fmt.Sprintf("the change was pushed to `%s` (commit `%.7s`) for you to look at.", sess.Branch, sess.CommitSHA)
		}
		detail = unverifiedWhy(verdict.Of(ev), ev.Baseline) + "; " + where
	}
	if sess.PRNumber != 0 && verified {
		detail = fmt.Sprintf("✅ Verified change in pull request #%d (commit `%.7s`).", sess.PRNumber, sess.CommitSHA)
	}
	return detail + usageNote(ev)
}

// unverifiedWhy is why a change is not verified, in the reply's first
// words: its verdict's reason, naming the tests it is about (untrusted:
// code spans).
func unverifiedWhy(v verdict.Verdict, b *contract.BaselineComparison) string {
	switch v.Reason {
	case verdict.ReasonNotReproduced:
		why := ""
		if b != nil && b.Reproduction != nil && b.Reproduction.Why != "" {
			why = " (" + untrustedSpan(b.Reproduction.Why) + ")"
		}
		return "⚠️ Verified, but not reproduced: no test the change adds or changes failed on the base" + why
	case verdict.ReasonNotFixed:
		return "❌ Not fixed: the change removed or skipped " + testNames(b, contract.TestComparison.NotFixed) + ", which failed on the base"
	case verdict.ReasonFailsWhereBaseFailed:
		return fmt.Sprintf("❌ Verification failed, but only where the base failed: %d fixed, %d still failing as on the base, none newly failing", b.Counts.Fixed, b.Counts.StillFailing)
	}
	if b != nil && b.Status == contract.BaselineCompared && b.Counts.NewlyFailing > 0 {
		return "❌ Verification failed, newly failing: " + testNames(b, func(c contract.TestComparison) bool { return c.Fared == contract.TestNewlyFailing })
	}
	return "❌ Verification failed"
}

// testNames names the comparison's listed tests that match, three at
// most, as code spans.
func testNames(b *contract.BaselineComparison, match func(contract.TestComparison) bool) string {
	var names []string
	n := 0
	for _, t := range b.Tests {
		if !match(t) {
			continue
		}
		if n++; n <= 3 {
			names = append(names, pathSpan(t.Name))
		}
	}
	if n > 3 {
		names = append(names, fmt.Sprintf("%d more", n-3))
	}
	if len(names) == 0 {
		return "a test"
	}
	return strings.Join(names, ", ")
}

// usageNote is the model usage, for the check run and the progress comment.
func usageNote(ev contract.Evidence) string {
	if u := ev.Usage; u != nil {
		return fmt.Sprintf(" Model usage: %d tokens over %d requests.", u.Total, u.Requests)
	}
	return ""
}

// LimitExceededReply says a command ran into one of its sandbox's limits
// (issue 19), naming the limit and its value; the command's name is the
// repository's, so it is shown as untrusted text.
func LimitExceededReply(sess store.Session, ev contract.Evidence) string {
	what := "a resource limit"
	cmd := "a command"
	if l := ev.Limit; l != nil {
		cmd = "the command " + untrustedSpan(l.Command)
		switch l.Name {
		case contract.LimitMemory:
			what = "its memory limit of " + contract.FormatBytes(l.Value)
		case contract.LimitPids:
			what = fmt.Sprintf("its limit of %d processes and threads", l.Value)
		case contract.LimitWorkspace:
			what = "its workspace disk limit of " + contract.FormatBytes(l.Value)
		case contract.LimitSessionMemory:
			what = "the session's memory limit of " + contract.FormatBytes(l.Value) + " (`executor.limits.session_memory_bytes`, all its commands and services together)"
		case contract.LimitSessionPids:
			what = fmt.Sprintf("the session's limit of %d processes and threads (`executor.limits.session_pids`, all its commands and services together)", l.Value)
		}
	}
	return fmt.Sprintf("⚠️ @%s, %s ran into %s in the sandbox, so Inspect stopped the session. Nothing was pushed. "+
		"Ask for less at once, or an operator can raise `executor.limits` in the server configuration.", sess.RequesterLogin, cmd, what)
}
