package ghconformance

import (
	"regexp"
	"strings"
)

// ResponseExcuse is a field GitHub's description requires in an answer
// that the stand-in leaves out. Each is one the code never reads, with why
// the stand-in does not model it; every other required field the stand-in
// gives, as GitHub does.
type ResponseExcuse struct {
	// Operation is the operationId ("pulls/get").
	Operation string
	// Pointer is where the object lacking the field sits in the body, with
	// array indices written "*": "" for the body itself.
	Pointer string
	Field   string
	Reason  string
}

// diffCounts is why a pull request's diff counts are excused: GitHub
// computes them from the diff, and nothing in Inspect reads them.
const diffCounts = "GitHub counts it from the pull request's diff; Inspect never reads it, and the stand-in would have to diff every pull request it describes"

// ResponseExcuses are all the excused fields, in one place.
var ResponseExcuses = pullExcuses("pulls/get", "pulls/create", "pulls/update", "pulls/request-reviewers")

func pullExcuses(ops ...string) []ResponseExcuse {
	var out []ResponseExcuse
	for _, op := range ops {
		for _, f := range []string{"additions", "deletions", "changed_files", "commits"} {
			out = append(out, ResponseExcuse{Operation: op, Field: f, Reason: diffCounts})
		}
	}
	return out
}

var (
	missingRE = regexp.MustCompile(`^property "([^"]+)" is missing$`)
	indexRE   = regexp.MustCompile(`/[0-9]+(/|$)`)
)

// ExcusedResponse tells whether a problem with an answer to operation is
// one of ResponseExcuses.
func ExcusedResponse(operation string, p Problem) bool {
	m := missingRE.FindStringSubmatch(p.Reason)
	if m == nil {
		return false
	}
	// The pointer of a missing field ends with the field's name.
	pointer := strings.TrimSuffix(strings.TrimSuffix(p.Pointer, "/"+m[1]), "/")
	for indexRE.MatchString(pointer) {
		pointer = indexRE.ReplaceAllString(pointer, "/*$1")
	}
	for _, e := range ResponseExcuses {
		if e.Operation == operation && e.Pointer == pointer && e.Field == m[1] {
			return true
		}
	}
	return false
}
