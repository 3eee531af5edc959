package fakegithub

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Credential kinds, as recorded in Request.Auth.
const (
	authJWT          = "jwt"
	authInstallation = "installation"
	authNone         = "none"
	authBasic        = "basic"
)

// Permission levels, in increasing order.
var levelRank = map[string]int{"read": 1, "write": 2, "admin": 3}

// defaultAppPermissions is what the App is granted unless a test changes
// it with SetAppPermission; an installation token can be narrowed below
// it but never widened (GitHub docs, "Create an installation access token
// for an app"). They are Inspect's manifest's (.github/app-manifest.json;
// app's TestTheStandInGrantsTheManifestsPermissions keeps them equal), so
// a call needing any other permission fails in the tests as on GitHub.
// "workflows" is deliberately absent: like most Apps, this one may not
// create or update files under .github/workflows/.
var defaultAppPermissions = map[string]string{
	"contents":      "write",
	"issues":        "write",
	"pull_requests": "write",
	"checks":        "write",
	"metadata":      "read",
	"actions":       "read",
	"statuses":      "read",
}

// DefaultAppPermissions are the permissions the App is granted unless a
// test changes them.
func DefaultAppPermissions() map[string]string { return maps.Clone(defaultAppPermissions) }

const (
	jwtMaxLifetime       = 10 * time.Minute // GitHub: exp no more than 10 minutes ahead
	defaultTokenLifetime = time.Hour        // GitHub: installation tokens expire after one hour

	docsGetApp       = "https://docs.github.com/rest/apps/apps#get-the-authenticated-app"
	docsListInst     = "https://docs.github.com/rest/apps/apps#list-installations-for-the-authenticated-app"
	docsGetInst      = "https://docs.github.com/rest/apps/apps#get-an-installation-for-the-authenticated-app"
	docsRepoInst     = "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app"
	docsMintToken    = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	docsRevoke       = "https://docs.github.com/rest/apps/installations#revoke-an-installation-access-token"
	msgNotAccessible = "Resource not accessible by integration"
	msgSuspended     = "This installation has been suspended" // GitHub's 403 when minting for a suspended installation
)

// freeAppKeys are the App keys of closed servers, for the next servers to
// take: generating an RSA-2048 key costs about a tenth of a second, several
// times that under -race, and a test process may start hundreds of
// servers (the app's tests spent a tenth of their CPU here). No two open
// servers share a key, so a test can still hold one App's key against
// another's server.
var freeAppKeys struct {
	sync.Mutex
	keys []freeAppKey
}

type freeAppKey struct {
	key *rsa.PrivateKey
	pem []byte
}

// takeAppKey is a key no open server has: a closed server's, or a new one.
func takeAppKey() (*rsa.PrivateKey, []byte) {
	freeAppKeys.Lock()
	if n := len(freeAppKeys.keys); n > 0 {
		k := freeAppKeys.keys[n-1]
		freeAppKeys.keys = freeAppKeys.keys[:n-1]
		freeAppKeys.Unlock()
		return k.key, k.pem
	}
	freeAppKeys.Unlock()
	return generateAppKey()
}

// giveBackAppKey makes a closed server's key available to the next one.
func giveBackAppKey(key *rsa.PrivateKey, pemBytes []byte) {
	freeAppKeys.Lock()
	defer freeAppKeys.Unlock()
	freeAppKeys.keys = append(freeAppKeys.keys, freeAppKey{key: key, pem: pemBytes})
}

func generateAppKey() (*rsa.PrivateKey, []byte) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: generating the App key: %v", err))
	}
	// GitHub hands out App keys as PKCS#1 ("BEGIN RSA PRIVATE KEY").
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return key, pemBytes
}

type installation struct {
	id          int64
	account     string
	accountType string
	createdAt   time.Time
	suspendedAt time.Time // zero unless suspended
}

// AddInstallation installs the App on an account ("Organization" unless a
// repo added for it says its owner is a "User").
func (s *Server) AddInstallation(id int64, account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addInstallation(id, account)
}

func (s *Server) addInstallation(id int64, account string) *installation {
	if in, ok := s.installations[id]; ok {
		return in
	}
	in := &installation{id: id, account: account, accountType: "Organization", createdAt: s.now()}
	s.installations[id] = in
	s.ensureUser(account, in.accountType)
	return in
}

