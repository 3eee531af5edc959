package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// ArtifactsSection is the PR body's list of the session's artifacts (the
// files its artifacts: globs named after verify): each by name (untrusted,
// a path span), size and the type sniffed from its bytes, or why it was
// not collected. "" when there are none. Links come with the dashboard.
func ArtifactsSection(list []contract.Artifact) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	collected := 0
	for _, a := range list {
		if a.Refused == "" {
			collected++
		}
	}
	fmt.Fprintf(&b, "\n## Artifacts\n\n%s collected after verify, kept by Inspect; none is part of the change.\n\n", plural(collected, "file"))
	for _, a := range list {
		if a.Refused != "" {
			fmt.Fprintf(&b, "- %s, %s: not collected (%s)\n", pathSpan(a.Name), HumanBytes(a.Size), untrustedSpan(a.Refused))
			continue
		}
		fmt.Fprintf(&b, "- %s, %s, %s\n", pathSpan(a.Name), HumanBytes(a.Size), code(a.ContentType))
	}
	return b.String()
}
