// Package fakegithub is a stateful stand-in for the GitHub REST API, for
// tests only.
//
// It is an httptest.Server that keeps repositories, issues, pull requests,
// comments, reactions, labels, review requests and review comments, check
// runs and suites (the App's and other Apps'), commit statuses and Actions
// job logs in memory, and each repository's git history in a real bare git
// repository (in a temporary directory the Server removes on Close). It
// answers the way GitHub's public REST documentation says GitHub answers:
// the same status codes, JSON shapes that go-github v62 decodes, error
// bodies such as
// {"message":"Not Found","documentation_url":"..."}, and page-based
// pagination with a Link header. Every request is authenticated (an App JWT
// or an installation token that the server minted itself) and recorded, so
// tests can assert on what a client did.
//
// REST is served under /api/v3/, as GitHub Enterprise Server does, so that
// go-github's WithEnterpriseURLs and go-githubapp's NewClientCreator work
// unchanged. The same routes also answer without the prefix. git itself is
// served at the web root, {URL()}/{owner}/{repo}.git, by git http-backend.
//
// The package is organised by area: this file holds the server, routing and
// response helpers; auth.go the App, its JWTs and installation tokens;
// repos.go repositories, collaborators and contents; issues.go issues,
// comments and reactions; labels.go repository and issue labels; pulls.go
// pull requests and review requests; reviewcomments.go pull request review
// comments, their replies and reactions; checks.go check runs (the App's
// and other Apps'), check suites, annotations and requested actions;
// statuses.go commit statuses; commits.go the endpoints under
// /commits/{ref}/ and the pull requests of a commit; actions.go GitHub
// Actions job logs; git.go the bare repositories and the seeding helpers
// that write history; gitdata.go the Git Data API and commits; hooks.go
// the callbacks tests register (OnRefUpdate); githttp.go git over HTTP;
// record.go request recording, rate assertions and failure injection;
// deliveries.go the webhook sender (signed deliveries to the app under
// test, their log under /app/hook/deliveries, and redelivery).
package fakegithub

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

const (
	// apiPrefix is where GitHub Enterprise Server serves REST, and where
	// go-github's WithEnterpriseURLs points a client.
	apiPrefix = "/api/v3"

	// maxBodyBytes bounds a request body. GitHub refuses webhook payloads
	// over 25 MB; request bodies this stand-in has to parse are far smaller.
	maxBodyBytes = 25 << 20

	docsRoot = "https://docs.github.com/rest"
)

// Server is the stand-in. Create it with New and stop it with Close. All
// methods are safe for concurrent use.
type Server struct {
	ts  *httptest.Server
	mux *http.ServeMux
	// rates counts each installation's requests per hour (countRate).
	rates map[int64]*rateWindow

	appID   int64
	appSlug string
	appName string
	key     *rsa.PrivateKey
	keyPEM  []byte
	// keyGivenBack is set once Close has handed key to the next server.
	keyGivenBack bool

	// clock is the server's clock (see SetClock), read without mu so a
	// request is stamped the moment it arrives (Request.At).
	clock atomic.Pointer[func() time.Time]
	// latency is how long every request waits on arrival before it is
	// answered (see SetLatency), in nanoseconds.
	latency atomic.Int64

	// mu guards everything below. Handlers run with it held (see
	// ServeHTTP), so each request sees and leaves a consistent state.
	mu            sync.Mutex
	appPerms      map[string]string // what the App was granted
	appEvents     []string          // the events the App subscribes to (SetAppEvents)
	gitRoot       string            // the temporary directory of the bare repositories; "" until needed
	lastID        int64
	installations map[int64]*installation
	repos         map[string]*repoState // by lower-case "owner/name"
	users         map[string]*user      // by lower-case login
	tokens        map[string]*token     // by token value
	minted        []string
	requests      []Request
	failures      standin.Rules[failure]
	holds         standin.Rules[*hold]
	refHooks      []func(RefUpdate)   // see OnRefUpdate
	logLinks      map[string]*logLink // job log download links, by token
	tokenTTL      time.Duration       // installation token lifetime; 0 is GitHub's hour (see SetTokenLifetime)
	hook          webhookSender       // the webhook sender's settings, log and redeliveries (deliveries.go)
	manifest      manifestState       // the App manifest flow (manifest.go)
	oauthSt       *oauthState         // the App's user authorization (oauth.go); nil until first used
}

