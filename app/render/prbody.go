package render

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// PRBody is the evidence a reviewer reads: the request, what changed, how
// it was verified, where it ran and the session. Everything taken from the
// agent or the repo's output is untrusted and shown only inside code
// (markdown.go), so none of it acts: the only issue the body closes is the
// session's own (Inspect's "Fixes #N"), the only person it mentions the
// requester. x adds what only the app knows: the cost and the session's
// page.
func PRBody(sess store.Session, spec contract.Spec, verified bool, sum policy.ChangeSummary, ev contract.Evidence, x Extras) string {
	var b strings.Builder
	if target := sess.Target(); target.IsBranch() {
		// No thread behind it: the body is where the request is told, and
		// there is no issue to close. The branch name is untrusted text.
		fmt.Fprintf(&b, "## Request\n\n@%s asked on Inspect's dashboard, for branch %s:\n\n%s\n\n", sess.RequesterLogin, untrustedSpan(target.BranchName()), untrustedBlock(sess.Instructions, 2000))
	} else {
		fmt.Fprintf(&b, "## Request\n\n@%s asked in #%d:\n\n%s\n\n", sess.RequesterLogin, sess.Number, untrustedBlock(sess.Instructions, 2000))
		if target.IsIssue() {
			fmt.Fprintf(&b, "Fixes #%d\n\n", sess.Number)
		}
	}

	// The supervisor's diffstat is of the manifest's blobs against the
	// pinned commit, with every .gitattributes neutralised (decision 0023),
	// so its line counts are exact; the policy summary's are an estimate
	// made without the base files.
	added, removed := sum.LinesAdded, sum.LinesRemoved
	exact := map[string]contract.ChangedFile{}
	if len(ev.Changes) > 0 {
		added, removed = 0, 0
		for _, c := range ev.Changes {
			exact[c.Path] = c
			added += c.Additions
			removed += c.Deletions
		}
	}
	fmt.Fprintf(&b, "## What changed\n\n%d added, %d modified, %d deleted; +%d −%d lines.\n\n", sum.Added, sum.Modified, sum.Deleted, added, removed)
	b.WriteString("| File | Change | Lines |\n|---|---|---|\n")
	for _, f := range sum.Files {
		flag := ""
		if f.Test {
			flag = " ⚠️ test file"
		}
		plus, minus := f.LinesAdded, f.LinesRemoved
		if c, ok := exact[f.Path]; ok {
			plus, minus = c.Additions, c.Deletions
		}
		fmt.Fprintf(&b, "| %s%s | %s | +%d −%d |\n", cell(pathSpan(f.Path)), flag, f.Status, plus, minus)
	}
	if len(sum.TestFiles) > 0 {
		b.WriteString("\nTest files were changed: review them as carefully as the code they test.\n")
	}

	b.WriteString("\n## Verification\n\n")
	verifies := 0
	b.WriteString("| Command | Result | Time |\n|---|---|---|\n")
	for _, c := range ev.Commands {
		if c.Phase != contract.PhaseVerify {
			continue
		}
		verifies++
		result := "✅ passed"
		switch {
		case c.TimedOut:
			result = "⏱️ timed out"
		case !c.Succeeded():
			result = fmt.Sprintf("❌ exit %d", c.ExitCode)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(untrustedSpan(strings.Join(c.Argv, " "))), result, (time.Duration(c.DurationMS) * time.Millisecond).Round(time.Millisecond))
	}
	if verifies == 0 {
		b.WriteString("| (none configured) | — | — |\n\nThis repository's `.github/inspect.yml` sets no `verify` commands, so nothing was checked.\n")
	}
	if t := ev.Tests; t != nil {
		fmt.Fprintf(&b, "\nTests: %s\n", TestCounts(*t))
		for i, f := range t.Failures {
			if i == 20 {
				fmt.Fprintf(&b, "- and %d more\n", len(t.Failures)-20)
				break
			}
			fmt.Fprintf(&b, "- %s\n", untrustedSpan(f.Name))
		}
	}
	if !verified {
		b.WriteString("\n" + verdictNote(verdict.Of(ev)) + "\n")
	}
	if base := BaselineSection(ev.Baseline); base != "" {
		b.WriteString("\n" + base)
	}

	b.WriteString(ArtifactsSection(ev.Artifacts))
	b.WriteString(ScreenshotsSection(x.Screenshots))
	fmt.Fprintf(&b, "\n## Environment\n\nBuilt on `%s` of `%s`.\n", spec.PinnedSHA, sess.FullName())
	if where := WhereItRan(ev); len(where) > 0 {
		b.WriteString("\n- " + strings.Join(where, "\n- ") + "\n")
	}
	if egress := EgressSummary(ev.Egress); egress != "" {
		b.WriteString("\n" + egress)
	}
	fmt.Fprintf(&b, "\n## Session\n\nSession `%s`, attempt `%s`, ran %s.\n", sess.ID, spec.AttemptID, ev.EndedAt.Sub(ev.StartedAt).Round(time.Second))
	if spec.Agent.Model != "" {
		fmt.Fprintf(&b, "\nAgent: %s with `%s`.", spec.Agent.Preset, spec.Agent.Model)
	}
	if u := ev.Usage; u != nil {
		fmt.Fprintf(&b, " Model usage: %d tokens (%d in, %d out) over %d requests, counted by Inspect's model proxy.\n", u.Total, u.Input, u.Output, u.Requests)
	} else if spec.Agent.Model != "" {
		b.WriteString("\n")
	}
	if fresh := AgentStartedFreshMarkdown(ev.AgentState); fresh != "" {
		b.WriteString("\n" + fresh + "\n")
	}
	if cost := CostLine(x); cost != "" {
		b.WriteString("\n" + cost)
	}
	if link := SessionLinkLine(x); link != "" {
		b.WriteString("\n" + link)
	}
	if answer := strings.TrimSpace(ev.FinalAnswer); answer != "" {
		fmt.Fprintf(&b, "\n## The agent's answer\n\n%s\n", untrustedBlock(answer, 4000))
	}
	return b.String()
}

