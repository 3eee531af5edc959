package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// The words of policy.ValidateChange's refusals (decision 0047): one line
// saying why nothing was pushed and what to do, shown as the session's
// reply and by `inspect run`.

const (
	maxListed     = 10  // paths named in a refusal before "and N more"
	maxShownRunes = 120 // runes of one path shown in a refusal
)

// ChangeRefusedReply is the session's reply when the change is refused:
// ChangeRefusal's line after a stop sign. Defusing the whole line keeps a
// path from carrying a reference, a mention or one of Inspect's markers,
// and changes none of the other words.
func ChangeRefusedReply(d policy.ChangeDecision) string { return "🛑 " + defuse(ChangeRefusal(d)) }

// ChangeRefusal is one line of Markdown for the requester saying why the
// change was not pushed and what to do; it names at most ten paths, each
// as a code span (pathCodeSpan). An allowed change has none: "".
func ChangeRefusal(d policy.ChangeDecision) string {
	if d.Allowed {
		return ""
	}
	paths := d.Offending
	n := len(paths)
	switch d.Reason {
	case policy.ReasonInvalidPath:
		return fmt.Sprintf("Inspect didn't push this change, because it has %s that can't be committed safely: %s. "+
			"This usually means the agent or its tools went wrong: try the request again, and if it keeps happening, tell the Inspect server's administrators.",
			oneOrMany(n, "a path", "paths"), pathList(paths, d.Faults))
	case policy.ReasonProtectedPath:
		return fmt.Sprintf("Inspect didn't push this change, because it touches %s: %s. "+
			"Ask for a change that leaves %s alone, or make that edit yourself.",
			oneOrMany(n, "a protected path", "protected paths"), pathList(paths, d.Faults), pathList(d.Protected, nil))
	case policy.ReasonBinaryFile:
		return fmt.Sprintf("Inspect didn't push this change, because it adds or changes %s, which this repository doesn't accept from Inspect: %s. "+
			"Ask for a change without %s, or add %s yourself.",
			oneOrMany(n, "a binary file", "binary files"), pathList(paths, nil),
			oneOrMany(n, "it", "them"), oneOrMany(n, "that file", "those files"))
	case policy.ReasonTooManyFiles:
		return fmt.Sprintf("Inspect didn't push this change, because it touches %d files, and the limit is %d. "+
			"Ask for a smaller change (one part at a time, for example), or make this one yourself.",
			d.Measured, d.Limit)
	case policy.ReasonTooLarge:
		return fmt.Sprintf("Inspect didn't push this change, because it writes %s, and the limit is %s. The largest %s %s. "+
			"Ask for a smaller change, or add large files yourself.",
			binaryBytes(d.Measured), binaryBytes(d.Limit), oneOrMany(n, "file is", "files are"), pathList(paths, nil))
	case policy.ReasonTooManyLines:
		return fmt.Sprintf("Inspect didn't push this change, because it changes %d lines (%d added, %d removed), and the limit is %d. "+
			"The most changed %s %s. Ask for a smaller change (one part at a time, for example), or make this one yourself.",
			d.Measured, d.LinesAdded, d.LinesRemoved, d.Limit, oneOrMany(n, "file is", "files are"), pathList(paths, nil))
	}
	// A reason with no words of its own yet: still one line that says so.
	return "Inspect didn't push this change, because it breaks one of this server's rules for changes."
}

// faultText is what is wrong with one path, after its code span.
func faultText(f policy.PathFault) string {
	switch f.Kind {
	case policy.FaultDuplicate:
		return "is listed more than once"
	case policy.FaultFileAndDirectory:
		return "is written both as a file and as a directory"
	case policy.FaultInsideFile:
		return "is written inside a path that is also written as a file"
	case policy.FaultEmpty:
		return "is empty"
	case policy.FaultTooLong:
		return fmt.Sprintf("is longer than %d bytes", f.Limit)
	case policy.FaultNotUTF8:
		return "is not valid UTF-8"
	case policy.FaultHiddenCharacters:
		return "has control or invisible characters"
	case policy.FaultBackslash:
		return "has a backslash"
	case policy.FaultAbsolute:
		return "is absolute"
	case policy.FaultTrailingSlash:
		return "ends with a slash"
	case policy.FaultEmptyComponent:
		return "has an empty component"
	case policy.FaultDotComponent:
		if f.Name == "." || f.Name == ".." {
			return "has a `" + f.Name + "` component"
		}
		return "has a dot component"
	case policy.FaultLongComponent:
		return fmt.Sprintf("has a component longer than %d bytes", f.Limit)
	case policy.FaultDotGit:
		return "has a `.git` component"
	case policy.FaultUnsupportedMode:
		return "has an unsupported file mode"
	case policy.FaultLinkEmpty:
		return "is a symbolic link with an empty target"
	case policy.FaultLinkTooLong:
		return fmt.Sprintf("is a symbolic link with a target longer than %d bytes", f.Limit)
	case policy.FaultLinkUnreadable:
		return "is a symbolic link with an unreadable target"
	case policy.FaultLinkBackslash:
		return "is a symbolic link whose target has a backslash"
	case policy.FaultLinkAbsolute:
		return "is a symbolic link to an absolute path"
	case policy.FaultLinkInPlaceOfGit:
		return "is a symbolic link in place of git's " + pathCodeSpan(f.Name)
	case policy.FaultLinkIntoDotGit:
		return "is a symbolic link into `.git`"
	case policy.FaultLinkOutside:
		return "is a symbolic link that points outside the repository"
	case policy.FaultLinkToProtected:
		target := f.Name
		if target == "" {
			target = "." // the repository's root
		}
		return "a symbolic link to " + pathCodeSpan(target)
	}
	return ""
}

// pathList names up to maxListed paths as code spans, each followed by
// its fault when faults has one (faults is nil or as long as paths): "`a`,
// `b` and `c`", or "`a`, …, `j` and 3 more".
func pathList(paths []string, faults []policy.PathFault) string {
	n := min(len(paths), maxListed)
	if n == 0 {
		return ""
	}
	items := make([]string, n)
	for i, p := range paths[:n] {
		items[i] = pathCodeSpan(p)
		if i < len(faults) {
			if note := faultText(faults[i]); note != "" {
				items[i] += " (" + note + ")"
			}
		}
	}
	if more := len(paths) - n; more > 0 {
		return strings.Join(items, ", ") + fmt.Sprintf(" and %d more", more)
	}
	if n == 1 {
		return items[0]
	}
	return strings.Join(items[:n-1], ", ") + " and " + items[n-1]
}

// pathCodeSpan shows a path from a change manifest in Markdown, as one
// inline code span on one line. Backticks are dropped, control and
// invisible characters and invalid bytes become U+FFFD (so a reader sees
// that something is there), and a path longer than 120 runes is cut with
// "…". A path with nothing printable left is described in words instead.
func pathCodeSpan(p string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		switch {
		case r == '`':
			continue
		case (r == utf8.RuneError && size == 1) || policy.IsHiddenInLine(r):
			r = utf8.RuneError
		}
		if n == maxShownRunes {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	s := b.String()
	if strings.TrimSpace(s) == "" {
		return "(a path with no printable characters)"
	}
	return "`" + s + "`"
}

// binaryBytes is a size in binary units, as the change limits are set:
// "1 byte", "8 bytes", "3.0 MiB".
func binaryBytes(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return oneOrMany(int(n), "1 byte", fmt.Sprintf("%d bytes", n))
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}