// New starts a stand-in on a loopback port. It gives the App, whose id is
// 4242, slug "inspect-app" and name "Inspect", an RSA-2048 key no other
// open server has (a closed server's, or a fresh one).
func New() *Server {
	s := &Server{
		appID:         4242,
		appSlug:       "inspect-app",
		appName:       "Inspect",
		lastID:        1000,
		installations: map[int64]*installation{},
		repos:         map[string]*repoState{},
		users:         map[string]*user{},
		tokens:        map[string]*token{},
		logLinks:      map[string]*logLink{},
		appPerms:      maps.Clone(defaultAppPermissions),
	}
	s.SetClock(time.Now)
	// The App's bot user has a fixed id, so that its noreply email, which
	// commits it authors carry, is the same in every test.
	s.users[strings.ToLower(s.botLogin())] = &user{login: s.botLogin(), id: botUserID, typ: "Bot"}
	s.key, s.keyPEM = takeAppKey()
	s.mux = http.NewServeMux()
	s.routes()
	s.ts = httptest.NewServer(s)
	return s
}

// routes registers every endpoint. Each area file adds its own.
func (s *Server) routes() {
	s.appRoutes()
	s.repoRoutes()
	s.issueRoutes()
	s.pullRoutes()
	s.labelRoutes()
	s.reviewCommentRoutes()
	s.reviewRoutes() // prevents.go
	s.checkRoutes()
	s.statusRoutes()
	s.commitRoutes()
	s.compareRoutes()
	s.actionsRoutes()
	s.gitDataRoutes()
	s.deliveryRoutes()
	s.manifestRoutes() // manifest.go
	s.oauthRoutes()
	// GitHub answers any unknown route with a 404 and its usual error body.
	// The catch-all also keeps ServeMux from answering 405 for a known path
	// with an unknown method, which GitHub never does.
	s.handle("/", docsRoot, nil, func(c *call) response { return notFound(c.doc) })
}

// Close shuts the server down, waiting for redeliveries and requests in
// flight, and removes the bare repositories. Redeliveries are waited for
// first: the app handling one may still call back into the server.
func (s *Server) Close() {
	s.stopRedeliveries()
	s.ts.Close()
	s.mu.Lock()
	root := s.gitRoot
	giveBack := !s.keyGivenBack
	s.keyGivenBack = true
	s.mu.Unlock()
	if giveBack {
		// Nothing verifies with it any more: ts.Close waited for the
		// requests in flight.
		giveBackAppKey(s.key, s.keyPEM)
	}
	if root != "" {
		_ = os.RemoveAll(root)
	}
}

// URL is the root URL, e.g. http://127.0.0.1:1234.
func (s *Server) URL() string { return s.ts.URL }

// APIURL is where REST is served: URL()+"/api/v3/".
func (s *Server) APIURL() string { return s.ts.URL + apiPrefix + "/" }

// AppID is the App's id (4242).
func (s *Server) AppID() int64 { return s.appID }

// AppSlug is the App's slug ("inspect-app"). Its bot user is AppSlug()+"[bot]".
func (s *Server) AppSlug() string { return s.appSlug }

// AppPrivateKeyPEM is the App's private key as GitHub hands it out: PKCS#1
// in a "RSA PRIVATE KEY" PEM block.
func (s *Server) AppPrivateKeyPEM() []byte { return bytes.Clone(s.keyPEM) }

// SetClock replaces the server's clock (time.Now by default). JWT checks,
// token expiry and every timestamp the server writes follow it, so a test
// can expire a token by moving the clock instead of sleeping. Clients keep
// their own clock: ghinstallation, for one, goes on using a token it
// believes fresh, and gets 401 "Bad credentials".
func (s *Server) SetClock(now func() time.Time) {
	s.clock.Store(&now)
}

// now reads the server's clock.
func (s *Server) now() time.Time { return (*s.clock.Load())() }

// SetLatency makes every request wait d on arrival before it is looked at
// (0, the default, answers at once): GitHub takes about 100 ms to answer
// a request, and a client that sends its requests one after another pays
// that for each. The wait holds no lock, so concurrent requests wait side
// by side, as they do on GitHub. It is real time, not the server's clock
// (SetClock): it stands for the network and GitHub's own work.
func (s *Server) SetLatency(d time.Duration) {
	s.latency.Store(int64(d))
}

