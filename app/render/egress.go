package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// maxShownRefusals caps the refusals listed on GitHub; the evidence keeps
// them all.
const maxShownRefusals = 10

// EgressSummary is the egress audit as a reviewer reads it on the PR and
// the check run: one line, "142 registry requests, 38.2 MB, 0 refused",
// then the refusals, if any, up to maxShownRefusals. It is "" when the
// audit has no registry traffic and no refusal (a model-only session says
// its usage elsewhere). The paths and methods are the sandbox's, untrusted:
// each is a code span that cannot end early, carry a hidden marker or run
// onto another line.
func EgressSummary(a *contract.EgressAudit) string {
	if a == nil || a.Registry.Requests == 0 && a.RefusedCount == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Egress: %s, %s, %d refused.\n", plural(a.Registry.Requests, "registry request"), HumanBytes(a.Registry.Bytes), a.RefusedCount)
	var shown []contract.EgressRecord
	quiet := 0
	for _, r := range a.Refused {
		if r.Quiet {
			quiet++
			continue
		}
		shown = append(shown, r)
	}
	more := a.RefusedDropped
	if len(shown) > maxShownRefusals {
		more += len(shown) - maxShownRefusals
		shown = shown[:maxShownRefusals]
	}
	if len(shown) > 0 || more > 0 {
		b.WriteString("\nRefused, and never sent on:\n\n")
	}
	for _, r := range shown {
		on := ""
		if r.Upstream != "" {
			on = " on " + code(r.Upstream)
		}
		fmt.Fprintf(&b, "- %s %s%s, in %s\n", code(r.Method), code(r.Path), on, r.Phase)
	}
	if more > 0 {
		fmt.Fprintf(&b, "- and %d more\n", more)
	}
	if quiet > 0 {
		fmt.Fprintf(&b, "\n%s a package manager's own audit call, refused quietly.\n", plural(quiet, "refusal was"))
	}
	return b.String()
}

// code is untrusted text as one inline code span (pathSpan).
func code(s string) string { return pathSpan(s) }

// plural is "1 registry request" or "2 registry requests"; "refusal was"
// becomes "refusals were".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	if w, ok := strings.CutSuffix(noun, " was"); ok {
		return fmt.Sprintf("%d %ss were", n, w)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// HumanBytes is a byte count in decimal units, as download tools show
// them: "512 B", "1.5 kB", "38.2 MB", "1.2 GB".
func HumanBytes(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"kB", "MB", "GB", "TB"} {
		v /= 1000
		if v < 999.95 || unit == "TB" {
			return fmt.Sprintf("%.1f %s", v, unit)
		}
	}
	return "" // unreachable: the loop returns at TB
}
