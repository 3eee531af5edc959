package contract

import (
	"strings"
	"testing"
)

// A patch is cut back to whole lines within the cap, made valid UTF-8
// without NULs, and said to be cut only when it was.
func TestCutPatchKeepsWholeLines(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		max      int
		cut      bool
	}{
		{"+a\n+b\n", "+a\n+b\n", 6, false},
		{"+a\n+b\n+c\n", "+a\n+b\n", 7, true},
		{"+" + strings.Repeat("x", 20) + "\n", "", 10, true},
		{"+\xff\x00\n", "+\uFFFD\uFFFD\n", 100, false},
	} {
		got, cut := CutPatch(tc.in, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("CutPatch(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, cut, tc.want, tc.cut)
		}
	}
}

// Evidence whose patch is over the cap, or not text, is refused.
func TestEvidenceRefusesAPatchOverTheCap(t *testing.T) {
	for _, patch := range []string{strings.Repeat("+x\n", MaxPatchBytes/3+1), "+\x00\n", "+\xff\n"} {
		ev := validEvidence()
		ev.Diff = &Diff{Patch: patch}
		err := ev.Validate()
		if err == nil || !strings.Contains(err.Error(), "diff.patch") {
			t.Errorf("a patch of %d bytes: %v", len(patch), err)
		}
	}
	ev := validEvidence()
	ev.Diff = &Diff{Patch: strings.Repeat("+x\n", MaxPatchBytes/3), Truncated: true}
	if err := ev.Validate(); err != nil {
		t.Errorf("a patch at the cap: %v", err)
	}
}