// SuspendInstallation suspends an installation, as the App's owner can:
// GitHub then blocks the App's access to the account. Minting a token for
// it is refused with GitHub's 403 "This installation has been suspended",
// its tokens already minted stop working (401 "Bad credentials", for REST
// and git alike), and GET /app/installations/{id} shows suspended_at. The
// server's webhook sender is not affected: tests choose what to deliver,
// including the "installation" event with action "suspend" that GitHub
// itself sends. It panics on an unknown installation.
func (s *Server) SuspendInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.installations[id]
	if !ok {
		panic(fmt.Sprintf("fakegithub: SuspendInstallation: no installation %d", id))
	}
	if in.suspendedAt.IsZero() {
		in.suspendedAt = s.now()
	}
	s.revokeTokens(id)
}

// RevokeInstallationTokens revokes every token minted for the
// installation, as if each had been revoked with DELETE
// /installation/token: from then on they are "Bad credentials". New
// tokens can still be minted.
func (s *Server) RevokeInstallationTokens(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revokeTokens(id)
}

// revokeTokens revokes the installation's tokens. Callers hold s.mu.
func (s *Server) revokeTokens(id int64) {
	for _, tok := range s.tokens {
		if tok.installationID == id {
			tok.revoked = true
		}
	}
}

// SetTokenLifetime changes how long installation tokens minted from now
// on live (GitHub's one hour by default), so that a test can have tokens
// expire within seconds of server time, and move the clock (SetClock)
// past them. It panics unless d is positive.
func (s *Server) SetTokenLifetime(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("fakegithub: SetTokenLifetime needs a positive lifetime, not %v", d))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenTTL = d
}

// tokenExpiry is when a token minted now expires. GitHub's expires_at is
// to the second, so the expiry is rounded to a whole second, and rounded
// up: a token then lives at least its lifetime (truncating would cut a
// 2-second token to just over one), and the expiry the client is told is
// exactly the one enforced. Callers hold s.mu.
func (s *Server) tokenExpiry() time.Time {
	ttl := s.tokenTTL
	if ttl == 0 {
		ttl = defaultTokenLifetime
	}
	exact := s.now().Add(ttl)
	exp := exact.Truncate(time.Second)
	if exp.Before(exact) {
		exp = exp.Add(time.Second)
	}
	return exp
}

// token is an installation access token the server minted.
type token struct {
	value          string
	installationID int64
	repoIDs        map[int64]bool // nil: every repo of the installation
	perms          map[string]string
	expiresAt      time.Time
	revoked        bool
}

// SetAppPermission changes what the App was granted, as if its settings
// changed and every installation accepted: level is "read", "write" or
// "admin", or "" to withdraw the permission. Tokens minted afterwards get
// it by default and may ask for it; tokens already minted keep theirs, as
// on GitHub. The App starts without "workflows"; grant "workflows: write"
// to let it create or update files under .github/workflows/.
func (s *Server) SetAppPermission(area, level string) {
	if _, ok := levelRank[level]; !ok && level != "" {
		panic(fmt.Sprintf("fakegithub: unknown permission level %q", level))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if level == "" {
		delete(s.appPerms, area)
		return
	}
	s.appPerms[area] = level
}

// MintedTokens returns every installation token value the server issued,
// in order, revoked or not.
func (s *Server) MintedTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.minted...)
}

// credential is what the Authorization header presented. kind is the kind
// presented, even when it was refused.
type credential struct {
	kind      string
	tok       *token    // a valid installation token
	userLogin string    // a valid user access token's user (oauth.go)
	refusal   *response // non-nil: refuse the request with this
}

func (c credential) installationID() int64 {
	if c.tok == nil {
		return 0
	}
	return c.tok.installationID
}

func refuse(kind, message string) credential {
	r := errResp(http.StatusUnauthorized, message, docsRoot)
	return credential{kind: kind, refusal: &r}
}

// identify checks the Authorization header. Callers hold s.mu.
func (s *Server) identify(header string) credential {
	if header == "" {
		// Every endpoint of this stand-in needs a credential. (GitHub would
		// answer 404 for a private repo, and serve public data.)
		return refuse(authNone, "Requires authentication")
	}
	scheme, value, _ := strings.Cut(header, " ")
	value = strings.TrimSpace(value)
	switch strings.ToLower(scheme) {
	case "bearer", "token":
	case "basic":
		// The App's client id and secret (oauth.go's routes check them).
		return credential{kind: authBasic}
	default:
		return refuse(authNone, "Bad credentials")
	}
	if strings.HasPrefix(value, "ghu_") {
		return s.identifyUser(value)
	}
	if strings.HasPrefix(value, "ghs_") {
		tok, ok := s.tokens[value]
		// An expired or revoked token is as good as an unknown one: GitHub
		// answers 401 "Bad credentials" to all three.
		if !ok || tok.revoked || !s.now().Before(tok.expiresAt) {
			return refuse(authInstallation, "Bad credentials")
		}
		return credential{kind: authInstallation, tok: tok}
	}
	if strings.Count(value, ".") == 2 {
		// GitHub documents "Authorization: Bearer <JWT>"; ghinstallation
		// sends exactly that. "token <JWT>" is accepted here too.
		if msg := s.verifyJWT(value); msg != "" {
			return refuse(authJWT, msg)
		}
		return credential{kind: authJWT}
	}
	return refuse(authNone, "Bad credentials")
}

