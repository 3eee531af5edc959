package supervisor

import (
	"context"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/testpaths"
)

// The diffstat the evidence carries (and `inspect run`'s summary shows)
// flags test files by the one rule, over the shared table: every path
// written into a real checkout and staged as the supervisor stages a
// change (decision 0047).
func TestDiffstatFlagsTestFilesByTheSharedTable(t *testing.T) {
	f := newPatchFixture(t, map[string]string{"README.md": "seed\n"})
	for _, p := range testpaths.Table {
		f.write(t, p.Path, "x\n")
	}
	c, err := collectChange(context.Background(), f.g, f.ws, f.sha, contract.ManifestLimits{}, nil, nil, contract.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string]bool{}
	for _, cf := range c.diffstat {
		flagged[cf.Path] = cf.Test
	}
	if len(flagged) != len(testpaths.Table) {
		t.Fatalf("diffstat has %d files, the table %d: %+v", len(flagged), len(testpaths.Table), c.diffstat)
	}
	for _, p := range testpaths.Table {
		test, ok := flagged[p.Path]
		if !ok {
			t.Errorf("%s: not in the diffstat", p.Path)
		} else if test != p.Test {
			t.Errorf("%s: flagged as a test file %v, want %v", p.Path, test, p.Test)
		}
	}
}
