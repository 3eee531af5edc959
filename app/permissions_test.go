package app_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
)

// TestTheStandInGrantsTheManifestsPermissions: every end-to-end test runs
// with exactly the permissions .github/app-manifest.json asks for, so a
// call that needs another fails there as on GitHub; and the README's
// permission table gives each of them, with its reason.
func TestTheStandInGrantsTheManifestsPermissions(t *testing.T) {
	raw, err := os.ReadFile("../.github/app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		DefaultPermissions map[string]string `json:"default_permissions"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	if got := fakegithub.DefaultAppPermissions(); !maps.Equal(got, manifest.DefaultPermissions) {
		t.Errorf("the stand-in grants %v, the manifest asks for %v", got, manifest.DefaultPermissions)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (read|write) \\| (.+) \\|$").FindAllStringSubmatch(string(readme), -1)
	inTable := map[string]string{}
	for _, r := range rows {
		inTable[r[1]] = r[2]
	}
	for perm, level := range manifest.DefaultPermissions {
		if inTable[perm] != level {
			t.Errorf("the README's permission table gives %s as %q, the manifest as %q", perm, inTable[perm], level)
		}
	}
}
