package supervisor

import (
	"context"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// patchArgs diff the private index (the staged change) against the pinned
// commit as a unified patch, in a shape no configuration changes (the
// supervisor's git reads none, and these pin it anyway): no colour, no
// external diff or textconv driver, no renames (so each file is its own
// section, as in the manifest), three lines of context, a/ and b/
// prefixes. Without --binary a binary file (decided by content, the
// attributes being neutralised) is one "Binary files … differ" line.
var patchArgs = []string{"diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
	"--unified=3", "--src-prefix=a/", "--dst-prefix=b/"}

// stagedPatch is the unified patch of the staged change against sha, for
// the session page: at most max bytes of whole lines (Truncated when cut),
// valid UTF-8, redacted by red before it is cut, since a secret cut in half
// is no longer recognisable. git's output past max is never held: only
// its first max bytes are read, and a line they end inside is dropped
// before redaction, so what is redacted is whole lines and a secret is
// either whole or gone. Nil when nothing changed.
func stagedPatch(ctx context.Context, g *git, w *workspace, sha string, red *contract.Redactor, max int) (*contract.Diff, error) {
	out, more, err := w.privatePrefix(ctx, g, max, append(append([]string(nil), patchArgs...), sha, "--")...)
	if err != nil {
		return nil, err
	}
	raw := string(out)
	if more {
		raw = raw[:strings.LastIndexByte(raw, '\n')+1]
	}
	if raw == "" && !more {
		return nil, nil
	}
	patch, cut := contract.CutPatch(red.Redact(raw), max) // CutPatch makes it valid UTF-8
	return &contract.Diff{Patch: patch, Truncated: more || cut}, nil
}