// OpenedByTheAppNote ends the body of a pull request that the requester
// signed in to have opened as them, but that Inspect's App opened because
// GitHub refused their own token (revoked, not allowed to write, or unable
// to see the repository): the PR says whose it is, and why.
func OpenedByTheAppNote(login string) string {
	return fmt.Sprintf("\n\n_Opened by Inspect's App, not as @%s: GitHub refused their own token for this repository._", login)
}

// CommitMessage is the message of the commit Inspect makes: the request's
// first line as its subject (defused: it is untrusted), the requester credited in a trailer (the
// commit itself has no author, so GitHub signs it as the App's bot).
func CommitMessage(sess store.Session) string { return CommitMessageWith(sess, nil) }

// CommitMessageWith is CommitMessage for a session whose conversation
// (session.Turn: its requests and the messages that steered them, decision
// 0071) had other authors: each is a Co-authored-by too, after the
// requester, in the order they first spoke.
func CommitMessageWith(sess store.Session, conversation []session.Turn) string {
	title := strings.TrimSpace(strings.SplitN(sess.Instructions, "\n", 2)[0])
	if utf8.RuneCountInString(title) > 60 {
		title = string([]rune(title)[:60]) + "…"
	}
	// Plain text, where GitHub still links references and a closing
	// keyword closes its issue once the commit reaches the default branch:
	// the request's words are defused.
	title = defuse(title)
	// A branch session has no thread to name; the branch stays out of the
	// commit (the pull request's body names it, as code).
	where := fmt.Sprintf("in #%d", sess.Number)
	if !sess.Target().HasThread() {
		where = "on Inspect's dashboard"
	}
	authors := []session.Turn{{AuthorLogin: sess.RequesterLogin, AuthorID: sess.RequesterID}}
	for _, a := range session.Authors(conversation) {
		if a.AuthorLogin != sess.RequesterLogin {
			authors = append(authors, a)
		}
	}
	return fmt.Sprintf("Inspect: %s\n\nRequested by @%s %s.\n\n%sInspect-Session: %s\n",
		title, sess.RequesterLogin, where, CoAuthorTrailers(authors), sess.ID)
}

// PRTitle is the title of a pull request Inspect opens: the commit's
// subject line.
func PRTitle(sess store.Session) string {
	return strings.SplitN(CommitMessage(sess), "\n", 2)[0]
}

// UnverifiedPRTitle is the title of a ready pull request holding a change
// that is not verified (by the verdict's reason: failed verification, a
// failing test not fixed, or not reproduced; decision 0081), opened where
// GitHub takes no drafts: the title says what the draft state would have.
func UnverifiedPRTitle(sess store.Session, reason string) string {
	switch reason {
	case verdict.ReasonNotReproduced:
		return "[not reproduced] " + PRTitle(sess)
	case verdict.ReasonNotFixed:
		return "[not fixed] " + PRTitle(sess)
	}
	return "[verification failed] " + PRTitle(sess)
}

// UnverifiedPRNote heads the body of such a pull request.
func UnverifiedPRNote(label, reason string) string {
	what, see := "**Verification failed.**", "Verification"
	switch reason {
	case verdict.ReasonNotReproduced:
		what, see = "**Not reproduced.**", "Against the base"
	case verdict.ReasonNotFixed:
		what, see = "**Not fixed:** a test that failed on the base was removed or skipped.", "Against the base"
	}
	return fmt.Sprintf("> [!WARNING]\n> %s This repository does not take draft pull requests, so this one is open for review but carries the `%s` label instead. Do not merge it as it is: see %s below.\n\n", what, label, see)
}
