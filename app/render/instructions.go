package render

import (
	"fmt"
	"strings"
)

// The instructions of sessions nobody typed: Inspect words them itself.

// LabelInstructions are a label session's instructions: the issue is the
// request, its title the gist.
func LabelInstructions(number int, issueTitle string) string {
	title := strings.TrimSpace(CleanLine(issueTitle))
	if title == "" {
		return fmt.Sprintf("Resolve issue #%d.", number)
	}
	return fmt.Sprintf("Resolve issue #%d: %s", number, title)
}

// RepairInstructions are a repair session's request: the checks are named
// (as code spans, since another app chose the names), at most max of them;
// their output follows in the context.
func RepairInstructions(names []string, max int) string {
	var quoted []string
	for i, n := range names {
		if i == max {
			quoted = append(quoted, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		quoted = append(quoted, pathSpan(n))
	}
	return fmt.Sprintf("Make the failing checks pass: %s. Their output is in the context below.", strings.Join(quoted, ", "))
}
