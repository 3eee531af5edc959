package contract

import "strings"

// MaxPatchBytes caps Diff.Patch. A reviewer reads a diff on a page; past a
// mebibyte the pull request is the place to read it.
const MaxPatchBytes = 1 << 20

// Diff is the change as a unified patch (Evidence.Diff, v7), for the
// session page. The supervisor makes it with its own git from the same
// staged index as the manifest and the diffstat, attributes neutralised:
// no external diff or textconv driver, no renames, binary files (by
// content) as "Binary files … differ". It is text from the agent's files,
// so it is redacted like the rest of the evidence and shown only escaped.
type Diff struct {
	// Patch is `git diff` output: valid UTF-8 (invalid bytes and NULs
	// become U+FFFD), at most MaxPatchBytes, whole lines only.
	Patch string `json:"patch"`
	// Truncated is set when Patch is not the whole patch: it was cut at
	// a line boundary to fit MaxPatchBytes.
	Truncated bool `json:"truncated,omitempty"`
}

func (d *Diff) validate(f *faults, prefix string) {
	checkText(f, at(prefix, "patch"), d.Patch, MaxPatchBytes, false)
}

// CutPatch makes patch fit a Diff: invalid UTF-8 and NUL bytes become
// U+FFFD, and text past max bytes is cut back to the last whole line. It
// reports whether it cut anything. Redact before cutting (a token cut in
// half is no longer recognisable); the supervisor and the app both cut, so
// neither trusts the other's size.
func CutPatch(patch string, max int) (string, bool) {
	s := strings.ToValidUTF8(patch, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= max {
		return s, false
	}
	s = s[:max]
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1], true
	}
	return "", true // one line longer than max: none of it, rather than half a line
}
