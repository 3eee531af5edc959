package app

import (
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// The app keeps a diff within its own cap, on whole lines, and without a
// token's known form, whatever the upload said of it.
func TestStoredDiffIsCutAndRedactedByTheApp(t *testing.T) {
	token := "ghp_" + strings.Repeat("a", 36)
	line := "+" + strings.Repeat("x", 99) + "\n"
	over := "+token " + token + "\n" + strings.Repeat(line, contract.MaxPatchBytes/len(line)+10)
	d := storedDiff(&contract.Diff{Patch: over})
	if !d.Truncated || len(d.Patch) > contract.MaxPatchBytes || !strings.HasSuffix(d.Patch, "\n") {
		t.Errorf("over the cap: truncated %v, %d bytes", d.Truncated, len(d.Patch))
	}
	if strings.Contains(d.Patch, token) || !strings.HasPrefix(d.Patch, "+token "+contract.Redacted+"\n") {
		t.Errorf("the token was kept: %q", d.Patch[:80])
	}
	if d := storedDiff(&contract.Diff{Patch: line, Truncated: true}); d.Patch != line || !d.Truncated {
		t.Errorf("the supervisor's truncation was lost: %+v", d)
	}
	if storedDiff(nil) != nil {
		t.Error("no diff became one")
	}
}