// arrive stamps a request's arrival on the server's clock and waits out
// the latency. It reports false when the client gave up meanwhile: such a
// request is neither answered nor recorded, as it never reached GitHub's
// handlers.
func (s *Server) arrive(r *http.Request) (time.Time, bool) {
	at := s.now()
	d := time.Duration(s.latency.Load())
	if d <= 0 {
		return at, true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return at, true
	case <-r.Context().Done():
		return at, false
	}
}

// nextID hands out ids. GitHub's ids for comments, reactions and check runs
// are global, not per repository, and so are these. Callers hold s.mu.
func (s *Server) nextID() int64 {
	s.lastID++
	return s.lastID
}

// ServeHTTP stamps the request's arrival and waits out the latency, strips
// the /api/v3 prefix, identifies the credential, applies any injected
// failure, routes, and records the exchange.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at, reached := s.arrive(r)
	if !reached {
		return
	}
	if owner, name, service, ok := gitRequestPath(r.URL.Path); ok {
		s.serveGit(w, r, at, owner, name, service)
		return
	}
	if tok, ok := strings.CutPrefix(r.URL.Path, logDownloadPrefix); ok {
		s.serveJobLog(w, r, at, tok)
		return
	}
	orig := r.URL.Path
	stripped := stripPrefix(orig)

	body, tooBig := standin.ReadBody(r, maxBodyBytes)

	s.mu.Lock()
	cred := s.identify(r.Header.Get("Authorization"))
	injected, failed := s.takeFailure(r.Method, stripped)
	var rate http.Header
	if !failed {
		rate = s.countRate(cred, at)
	}
	held, _ := s.holds.TakeIf(r.Method, stripped, func(h *hold) bool { return h.wants(body) })
	s.mu.Unlock()
	if held != nil {
		close(held.arrived)
		<-held.release
	}

	var c *call // nil when the request never reached a route
	tee := &responseTee{ResponseWriter: w}
	rw := &standin.StatusWriter{ResponseWriter: tee}
	switch {
	case failed:
		injected.write(rw)
	case tooBig:
		problemsParsingJSON().write(rw)
	default:
		for k, v := range rate {
			rw.Header()[k] = v
		}
		c = &call{cred: cred, body: body, origPath: orig}
		r2 := r.Clone(withCall(r.Context(), c))
		r2.URL.Path = stripped
		r2.URL.RawPath = stripPrefix(r.URL.RawPath)
		s.mux.ServeHTTP(rw, r2)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method:         r.Method,
		Path:           stripped,
		EscapedPath:    stripPrefix(r.URL.EscapedPath()),
		RawQuery:       r.URL.RawQuery,
		Body:           body,
		Auth:           cred.kind,
		InstallationID: cred.installationID(),
		Status:         rw.Status(),
		Response:       tee.body.Bytes(),
		ContentType:    w.Header().Get("Content-Type"),
		At:             at,
		Web:            orig != apiPrefix && !strings.HasPrefix(orig, apiPrefix+"/"),
		GateAreas:      c.gateAreas(),
	})
}

// responseTee keeps a copy of the body written, up to MaxRecordedResponse
// bytes, for Request.Response.
type responseTee struct {
	http.ResponseWriter
	body bytes.Buffer
}

// MaxRecordedResponse bounds what a recorded response keeps.
const MaxRecordedResponse = 4 << 20

func (t *responseTee) Write(b []byte) (int, error) {
	if room := MaxRecordedResponse - t.body.Len(); room > 0 {
		t.body.Write(b[:min(len(b), room)]) // a bytes.Buffer write never fails
	}
	return t.ResponseWriter.Write(b)
}

// Flush passes a flush on, for handlers that stream.
func (t *responseTee) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func stripPrefix(p string) string {
	if p == apiPrefix {
		return "/"
	}
	if strings.HasPrefix(p, apiPrefix+"/") {
		return strings.TrimPrefix(p, apiPrefix)
	}
	return p
}

