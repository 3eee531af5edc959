package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// Extras are what the PR body and the check run show beside the
// supervisor's evidence that only the app knows: the session's cost at
// the server's prices, and its page.
type Extras struct {
	// Cost is the session's model cost in US dollars, from
	// config.Server.ModelCost, the one function that computes it; Priced
	// says the server prices the session's model (else no cost is shown).
	Cost   float64
	Priced bool
	// SessionURL is the session's page (web.public_url + /sessions/<id>),
	// "" without a dashboard.
	SessionURL string
	// ProvenanceURL is the attempt's signed provenance on the dashboard
	// and KeysURL the server's public keys (decision 0078); "" when the
	// attempt was not attested.
	ProvenanceURL, KeysURL string
	// Screenshots are the session's screenshot pairs, linking to its
	// page (decision 0083); none without a dashboard.
	Screenshots []ScreenshotLink
}

// Money is a sum in US dollars as Inspect shows it, on the session page,
// in the PR body, the check run and a budget's refusal alike: whole cents
// from a dollar up, and four decimals below, where a session's cost often
// is (what rounds to $1.0000 is shown as $1.00).
func Money(usd float64) string {
	if usd >= 0.99995 || usd <= -0.99995 {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

// ShortDigest is an image digest's first 12 hex digits after its
// algorithm, as registries and `docker images` show it.
func ShortDigest(digest string) string {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || len(hex) <= 12 {
		return digest
	}
	return algo + ":" + hex[:12]
}

// WhereItRan is the sentences saying where an attempt ran: the snapshot restored (its short digest, its age when the
// attempt started and the commits it was behind the pinned one), or that
// the workspace was cloned without one; the base image's name and digest;
// and the tools image's digest. Only the base image's name is text from
// outside (a snapshot's label), shown as code; the digests are checked by
// the evidence's contract. None when the evidence says nothing of it.
func WhereItRan(ev contract.Evidence) []string {
	var out []string
	if w := ev.Workspace; w != nil {
		switch w.Source {
		case contract.WorkspaceSnapshot:
			s := fmt.Sprintf("Restored from snapshot `%s`", ShortDigest(w.SnapshotDigest))
			if !w.SnapshotCreatedAt.IsZero() && !ev.StartedAt.IsZero() {
				s += fmt.Sprintf(", %s old", age(ev.StartedAt.Sub(w.SnapshotCreatedAt)))
			}
			out = append(out, s+fmt.Sprintf(", %s behind the pinned commit.", plural(w.DriftCommits, "commit")))
		case contract.WorkspaceClone:
			out = append(out, "Cloned without a snapshot.")
		}
		if base := w.BaseImage; base != nil {
			out = append(out, fmt.Sprintf("Base image %s at `%s`.", untrustedSpan(base.Name), base.Digest))
		}
	}
	if ev.ToolsImage != "" {
		out = append(out, fmt.Sprintf("Tools image `%s`.", ev.ToolsImage))
	}
	return out
}

// age is a duration rounded for reading: minutes under a day, then hours.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d >= 24*time.Hour {
		d = d.Round(time.Hour)
	} else {
		d = d.Round(time.Minute)
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if s == "" {
		return "0m"
	}
	return s
}

// CostLine is the session's cost sentence, ending in a newline, or "" when
// the server prices none of its model.
func CostLine(x Extras) string {
	if !x.Priced {
		return ""
	}
	return fmt.Sprintf("Cost: %s at this server's model prices.\n", Money(x.Cost))
}

// SessionLinkLine is the link to the session's page, ending in a newline,
// or "" without a dashboard.
func SessionLinkLine(x Extras) string {
	if x.SessionURL == "" {
		return ""
	}
	return "The session, live and in full: " + x.SessionURL + "\n"
}

// ProvenanceLine is the link to the attempt's signed provenance, ending
// in a newline, or "" when it has none.
func ProvenanceLine(x Extras) string {
	if x.ProvenanceURL == "" {
		return ""
	}
	return fmt.Sprintf("Signed provenance (in-toto, DSSE) of the commit Inspect made: %s — check it with `inspect verify` against the keys at %s\n", x.ProvenanceURL, x.KeysURL)
}

// ExtrasOf is a session's Extras: its usage u (nil for none) of model
// priced by cost (config.Server.ModelCost; nil prices nothing), and its
// page url ("" for none).
func ExtrasOf(cost func(model string, u contract.TokenUsage) (float64, bool), model string, u *contract.TokenUsage, url string) Extras {
	x := Extras{SessionURL: url}
	if cost != nil && u != nil && model != "" {
		x.Cost, x.Priced = cost(model, *u)
	}
	return x
}