// verifyJWT checks an App JWT as GitHub does and returns GitHub's message
// for a refusal, or "" when the JWT is good: RS256 signed by the App's key,
// iss the App id (string or number), exp in the future but no more than 10
// minutes ahead, iat not in the future (GitHub's docs advise iat 60 s in
// the past against clock drift, which implies a future iat is refused).
// GitHub also refuses non-integer timestamps.
func (s *Server) verifyJWT(jwt string) string {
	const undecodable = "A JSON web token could not be decoded"
	parts := strings.Split(jwt, ".")
	rawHeader, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	rawClaims, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return undecodable
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(rawHeader, &hdr) != nil || hdr.Alg != "RS256" {
		return undecodable
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, digest[:], sig) != nil {
		return undecodable
	}
	var claims map[string]any
	dec := json.NewDecoder(bytes.NewReader(rawClaims))
	dec.UseNumber()
	if dec.Decode(&claims) != nil {
		return undecodable
	}
	// ghinstallation sends iss as a string ("4242"); others send a number.
	iss := fmt.Sprint(claims["iss"])
	if _, err := strconv.ParseInt(iss, 10, 64); err != nil {
		return "'Issuer' claim ('iss') must be an Integer"
	}
	if iss != strconv.FormatInt(s.appID, 10) {
		return undecodable // no App of that id whose key could have signed it
	}
	now := s.now()
	exp, ok := intClaim(claims["exp"])
	if !ok || !now.Before(time.Unix(exp, 0)) {
		return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	}
	if time.Unix(exp, 0).After(now.Add(jwtMaxLifetime)) {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	iat, ok := intClaim(claims["iat"])
	if !ok || time.Unix(iat, 0).After(now) {
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	}
	return ""
}

func intClaim(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// mintToken makes a value shaped like GitHub's new installation tokens:
// "ghs_<app id>_" and a JWT-like body with dots and underscores, about 520
// characters. It stays within [A-Za-z0-9._], the character set of the
// regular expression GitHub recommends for matching installation tokens.
func (s *Server) mintToken() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
	seg := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
			if err != nil {
				panic(err)
			}
			b[i] = alphabet[k.Int64()]
		}
		return string(b)
	}
	return fmt.Sprintf("ghs_%d_%s.%s.%s", s.appID, seg(36), seg(300), seg(171))
}

// Gates: who may call which route.

// appOnly admits the App's JWT. An installation token on an App endpoint
// gets GitHub's 401 "A JSON web token could not be decoded".
func appOnly(s *Server, c *call) *response {
	if c.cred.kind == authJWT {
		return nil
	}
	r := errResp(http.StatusUnauthorized, "A JSON web token could not be decoded", c.doc)
	return &r
}

// installationOnly admits installation tokens. A JWT authenticates the App
// itself, which may only use the App endpoints; GitHub refuses it elsewhere
// as it refuses an integration anything it was not granted: 403 "Resource
// not accessible by integration".
func installationOnly(s *Server, c *call) *response {
	if c.cred.kind == authInstallation {
		return nil
	}
	r := errResp(http.StatusForbidden, msgNotAccessible, c.doc)
	return &r
}

// repoGate admits an installation token to a /repos/{owner}/{repo}/...
// route when the repo is the installation's and in the token's scope, and
// the token holds one of the permission areas at the level the method
// needs (read for GET, write otherwise). It sets c.repo.
func repoGate(areas ...string) gate {
	return func(s *Server, c *call) *response {
		c.areas = areas
		if c.cred.kind == authUser {
			return s.userRepoGate(c, areas)
		}
		if r := installationOnly(s, c); r != nil {
			return r
		}
		repo := s.repo(c.r.PathValue("owner"), c.r.PathValue("repo"))
		tok := c.cred.tok
		// A repo the token cannot see is answered exactly like one that
		// does not exist: GitHub answers 404, not 403, so as not to reveal
		// that a private repository exists.
		if repo == nil || repo.InstallationID != tok.installationID || (tok.repoIDs != nil && !tok.repoIDs[repo.ID]) {
			r := notFound(c.doc)
			return &r
		}
		need := "write"
		if c.r.Method == http.MethodGet || c.r.Method == http.MethodHead {
			need = "read"
		}
		if !holdsAny(tok.perms, need, areas) {
			// GitHub answers 403 when the repo is visible but the token's
			// permission is too low, and names what would have been enough
			// in X-Accepted-GitHub-Permissions (alternatives separated by
			// "; ").
			r := errResp(http.StatusForbidden, msgNotAccessible, c.doc)
			var alts []string
			for _, a := range areas {
				alts = append(alts, a+"="+need)
			}
			r.header = http.Header{"X-Accepted-Github-Permissions": {strings.Join(alts, "; ")}}
			return &r
		}
		if need == "write" && repo.Archived {
			r := errResp(http.StatusForbidden, "Repository was archived so is read-only.", c.doc)
			return &r
		}
		c.repo = repo
		return nil
	}
}

