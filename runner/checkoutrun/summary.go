package checkoutrun

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/testreport"
)

// How much of a failed command's output the summary shows.
const summaryTailLines = 12

// outcomeWords says each outcome in words.
var outcomeWords = map[contract.OutcomeHint]string{
	contract.OutcomeOK:            "the agent finished and verification passed",
	contract.OutcomeAgentFailed:   "the agent failed",
	contract.OutcomeVerifyFailed:  "verification failed",
	contract.OutcomeTimedOut:      "the session timed out",
	contract.OutcomeCancelled:     "the session was stopped",
	contract.OutcomeError:         "the session could not run to the end",
	contract.OutcomeLimitExceeded: "a command ran into a sandbox limit and was stopped",
}

// WriteSummary writes the evidence for a person: the outcome, each command
// with its exit status and duration, the test counts and failures, the
// change, the agent's answer, and where the patch went. Everything that
// came from the sandbox is cleaned of control characters first, since it
// reaches a terminal.
func (r *Result) WriteSummary(w io.Writer) {
	ev := &r.Evidence
	words := outcomeWords[ev.Outcome]
	if ev.Outcome == contract.OutcomeOK && len(r.Spec.Verify) == 0 {
		words = "the agent finished (nothing verifies it: the config has no verify commands)"
	}
	outcome := string(ev.Outcome)
	if r.Refusal != "" {
		// The server's outcome for a change it will not push.
		outcome, words = "change_refused", "the session ran, and the server would refuse its change"
	}
	fmt.Fprintf(w, "Outcome:  %s: %s\n", outcome, words)
	if ev.Reason != "" && ev.Outcome != contract.OutcomeOK {
		fmt.Fprintf(w, "Reason:   %s\n", clean(ev.Reason))
	}
	if r.Refusal != "" {
		// Whole, as the server would post it: it names the paths.
		fmt.Fprintf(w, "Refused:  %s\n", cleanWhole(r.Refusal))
	}
	at := shortSHA(r.Spec.PinnedSHA)
	if r.Branch != "" {
		at += " (" + r.Branch + ")"
	}
	if r.Uncommitted {
		at += "; uncommitted changes were not included"
	}
	fmt.Fprintf(w, "Commit:   %s\n", at)
	if r.ConfigSource != "" {
		fmt.Fprintf(w, "Config:   %s\n", r.ConfigSource)
	}
	if !ev.StartedAt.IsZero() && !ev.EndedAt.IsZero() {
		fmt.Fprintf(w, "Duration: %s\n", duration(ev.EndedAt.Sub(ev.StartedAt)))
	}
	if u := ev.Usage; u != nil {
		cached, cost := "", ""
		if u.CacheRead > 0 || u.CacheWrite > 0 {
			cached = fmt.Sprintf(", of which %d cache reads and %d cache writes", u.CacheRead, u.CacheWrite)
		}
		if r.server != nil {
			if usd, ok := r.server.ModelCost(r.Spec.Agent.Model, *u); ok {
				cost = fmt.Sprintf("; $%.4f at the server's prices", usd)
			}
		}
		fmt.Fprintf(w, "Model:    %d tokens (%d in%s, %d out) over %d requests%s\n", u.Total, u.Input, cached, u.Output, u.Requests, cost)
	}
	writeEgress(w, ev.Egress)

	if len(ev.Commands) > 0 {
		fmt.Fprintln(w, "\nCommands:")
		width := 0
		for _, c := range ev.Commands {
			width = max(width, len(c.Name))
		}
		for _, c := range ev.Commands {
			fmt.Fprintf(w, "  %-*s  %-6s  %-14s  %8s  %s\n", width, clean(c.Name), c.Phase, status(c),
				duration(time.Duration(c.DurationMS)*time.Millisecond), clean(strings.Join(c.Argv, " ")))
			if !c.Succeeded() {
				// go test -json's events read as the text they carry.
				for _, line := range lastLines(testreport.Readable(c.OutputTail), summaryTailLines) {
					fmt.Fprintf(w, "      | %s\n", line)
				}
				if c.Phase == contract.PhaseSetup && unresolvedHost(c.OutputTail) {
					fmt.Fprintln(w, "      hint: setup could not resolve a host name: the sandbox reaches package registries only through egress.registries (give them in --server-config; see docs/configuration.md)")
				}
			}
		}
	}

	if t := ev.Tests; t != nil {
		from := ""
		if len(t.Runners) > 0 {
			from = " (" + clean(strings.Join(t.Runners, ", ")) + ")"
		}
		fmt.Fprintf(w, "\nTests:    %d passed, %d failed, %d skipped%s\n", t.Passed, t.Failed, t.Skipped, from)
		if t.FailuresOnly {
			fmt.Fprintln(w, "          (plain go test without -v names only failures: passing tests are not counted)")
		}
		for _, f := range t.Failures {
			where := ""
			if f.File != "" {
				where = " (" + f.File
				if f.Line > 0 {
					where += fmt.Sprintf(":%d", f.Line)
				}
				where += ")"
			}
			fmt.Fprintf(w, "  FAIL %s%s\n", clean(f.Name), clean(where))
			for _, line := range lastLines(f.Message, 4) {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}

	if len(ev.Changes) > 0 {
		fmt.Fprintf(w, "\nChanges:  %d file(s)\n", len(ev.Changes))
		for _, c := range ev.Changes {
			var flags []string
			if c.Binary {
				flags = append(flags, "binary")
			}
			if c.Test {
				flags = append(flags, "test file")
			}
			if c.VerifyScript {
				flags = append(flags, "verify script")
			}
			note := ""
			if len(flags) > 0 {
				note = "  [" + strings.Join(flags, ", ") + "]"
			}
			fmt.Fprintf(w, "  %-8s +%d -%d  %s%s\n", c.Status, c.Additions, c.Deletions, clean(c.Path), note)
		}
	}

	if ev.FinalAnswer != "" {
		fmt.Fprintln(w, "\nAnswer:")
		for _, line := range strings.Split(strings.TrimRight(ev.FinalAnswer, "\n"), "\n") {
			fmt.Fprintf(w, "  %s\n", clean(line))
		}
	}

	fmt.Fprintln(w)
	switch {
	case r.Refusal != "":
		fmt.Fprintln(w, "Patch:    none: the change was refused (above), as the server would refuse it; no patch written")
	case len(r.Patch) > 0 && r.PatchFile != "":
		abs, err := filepath.Abs(r.PatchFile)
		if err != nil {
			abs = r.PatchFile
		}
		fmt.Fprintf(w, "Patch:    written to %s; apply it at the top of a checkout of %s with: git apply %s\n",
			r.PatchFile, shortSHA(r.Spec.PinnedSHA), abs)
	case len(r.Patch) > 0:
		fmt.Fprintln(w, "Patch:    not written (no patch file was asked for)")
	case r.Manifest != nil && !agentRan(ev.Commands):
		// Setup failed, or the session ended before the agent's turn.
		fmt.Fprintln(w, "Patch:    no change: the agent did not run (no patch written)")
	case r.Manifest != nil:
		fmt.Fprintln(w, "Patch:    no change: the agent changed nothing (no patch written)")
	default:
		fmt.Fprintln(w, "Patch:    none: no change could be collected")
	}
	if r.EvidenceFile != "" {
		fmt.Fprintf(w, "Evidence: written to %s\n", r.EvidenceFile)
	}
	if r.AttemptDir != "" {
		fmt.Fprintf(w, "Workspace: kept at %s\n", r.AttemptDir)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "Problem:  %s\n", clean(p))
	}
}

// agentRan reports whether the agent's command was started.
func agentRan(cs []contract.CommandResult) bool {
	for _, c := range cs {
		if c.Phase == contract.PhaseAgent && c.Name == "agent" {
			return true
		}
	}
	return false
}

// dnsFailures are how the package managers and their runtimes say a name
// did not resolve: Go's resolver, glibc's gai_strerror (pip, curl, git),
// Node's getaddrinfo codes (npm, yarn, pnpm).
var dnsFailures = []string{
	"no such host",
	"Temporary failure in name resolution",
	"Name or service not known",
	"Could not resolve host",
	"EAI_AGAIN",
	"ENOTFOUND",
}

// unresolvedHost reports whether a command's output says a host name did
// not resolve: the sandbox has no DNS, so a registry not given in
// egress.registries fails that way.
func unresolvedHost(output string) bool {
	for _, s := range dnsFailures {
		if strings.Contains(output, s) {
			return true
		}
	}
	return false
}

func status(c contract.CommandResult) string {
	switch {
	case c.TimedOut:
		return "TIMED OUT"
	case c.Signal != "":
		return "KILLED " + c.Signal
	case c.ExitCode == 0:
		return "ok (exit 0)"
	default:
		return fmt.Sprintf("FAILED (exit %d)", c.ExitCode)
	}
}

// duration rounds d for a person: milliseconds under a second, tenths of a
// second under a minute, seconds above.
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// lastLines returns the last n non-empty-trailing lines of s, each cleaned.
func lastLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return lines
}

// clean makes one line safe for a terminal: no control or invisible
// characters (escape sequences), bounded length.
func clean(s string) string { return contract.CleanProgressMessage(s) }

// writeEgress is the registry traffic and the refusals of the egress
// audit, when there were any (a model-only session's usage is its own
// line).
func writeEgress(w io.Writer, a *contract.EgressAudit) {
	if a == nil || a.Registry.Requests == 0 && a.RefusedCount == 0 {
		return
	}
	fmt.Fprintf(w, "Egress:   %d registry requests, %d bytes, %d refused\n", a.Registry.Requests, a.Registry.Bytes, a.RefusedCount)
	for _, rec := range a.Refused {
		if rec.Quiet {
			continue
		}
		on := ""
		if rec.Upstream != "" {
			on = " on " + rec.Upstream
		}
		fmt.Fprintf(w, "  refused %s %s%s, in %s: %s\n", clean(rec.Method), clean(rec.Path), clean(on), rec.Phase, clean(rec.Why))
	}
}

// cleanWhole is clean without the length cap: invalid UTF-8, control and
// invisible characters made harmless for a terminal, all of it kept.
func cleanWhole(s string) string {
	return strings.Map(func(r rune) rune {
		if policy.IsHiddenInLine(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
