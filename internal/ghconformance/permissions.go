package ghconformance

import (
	_ "embed" // the vendored permissions table
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// GitHub's "Permissions required for GitHub Apps" table, for the
// operations Inspect calls: app-permissions.json, vendored by vendor.sh
// from @octokit/app-permissions (generated from docs.github.com). It lists
// routes an installation (or a user, through the App) reaches with a
// permission; the routes it leaves out are in Unlisted, each with why.

//go:embed app-permissions.json
var permissionTable []byte

// Grant is one permission at one access, such as contents:write.
type Grant struct {
	Name   string
	Access string // "read" or "write"
}

func (g Grant) String() string { return g.Name + ":" + g.Access }

// HeldBy tells whether perms (permission → "read", "write" or "admin", as
// a manifest's default_permissions or a token's) grants g.
func (g Grant) HeldBy(perms map[string]string) bool {
	rank := map[string]int{"read": 1, "write": 2, "admin": 3}
	return rank[perms[g.Name]] >= rank[g.Access] && rank[g.Access] > 0
}

func parseGrant(s string) (Grant, error) {
	name, access, ok := strings.Cut(s, ":")
	if !ok || (access != "read" && access != "write") {
		return Grant{}, fmt.Errorf("permission %q is not name:read or name:write", s)
	}
	return Grant{Name: name, Access: access}, nil
}

// Credential kinds an operation takes, as fakegithub records them.
const (
	AuthInstallation = "installation" // an installation token, or a user's through the App
	AuthJWT          = "jwt"          // the App's own JSON web token
	AuthBasic        = "basic"        // the App's client id and secret
	AuthUser         = "user"         // only a user's token
)

// Unlisted is an operation Inspect calls that GitHub's table does not
// list: one no permission governs (the App's own routes, a user's own), or
// one missing from it, whose permission its REST reference page names.
type Unlisted struct {
	// Auth is the credential the operation takes.
	Auth string
	// Grants are the permissions the operation's REST reference page
	// names, any one of which is enough; none where no permission applies.
	Grants []Grant
	Reason string
}

// UnlistedOperations are all of them, by "METHOD /path" as the
// description spells it.
var UnlistedOperations = map[string]Unlisted{
	"GET /app":                 {Auth: AuthJWT, Reason: "the App's own JWT; no installation permission applies"},
	"GET /app/hook/deliveries": {Auth: AuthJWT, Reason: "the App's own JWT (webhook deliveries of the App)"},
	"POST /app/hook/deliveries/{delivery_id}/attempts": {Auth: AuthJWT, Reason: "the App's own JWT (redelivery)"},
	"GET /app/installations/{installation_id}":         {Auth: AuthJWT, Reason: "the App's own JWT"},
	"POST /app/installations/{installation_id}/access_tokens": {Auth: AuthJWT,
		Reason: "the App's own JWT mints the installation token, whose permissions are those of the installation"},
	"GET /repos/{owner}/{repo}/installation": {Auth: AuthJWT, Reason: "the App's own JWT finds a repository's installation"},
	"DELETE /installation/token":             {Auth: AuthInstallation, Reason: "a token revokes itself; no permission is needed"},
	"DELETE /applications/{client_id}/token": {Auth: AuthBasic, Reason: "the App's client id and secret revoke a user's token (sign-out)"},
	"GET /user":                              {Auth: AuthUser, Reason: "the signed-in user's own profile; no App permission applies"},
	"GET /user/installations":                {Auth: AuthUser, Reason: "the installations of this App the user can reach; no App permission applies"},
	"GET /user/installations/{installation_id}/repositories": {Auth: AuthUser,
		Reason: "the repositories of an installation the user can reach; no App permission applies"},
	"GET /repos/{owner}/{repo}/collaborators/{username}/permission": {Auth: AuthInstallation, Grants: []Grant{{"metadata", "read"}},
		Reason: `missing from the table; its REST page ("Get repository permissions for a user") names Metadata read`},
	"GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls": {Auth: AuthInstallation, Grants: []Grant{{"pull_requests", "read"}},
		Reason: `missing from the table; its REST page ("List pull requests associated with a commit") names Pull requests read`},
	"POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies": {Auth: AuthInstallation, Grants: []Grant{{"pull_requests", "write"}},
		Reason: `missing from the table; its REST page ("Create a reply for a review comment") names Pull requests write`},
}

// RoutePermissions is what an operation needs: the operation (as
// "METHOD /path", the description's spelling), the grants any one of
// which is enough, and the operation's Unlisted entry when the table does
// not list it.
type RoutePermissions struct {
	Operation string
	Grants    []Grant
	Unlisted  *Unlisted
}

// Permissions is what the request method and escaped path need.
func (c *Checker) Permissions(method, escapedPath string) (RoutePermissions, error) {
	c.mu.Lock()
	route, _, ok := c.find(method, escapedPath)
	c.mu.Unlock()
	if !ok {
		return RoutePermissions{}, fmt.Errorf("%s %s: %w", method, escapedPath, ErrNoOperation)
	}
	table, err := vendoredPermissions()
	if err != nil {
		return RoutePermissions{}, err
	}
	op := method + " " + route.Path
	// The two are disjoint (TestEveryOperationHasItsPermission).
	if u, ok := UnlistedOperations[op]; ok {
		return RoutePermissions{Operation: op, Grants: u.Grants, Unlisted: &u}, nil
	}
	if len(table[op]) == 0 {
		return RoutePermissions{Operation: op}, fmt.Errorf("%s is neither in GitHub's permissions table nor in UnlistedOperations", op)
	}
	return RoutePermissions{Operation: op, Grants: table[op]}, nil
}

// vendoredPermissions is loadPermissionTable, once.
var vendoredPermissions = sync.OnceValues(loadPermissionTable)

// loadPermissionTable reads app-permissions.json: operation → grants.
func loadPermissionTable() (map[string][]Grant, error) {
	var raw struct {
		Operations map[string][]string `json:"operations"`
	}
	if err := json.Unmarshal(permissionTable, &raw); err != nil {
		return nil, fmt.Errorf("app-permissions.json: %w", err)
	}
	out := map[string][]Grant{}
	for op, grants := range raw.Operations {
		for _, s := range grants {
			g, err := parseGrant(s)
			if err != nil {
				return nil, fmt.Errorf("app-permissions.json: %s: %w", op, err)
			}
			out[op] = append(out[op], g)
		}
	}
	return out, nil
}

// PermissionTable is the vendored table: operation → grants, any one of
// which is enough, with each unlisted operation's grants added.
func PermissionTable() (map[string][]Grant, error) {
	out, err := loadPermissionTable() // a copy of its own, for the caller
	if err != nil {
		return nil, err
	}
	for op, u := range UnlistedOperations {
		out[op] = append(out[op], u.Grants...)
	}
	return out, nil
}
