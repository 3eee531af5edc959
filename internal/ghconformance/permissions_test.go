package ghconformance

import (
	"os"
	"strings"
	"testing"
)

// TestEveryOperationHasItsPermission: each operation Inspect calls is
// either in GitHub's permissions table or listed, with why, as unlisted;
// never both, and nothing is listed that Inspect does not call.
func TestEveryOperationHasItsPermission(t *testing.T) {
	raw, err := os.ReadFile("operations.txt")
	if err != nil {
		t.Fatal(err)
	}
	table, err := loadPermissionTable()
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		op := strings.TrimSpace(line)
		if op == "" || strings.HasPrefix(op, "#") {
			continue
		}
		ops[op] = true
		u, unlisted := UnlistedOperations[op]
		switch {
		case len(table[op]) > 0 && unlisted:
			t.Errorf("%s is in GitHub's table and also listed as unlisted", op)
		case len(table[op]) == 0 && !unlisted:
			t.Errorf("%s is not in GitHub's table: add it to UnlistedOperations with why", op)
		case unlisted && u.Reason == "":
			t.Errorf("%s is unlisted without a reason", op)
		case unlisted && u.Auth == AuthInstallation && len(u.Grants) == 0 && !strings.Contains(u.Reason, "no permission"):
			t.Errorf("%s takes an installation token but names no permission", op)
		}
	}
	for op := range UnlistedOperations {
		if !ops[op] {
			t.Errorf("UnlistedOperations has %s, which operations.txt does not", op)
		}
	}
}

// TestPermissionsFollowTheRoute: a request finds its operation's grants
// by its path, whatever its parameters.
func TestPermissionsFollowTheRoute(t *testing.T) {
	c := checker(t)
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/repos/acme/widgets/check-runs", "checks:write"},
		{"GET", "/repos/acme/widgets/contents/.github/inspect.yml", "contents:read"},
		{"DELETE", "/repos/acme/widgets/issues/1/labels/team%2Finspect", "issues:write"},
		{"GET", "/repos/acme/widgets/collaborators/alice/permission", "metadata:read"},
	} {
		rp, err := c.Permissions(tc.method, tc.path)
		if err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.path, err)
			continue
		}
		var got []string
		for _, g := range rp.Grants {
			got = append(got, g.String())
		}
		if !strings.Contains(strings.Join(got, " "), tc.want) {
			t.Errorf("%s %s: grants %v, want %s among them", tc.method, tc.path, got, tc.want)
		}
	}
	rp, err := c.Permissions("POST", "/app/installations/7/access_tokens")
	if err != nil || rp.Unlisted == nil || rp.Unlisted.Auth != AuthJWT || len(rp.Grants) != 0 {
		t.Errorf("minting a token: %+v, %v; want an unlisted JWT route with no grants", rp, err)
	}
	if (Grant{"contents", "read"}).HeldBy(map[string]string{"contents": "write"}) != true {
		t.Error("write does not hold read")
	}
	if (Grant{"contents", "write"}).HeldBy(map[string]string{"contents": "read"}) {
		t.Error("read holds write")
	}
}
