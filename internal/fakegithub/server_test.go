package fakegithub

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// Seeded state shared by the tests: installation 1 on "acme" sees
// acme/widgets and acme/gadgets; installation 2 on "other" sees other/thing.
const (
	widgetsID = 101
	gadgetsID = 102
	thingID   = 201
)

func newServer(t *testing.T) *Server {
	t.Helper()
	s := New()
	t.Cleanup(s.Close)
	s.AddInstallation(1, "acme")
	s.AddInstallation(2, "other")
	s.AddRepo(Repo{ID: widgetsID, Owner: "acme", Name: "widgets", InstallationID: 1, Private: true, OwnerPlan: PlanTeam})
	s.AddRepo(Repo{ID: gadgetsID, Owner: "acme", Name: "gadgets", InstallationID: 1})
	s.AddRepo(Repo{ID: thingID, Owner: "other", Name: "thing", InstallationID: 2})
	return s
}

func enterprise(t *testing.T, s *Server, rt http.RoundTripper) *github.Client {
	t.Helper()
	c, err := github.NewClient(&http.Client{Transport: rt}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appClient authenticates as the App (JWT) through ghinstallation.
func appClient(t *testing.T, s *Server) *github.Client {
	t.Helper()
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, s.AppID(), s.AppPrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = strings.TrimSuffix(s.APIURL(), "/")
	return enterprise(t, s, atr)
}

// installClient authenticates as an installation through ghinstallation,
// optionally narrowing its token.
func installClient(t *testing.T, s *Server, id int64, opts *github.InstallationTokenOptions) *github.Client {
	t.Helper()
	itr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), id, s.AppPrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = strings.TrimSuffix(s.APIURL(), "/")
	itr.InstallationTokenOptions = opts
	return enterprise(t, s, itr)
}

// appInstallClient is how the app builds its clients: go-githubapp.
func appInstallClient(t *testing.T, s *Server, id int64) *github.Client {
	t.Helper()
	cc := githubapp.NewClientCreator(s.APIURL(), s.APIURL()+"graphql", s.AppID(), s.AppPrivateKeyPEM())
	c, err := cc.NewInstallationClient(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tokenClient uses a fixed installation token, with no refreshing.
func tokenClient(t *testing.T, s *Server, tok string) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken(tok).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantStatus(t *testing.T, err error, status int) *github.ErrorResponse {
	t.Helper()
	var er *github.ErrorResponse
	if !errors.As(err, &er) {
		t.Fatalf("got error %v, want a GitHub error with status %d", err, status)
	}
	if er.Response.StatusCode != status {
		t.Fatalf("got status %d (%s), want %d", er.Response.StatusCode, er.Message, status)
	}
	return er
}

// signJWT signs claims with RS256, for the claim-checking tests.
func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func appKey(t *testing.T, s *Server) *rsa.PrivateKey {
	t.Helper()
	block, _ := pem.Decode(s.AppPrivateKeyPEM())
	if block == nil || block.Type != "RSA PRIVATE KEY" {
		t.Fatalf("App key is not a PKCS#1 PEM block")
	}
	key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// rawGet sends a GET with an Authorization header and decodes the error
// message, if any.
func rawGet(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body.Message
}

func TestAppJWT(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appClient(t, s)

	app, _, err := gh.Apps.Get(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if app.GetID() != 4242 || app.GetSlug() != "inspect-app" || app.GetName() != "Inspect" {
		t.Errorf("app = %d %q %q", app.GetID(), app.GetSlug(), app.GetName())
	}

	insts, _, err := gh.Apps.ListInstallations(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(insts) != 2 || insts[0].GetAccount().GetLogin() != "acme" {
		t.Errorf("installations = %v", insts)
	}
	in, _, err := gh.Apps.FindRepositoryInstallation(ctx, "acme", "widgets")
	if err != nil || in.GetID() != 1 {
		t.Fatalf("repo installation = %v, %v", in, err)
	}
	_, _, err = gh.Apps.GetInstallation(ctx, 99)
	wantStatus(t, err, http.StatusNotFound)

	// A JWT authorizes only the App endpoints.
	_, _, err = gh.Repositories.Get(ctx, "acme", "widgets")
	if er := wantStatus(t, err, http.StatusForbidden); er.Message != "Resource not accessible by integration" {
		t.Errorf("message = %q", er.Message)
	}

	for _, r := range s.Requests() {
		if r.Auth != "jwt" {
			t.Errorf("%s %s recorded auth %q, want jwt", r.Method, r.Path, r.Auth)
		}
	}
}

func TestJWTFromAnotherKeyIsRefused(t *testing.T) {
	s := newServer(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, s.AppID(), pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = strings.TrimSuffix(s.APIURL(), "/")
	_, _, err = enterprise(t, s, atr).Apps.Get(context.Background(), "")
	if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "A JSON web token could not be decoded" {
		t.Errorf("message = %q", er.Message)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Auth != "jwt" || reqs[0].Status != http.StatusUnauthorized {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestJWTClaims(t *testing.T) {
	s := newServer(t)
	key := appKey(t, s)
	now := time.Now().Unix()
	for _, tc := range []struct {
		name   string
		claims map[string]any
		status int
		msg    string
	}{
		{"string iss", map[string]any{"iss": "4242", "iat": now - 60, "exp": now + 540}, 200, ""},
		{"numeric iss", map[string]any{"iss": 4242, "iat": now - 60, "exp": now + 600}, 200, ""},
		{"expired", map[string]any{"iss": "4242", "iat": now - 700, "exp": now - 100}, 401,
			"'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"},
		{"exp too far", map[string]any{"iss": "4242", "iat": now - 60, "exp": now + 660}, 401,
			"'Expiration time' claim ('exp') is too far in the future"},
		{"iat in the future", map[string]any{"iss": "4242", "iat": now + 120, "exp": now + 300}, 401,
			"'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"},
		{"fractional exp", map[string]any{"iss": "4242", "iat": now - 60, "exp": float64(now) + 300.5}, 401,
			"'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"},
		{"other app", map[string]any{"iss": "1", "iat": now - 60, "exp": now + 300}, 401,
			"A JSON web token could not be decoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := rawGet(t, s.APIURL()+"app", "Bearer "+signJWT(t, key, tc.claims))
			if status != tc.status || msg != tc.msg {
				t.Errorf("got %d %q, want %d %q", status, msg, tc.status, tc.msg)
			}
		})
	}

	// No credential, or a token the server never minted.
	if status, msg := rawGet(t, s.APIURL()+"app", ""); status != 401 || msg != "Requires authentication" {
		t.Errorf("no credential: %d %q", status, msg)
	}
	if status, msg := rawGet(t, s.APIURL()+"repos/acme/widgets", "token ghs_notminted"); status != 401 || msg != "Bad credentials" {
		t.Errorf("unknown token: %d %q", status, msg)
	}
}

func TestInstallationTokenOnAppEndpoint(t *testing.T) {
	s := newServer(t)
	gh := installClient(t, s, 1, nil)
	_, _, err := gh.Apps.ListInstallations(context.Background(), nil)
	if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "A JSON web token could not be decoded" {
		t.Errorf("message = %q", er.Message)
	}
}

func TestTokenScopedByRepositoryIDs(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := installClient(t, s, 1, &github.InstallationTokenOptions{RepositoryIDs: []int64{widgetsID}})

	repo, _, err := gh.Repositories.Get(ctx, "acme", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetFullName() != "acme/widgets" || repo.GetDefaultBranch() != "main" || !repo.GetPrivate() ||
		repo.GetOwner().GetType() != "Organization" {
		t.Errorf("repo = %v", repo)
	}
	// Same installation, but outside the token's scope: invisible, so 404.
	_, _, err = gh.Repositories.Get(ctx, "acme", "gadgets")
	wantStatus(t, err, http.StatusNotFound)
	// Another installation's repo: also 404.
	_, _, err = gh.Repositories.Get(ctx, "other", "thing")
	wantStatus(t, err, http.StatusNotFound)

	// Narrowing by name works too, and a repo the installation lacks is a 422.
	app := appClient(t, s)
	tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, &github.InstallationTokenOptions{Repositories: []string{"gadgets"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Repositories) != 1 || tok.Repositories[0].GetID() != gadgetsID {
		t.Errorf("token = %+v", tok)
	}
	if d := time.Until(tok.GetExpiresAt().Time); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("expires in %v, want an hour", d)
	}
	_, _, err = app.Apps.CreateInstallationToken(ctx, 1, &github.InstallationTokenOptions{RepositoryIDs: []int64{thingID}})
	wantStatus(t, err, http.StatusUnprocessableEntity)
	_, _, err = app.Apps.CreateInstallationToken(ctx, 77, nil)
	wantStatus(t, err, http.StatusNotFound)
}

func TestTokenPermissionNarrowing(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.AddIssue("acme", "widgets", Issue{Number: 1, Title: "bug"})
	id := s.AddComment("acme", "widgets", 1, "alice", "please fix")
	s.SetFile("acme", "widgets", "main", "README.md", []byte("hi\n"))

	gh := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	if _, _, _, err := gh.Repositories.GetContents(ctx, "acme", "widgets", "README.md", nil); err != nil {
		t.Fatalf("contents:read token reading contents: %v", err)
	}
	// Metadata is always granted.
	if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatalf("metadata: %v", err)
	}
	_, _, err := gh.Issues.EditComment(ctx, "acme", "widgets", id, &github.IssueComment{Body: github.String("edited")})
	er := wantStatus(t, err, http.StatusForbidden)
	if er.Message != "Resource not accessible by integration" {
		t.Errorf("message = %q", er.Message)
	}
	if h := er.Response.Header.Get("X-Accepted-GitHub-Permissions"); h != "issues=write; pull_requests=write" {
		t.Errorf("X-Accepted-GitHub-Permissions = %q", h)
	}
	if got := s.Comments("acme", "widgets", 1)[0]; got.Body != "please fix" || got.Edits != 0 {
		t.Errorf("comment changed: %+v", got)
	}

	// The App has no workflows permission and only read on metadata.
	app := appClient(t, s)
	for _, p := range []*github.InstallationPermissions{
		{Workflows: github.String("write")},
		{Metadata: github.String("write")},
	} {
		_, _, err := app.Apps.CreateInstallationToken(ctx, 1, &github.InstallationTokenOptions{Permissions: p})
		wantStatus(t, err, http.StatusUnprocessableEntity)
	}
}

// The recommended pattern for installation tokens, old and new formats.
var tokenPattern = regexp.MustCompile(`^ghs_[A-Za-z0-9._]{36,}$`)

func TestRevocationAndExpiry(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	app := appClient(t, s)

	tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := tok.GetToken()
	if !tokenPattern.MatchString(v) || len(v) < 500 || !strings.HasPrefix(v, "ghs_4242_") {
		t.Errorf("token %q does not look like a new-format installation token", v)
	}
	if got := s.MintedTokens(); len(got) != 1 || got[0] != v {
		t.Errorf("MintedTokens = %v", got)
	}

	gh := tokenClient(t, s, v)
	if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatal(err)
	}
	resp, err := gh.Apps.RevokeInstallationToken(ctx)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	_, _, err = gh.Repositories.Get(ctx, "acme", "widgets")
	if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "Bad credentials" {
		t.Errorf("message = %q", er.Message)
	}

	// Expiry: move the clock past the hour instead of sleeping.
	tok2, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	gh2 := tokenClient(t, s, tok2.GetToken())
	if _, _, err := gh2.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(61 * time.Minute)
	s.SetClock(func() time.Time { return later })
	_, _, err = gh2.Repositories.Get(ctx, "acme", "widgets")
	wantStatus(t, err, http.StatusUnauthorized)
}

func TestGithubappClientCreator(t *testing.T) {
	s := newServer(t)
	gh := appInstallClient(t, s, 1)
	repo, _, err := gh.Repositories.Get(context.Background(), "acme", "gadgets")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetID() != gadgetsID {
		t.Errorf("repo id = %d", repo.GetID())
	}
	mint := s.RequestsMatching("POST", "/app/installations/1/access_tokens")
	if len(mint) != 1 || mint[0].Auth != "jwt" || mint[0].Status != http.StatusCreated {
		t.Errorf("mint requests = %+v", mint)
	}
	get := s.RequestsMatching("GET", "/repos/acme/gadgets")
	if len(get) != 1 || get[0].Auth != "installation" || get[0].InstallationID != 1 || get[0].Status != 200 {
		t.Errorf("get requests = %+v", get)
	}
}

func TestRequestsRecorded(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := installClient(t, s, 1, nil)
	if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatal(err)
	}
	// Unknown routes are GitHub-style 404s, and recorded too.
	req, _ := gh.NewRequest("GET", "repos/acme/widgets/nonsense", nil)
	_, err := gh.Do(ctx, req, nil)
	wantStatus(t, err, http.StatusNotFound)

	reqs := s.Requests()
	want := []struct {
		method, path, auth string
		status             int
	}{
		{"POST", "/app/installations/1/access_tokens", "jwt", 201},
		{"GET", "/repos/acme/widgets", "installation", 200},
		{"GET", "/repos/acme/widgets/nonsense", "installation", 404},
	}
	if len(reqs) != len(want) {
		t.Fatalf("recorded %d requests: %+v", len(reqs), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		if r.Method != w.method || r.Path != w.path || r.Auth != w.auth || r.Status != w.status {
			t.Errorf("request %d = %s %s %s %d, want %+v", i, r.Method, r.Path, r.Auth, r.Status, w)
		}
	}
	if reqs[1].InstallationID != 1 {
		t.Errorf("installation id = %d", reqs[1].InstallationID)
	}

	// Paths without /api/v3 work too, and are recorded the same way.
	s.ResetRequests()
	tok, _, err := appClient(t, s).Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := rawGet(t, s.URL()+"/repos/acme/widgets", "token "+tok.GetToken())
	if status != 200 {
		t.Errorf("unprefixed path: %d", status)
	}
	if got := s.RequestsMatching("GET", "/repos/"); len(got) != 1 || got[0].Path != "/repos/acme/widgets" {
		t.Errorf("unprefixed request recorded as %+v", got)
	}
}

func TestMalformedJSON(t *testing.T) {
	s := newServer(t)
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	tok, _, err := appClient(t, s).Apps.CreateInstallationToken(context.Background(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", s.APIURL()+"repos/acme/widgets/issues/1/comments", strings.NewReader(`{"body":`))
	req.Header.Set("Authorization", "token "+tok.GetToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := github.CheckResponse(resp); err == nil {
		t.Fatal("malformed JSON accepted")
	} else if er := wantStatus(t, err, http.StatusBadRequest); er.Message != "Problems parsing JSON" {
		t.Errorf("message = %q", er.Message)
	}
}

func TestFailNext(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.AddIssue("acme", "widgets", Issue{Number: 3})
	gh := appInstallClient(t, s, 1)

	s.FailNext("POST", "/repos/*/*/issues/*/comments", http.StatusBadGateway)
	_, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 3, &github.IssueComment{Body: github.String("one")})
	wantStatus(t, err, http.StatusBadGateway)
	if got := s.Comments("acme", "widgets", 3); len(got) != 0 {
		t.Errorf("a failed request changed state: %+v", got)
	}
	// Used once: the retry goes through.
	if _, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 3, &github.IssueComment{Body: github.String("one")}); err != nil {
		t.Fatal(err)
	}
	recorded := s.RequestsMatching("POST", "/repos/acme/widgets/issues/3/comments")
	if len(recorded) != 2 || recorded[0].Status != http.StatusBadGateway || recorded[1].Status != http.StatusCreated {
		t.Errorf("recorded %+v", recorded)
	}

	// Failing token minting surfaces through ghinstallation.
	s.FailNext("", "/app/installations/*/access_tokens", http.StatusInternalServerError)
	_, _, err = installClient(t, s, 1, nil).Repositories.Get(ctx, "acme", "widgets")
	if err == nil {
		t.Fatal("want an error when token minting fails")
	}
}

func TestConcurrentUse(t *testing.T) {
	s := newServer(t)
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	gh := appInstallClient(t, s, 1)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := gh.Issues.CreateComment(context.Background(), "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")})
			if err != nil {
				t.Error(err)
			}
			_ = s.Requests()
			_ = s.Comments("acme", "widgets", 1)
		}()
	}
	wg.Wait()
	if got := len(s.Comments("acme", "widgets", 1)); got != 8 {
		t.Errorf("%d comments, want 8", got)
	}
}

// Open servers never share an App key, so one App's key is refused by
// another's server; a closed server's key goes to a later one instead of a
// new key being generated.
func TestOpenServersNeverShareAnAppKey(t *testing.T) {
	a, b := New(), New()
	defer b.Close()
	if a.key.Equal(b.key) {
		a.Close()
		t.Fatal("two open servers have the same App key")
	}
	if status, _ := rawGet(t, b.APIURL()+"app", "Bearer "+signJWT(t, appKey(t, a), map[string]any{
		"iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(), "iss": b.AppID(),
	})); status != http.StatusUnauthorized {
		t.Errorf("server b answered %d to a JWT signed with server a's key, want 401", status)
	}
	aKey := a.key
	a.Close()
	c := New()
	defer c.Close()
	if c.key.Equal(b.key) {
		t.Fatal("a new server has the App key of an open one")
	}
	// Nothing else took it first: this package's tests do not run in
	// parallel.
	if !c.key.Equal(aKey) {
		t.Error("the closed server's key was not reused")
	}
}
