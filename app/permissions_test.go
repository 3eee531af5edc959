package app_test

import (
	"maps"
	"os"
	"regexp"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/ghconformance"
)

// TestTheStandInGrantsTheManifestsPermissions: every end-to-end test runs
// with exactly the permissions .github/app-manifest.json asks for, so a
// call that needs another fails there as on GitHub; and the deploy guide's
// permission table (docs/deploy.md, "Registering the GitHub App") gives each of them, with its reason.
func TestTheStandInGrantsTheManifestsPermissions(t *testing.T) {
	asked, err := manifestPermissions()
	if err != nil {
		t.Fatal(err)
	}
	if got := fakegithub.DefaultAppPermissions(); !maps.Equal(got, asked) {
		t.Errorf("the stand-in grants %v, the manifest asks for %v", got, asked)
	}
	readme, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (read|write) \\| (.+) \\|$").FindAllStringSubmatch(string(readme), -1)
	inTable := map[string]string{}
	for _, r := range rows {
		inTable[r[1]] = r[2]
	}
	for perm, level := range asked {
		if inTable[perm] != level {
			t.Errorf("docs/deploy.md's permission table gives %s as %q, the manifest as %q", perm, inTable[perm], level)
		}
	}
	for perm := range inTable {
		if _, asked := asked[perm]; !asked {
			t.Errorf("docs/deploy.md's permission table lists %s, which the manifest does not ask for", perm)
		}
	}
}

// TestTheManifestAsksForNothingUnused: each permission the manifest asks
// for, at its level, is one GitHub's own permissions table
// (ghconformance.PermissionTable) names for an operation Inspect calls.
// (Every request the end-to-end tests record is checked against the same
// table and the manifest: checkPermission.)
func TestTheManifestAsksForNothingUnused(t *testing.T) {
	asked, err := manifestPermissions()
	if err != nil {
		t.Fatal(err)
	}
	table, err := ghconformance.PermissionTable()
	if err != nil {
		t.Fatal(err)
	}
	used := map[ghconformance.Grant]bool{}
	for _, grants := range table {
		for _, g := range grants {
			used[g] = true
		}
	}
	for perm, level := range asked {
		if !used[ghconformance.Grant{Name: perm, Access: level}] {
			t.Errorf("the manifest asks for %s: %s, which no operation Inspect calls needs", perm, level)
		}
	}
}