// userRepoGate admits a user access token (oauth.go) as GitHub does a
// user-to-server request: what both the App (its grant) and the user (their
// role on the repo) may do, on a repo where the App is installed. A repo
// the user cannot see is a 404.
func (s *Server) userRepoGate(c *call, areas []string) *response {
	repo := s.repo(c.r.PathValue("owner"), c.r.PathValue("repo"))
	if repo == nil || repo.InstallationID == 0 || s.installations[repo.InstallationID] == nil || !userCanRead(repo, c.cred.userLogin) {
		r := notFound(c.doc)
		return &r
	}
	need := "write"
	if c.r.Method == http.MethodGet || c.r.Method == http.MethodHead {
		need = "read"
	}
	userLevel := "admin" // the owner's own account
	if !strings.EqualFold(repo.Owner, c.cred.userLogin) {
		userLevel = roleToPermission[repo.roles[strings.ToLower(c.cred.userLogin)]]
	}
	if !holdsAny(s.appPerms, need, areas) || levelRank[userLevel] < levelRank[need] {
		r := errResp(http.StatusForbidden, msgNotAccessible, c.doc)
		return &r
	}
	c.repo = repo
	return nil
}

func holdsAny(perms map[string]string, need string, areas []string) bool {
	for _, a := range areas {
		if levelRank[perms[a]] >= levelRank[need] {
			return true
		}
	}
	return false
}

func (s *Server) appRoutes() {
	s.handle("GET /app", docsGetApp, appOnly, s.getApp)
	s.handle("GET /app/installations", docsListInst, appOnly, s.listInstallations)
	s.handle("GET /app/installations/{id}", docsGetInst, appOnly, s.getInstallation)
	s.handle("POST /app/installations/{id}/access_tokens", docsMintToken, appOnly, s.createToken)
	s.handle("GET /repos/{owner}/{repo}/installation", docsRepoInst, appOnly, s.getRepoInstallation)
	s.handle("DELETE /installation/token", docsRevoke, installationOnly, s.revokeToken)
}

func (s *Server) appJSON() map[string]any {
	return map[string]any{
		"id":           s.appID,
		"slug":         s.appSlug,
		"node_id":      fmt.Sprintf("A_%d", s.appID),
		"name":         s.appName,
		"description":  "",
		"owner":        s.ensureUser("inspecthq", "Organization").json(s),
		"external_url": "https://inspect.example",
		"html_url":     "https://github.com/apps/" + s.appSlug,
		"permissions":  maps.Clone(s.appPerms),
		"events":       s.subscribedEvents(),
		"created_at":   "2024-01-01T00:00:00Z",
		"updated_at":   "2024-01-01T00:00:00Z",
	}
}

// SetAppEvents sets the webhook events the App subscribes to, as its
// owner ticked them in the App's settings (GET /app's events).
func (s *Server) SetAppEvents(events ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appEvents = append([]string{}, events...)
}

// subscribedEvents are the App's events: SetAppEvents', else those an App
// registered before issue 38 had. Callers hold s.mu.
func (s *Server) subscribedEvents() []string {
	if s.appEvents != nil {
		return append([]string{}, s.appEvents...)
	}
	return []string{"issue_comment", "issues", "pull_request", "check_run", "check_suite", "push"}
}

func (s *Server) getApp(c *call) response {
	app := s.appJSON()
	app["installations_count"] = len(s.installations)
	return jsonResp(http.StatusOK, app)
}