// call is one request as a handler sees it.
type call struct {
	r        *http.Request
	cred     credential
	body     []byte
	origPath string     // the path as requested, with any /api/v3 prefix
	doc      string     // the endpoint's documentation URL
	repo     *repoState // set by repoGate
	areas    []string   // the permissions repoGate accepts, any one
	// after runs once the handler is done and s.mu is released, before the
	// response is written: callbacks such as OnRefUpdate's, which may call
	// the Server's methods.
	after []func()
}

func (c *call) gateAreas() []string {
	if c == nil {
		return nil
	}
	return c.areas
}

// decode parses the JSON request body into v. GitHub answers 400 "Problems
// parsing JSON" to a body that is not JSON; an empty body counts as {}.
func (c *call) decode(v any) *response {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		r := problemsParsingJSON()
		return &r
	}
	return nil
}

func (c *call) intPath(name string) (int64, bool) {
	n, err := strconv.ParseInt(c.r.PathValue(name), 10, 64)
	return n, err == nil && n > 0
}

// response is what a handler answers. Handlers build it while holding s.mu;
// it is written after the lock is released.
type response struct {
	status int
	body   any    // marshalled as JSON; nil means no body
	raw    []byte // sent as is when non-nil (custom media types)
	header http.Header
}

func (resp response) write(w http.ResponseWriter) {
	standin.WriteResponse(w, resp.status, resp.body, resp.raw, resp.header, http.Header{"X-Github-Media-Type": {"github.v3; format=json"}})
}

func jsonResp(status int, body any) response { return response{status: status, body: body} }

// apiError is GitHub's error body. Recent GitHub responses also carry the
// status as a string.
type apiError struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status"`
}

// fieldError is one entry of a 422's "errors" array. Code is one of
// GitHub's documented codes: missing, missing_field, invalid,
// already_exists, unprocessable, or custom (with a message).
type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func errResp(status int, message, doc string) response {
	if doc == "" {
		doc = docsRoot
	}
	return jsonResp(status, apiError{Message: message, DocumentationURL: doc, Status: strconv.Itoa(status)})
}

func notFound(doc string) response { return errResp(http.StatusNotFound, "Not Found", doc) }

func problemsParsingJSON() response {
	return errResp(http.StatusBadRequest, "Problems parsing JSON", docsRoot)
}

// validationFailed is GitHub's 422 for a request that parsed but does not
// validate.
func validationFailed(doc string, errs ...fieldError) response {
	r := errResp(http.StatusUnprocessableEntity, "Validation Failed", doc)
	e := r.body.(apiError)
	e.Errors = errs
	r.body = e
	return r
}

// page answers a JSON array of one page of items.
func page[T any](c *call, items []T) response {
	out, h := standin.Page(c.r, c.origPath, items)
	return response{status: http.StatusOK, body: out, header: h}
}

// timestamp renders a time as GitHub does: ISO 8601 in UTC, to the second.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func timestampOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return timestamp(t)
}

// handler is an endpoint's logic. It runs with s.mu held.
type handler func(c *call) response

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// gate decides whether the call's credential may use a route. It runs with
// s.mu held and returns nil to let the call through.
type gate func(s *Server, c *call) *response

// wrap turns a handler behind a gate into an http.HandlerFunc: it takes
// s.mu, checks the credential, runs the handler and writes its answer
// after releasing the lock.
func (s *Server) wrap(doc string, g gate, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(callKey{}).(*call)
		if c == nil { // not reached through ServeHTTP
			c = &call{cred: credential{kind: authNone}}
		}
		c.r = r
		c.doc = doc
		s.mu.Lock()
		resp := func() response {
			// A credential that is present but wrong is refused on every
			// route, known or not, before anything else is looked at.
			if c.cred.refusal != nil {
				return *c.cred.refusal
			}
			if g != nil {
				if refused := g(s, c); refused != nil {
					return *refused
				}
			}
			return h(c)
		}()
		s.mu.Unlock()
		for _, f := range c.after {
			f()
		}
		resp.write(w)
	}
}

// handle registers pattern (a Go 1.22 method+wildcard pattern, without the
// /api/v3 prefix). doc is the endpoint's page in GitHub's REST docs, which
// GitHub puts in the documentation_url of its error bodies.
func (s *Server) handle(pattern, doc string, g gate, h handler) {
	s.mux.HandleFunc(pattern, s.wrap(doc, g, h))
}