func (s *Server) installationJSON(in *installation) map[string]any {
	acct := s.ensureUser(in.account, in.accountType)
	base := strings.TrimSuffix(s.APIURL(), "/")
	return map[string]any{
		"id":                   in.id,
		"app_id":               s.appID,
		"app_slug":             s.appSlug,
		"target_id":            acct.id,
		"target_type":          in.accountType,
		"account":              acct.json(s),
		"repository_selection": "selected",
		"access_tokens_url":    fmt.Sprintf("%s/app/installations/%d/access_tokens", base, in.id),
		"repositories_url":     base + "/installation/repositories",
		"html_url":             fmt.Sprintf("https://github.com/settings/installations/%d", in.id),
		"permissions":          maps.Clone(s.appPerms),
		"events":               s.appJSON()["events"],
		"created_at":           timestamp(in.createdAt),
		"updated_at":           timestamp(in.createdAt),
		"suspended_at":         timestampOrNil(in.suspendedAt),
		"suspended_by":         nil,
		"single_file_name":     nil,
	}
}

func (s *Server) listInstallations(c *call) response {
	ids := make([]int64, 0, len(s.installations))
	for id := range s.installations {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.installationJSON(s.installations[id]))
	}
	return page(c, out)
}

func (s *Server) getInstallation(c *call) response {
	id, _ := c.intPath("id")
	in, ok := s.installations[id]
	if !ok {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.installationJSON(in))
}

func (s *Server) getRepoInstallation(c *call) response {
	repo := s.repo(c.r.PathValue("owner"), c.r.PathValue("repo"))
	if repo == nil {
		return notFound(c.doc)
	}
	in, ok := s.installations[repo.InstallationID]
	if !ok {
		return notFound(c.doc)
	}
	return jsonResp(http.StatusOK, s.installationJSON(in))
}

// createToken mints an installation token. The body may narrow it to some
// repositories (by name or id) and some permissions; asking for a repo the
// installation lacks, or a permission the App lacks, is a 422.
func (s *Server) createToken(c *call) response {
	id, _ := c.intPath("id")
	in, ok := s.installations[id]
	if !ok {
		return notFound(c.doc)
	}
	if !in.suspendedAt.IsZero() {
		return errResp(http.StatusForbidden, msgSuspended, c.doc)
	}
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if bad := c.decode(&req); bad != nil {
		return *bad
	}

	perms := map[string]string{}
	for area, level := range s.appPerms {
		perms[area] = level
	}
	if len(req.Permissions) > 0 {
		perms = map[string]string{"metadata": "read"} // metadata is always granted
		for area, level := range req.Permissions {
			granted, ok := s.appPerms[area]
			if _, known := levelRank[level]; !known {
				return validationFailed(c.doc, fieldError{Resource: "Permission", Field: area, Code: "invalid"})
			}
			if !ok || levelRank[level] > levelRank[granted] {
				return errResp(http.StatusUnprocessableEntity, "The permissions requested are not granted to this installation.", c.doc)
			}
			perms[area] = level
		}
	}

	var repoIDs map[int64]bool
	var repos []*repoState
	if len(req.Repositories) > 0 || len(req.RepositoryIDs) > 0 {
		repoIDs = map[int64]bool{}
		const msg = "There is at least one repository that does not exist or is not accessible to the parent installation."
		for _, name := range req.Repositories {
			r := s.repo(in.account, name)
			if r == nil || r.InstallationID != id {
				return errResp(http.StatusUnprocessableEntity, msg, c.doc)
			}
			if !repoIDs[r.ID] {
				repoIDs[r.ID] = true
				repos = append(repos, r)
			}
		}
		for _, rid := range req.RepositoryIDs {
			r := s.repoByID(rid)
			if r == nil || r.InstallationID != id {
				return errResp(http.StatusUnprocessableEntity, msg, c.doc)
			}
			if !repoIDs[r.ID] {
				repoIDs[r.ID] = true
				repos = append(repos, r)
			}
		}
	}

	tok := &token{
		value:          s.mintToken(),
		installationID: id,
		repoIDs:        repoIDs,
		perms:          perms,
		expiresAt:      s.tokenExpiry(),
	}
	s.tokens[tok.value] = tok
	s.minted = append(s.minted, tok.value)

	body := map[string]any{
		"token":                tok.value,
		"expires_at":           timestamp(tok.expiresAt),
		"permissions":          perms,
		"repository_selection": "all",
	}
	if repoIDs != nil {
		body["repository_selection"] = "selected"
		list := make([]map[string]any, 0, len(repos))
		for _, r := range repos {
			list = append(list, s.repoJSON(r))
		}
		body["repositories"] = list
	}
	return jsonResp(http.StatusCreated, body)
}

// revokeToken revokes the calling token. GitHub answers 204, and the token
// is "Bad credentials" from then on.
func (s *Server) revokeToken(c *call) response {
	c.cred.tok.revoked = true
	return response{status: http.StatusNoContent}
}
