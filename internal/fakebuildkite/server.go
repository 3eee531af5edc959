// Package fakebuildkite is a stateful stand-in for the Buildkite REST API
// (v2) and its agents, for tests only. cmd/inspect never imports it.
//
// It is an httptest.Server that keeps pipelines, builds, jobs, artifacts and
// annotations in memory, answering with the status codes and JSON shapes of
// Buildkite's public REST documentation, in the form go-buildkite v3.13.0
// decodes. Every API request must carry "Authorization: Bearer <Token()>";
// every request is recorded for assertions, and failures can be injected.
//
// Creating a build does what an agent would: the pipeline's YAML is parsed
// (exactly one command step, no plugins, checkout skipped, a queue and a
// timeout; what is wrong is recorded in Violations rather than refused), the
// step's command runs as a real local process in a fresh work directory with
// the BUILDKITE_* environment an agent sets, and afterwards the files the
// step's artifact_paths match are uploaded as the build's artifacts. Builds
// move scheduled → running → passed/failed (canceling → canceled on cancel),
// and the configured webhook receiver is sent build.* and job.* events,
// authenticated by X-Buildkite-Token or X-Buildkite-Signature.
//
// Files: server.go the server, routing, auth and response helpers; record.go
// request recording and fault injection; pipelines.go pipelines and their
// YAML; builds.go builds, annotations and artifacts; joblog.go job logs;
// agent.go running steps; webhooks.go outgoing webhooks.
package fakebuildkite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

const (
	apiPrefix    = "/v2"
	blobPrefix   = "/_artifacts/" // where artifact downloads redirect, as Buildkite redirects to S3
	maxBodyBytes = 10 << 20
	webHost      = "https://buildkite.example"
)

// Server is the stand-in. Create it with New; it closes itself when the
// test ends (Close may also be called earlier). Methods are safe for
// concurrent use.
type Server struct {
	ts       *httptest.Server
	mux      *http.ServeMux
	token    string
	agentTok string

	// mu guards everything below.
	mu          sync.Mutex
	now         func() time.Time
	pipelines   map[string]*pipeline // by "org/slug"
	clusters    map[string]bool      // by "org/cluster id" (AddCluster)
	builds      map[string][]*build  // by "org/slug", in creation order
	blobs       map[string]*artifact // by blob key
	requests    []Request
	failures    standin.Rules[failRule]
	violations  []string
	expect      Expectations
	runner      Runner
	grace       time.Duration
	hold        bool
	held        []*build
	annotations map[string][]*annotation // by build id

	// outgoing webhooks
	hook       hookConfig
	dropHooks  int
	outbox     []*delivery
	deliveries []Delivery
	outboxWake chan struct{}

	// busy counts running builds and undelivered webhooks; idle is closed
	// whenever busy is zero.
	busy   int
	idle   chan struct{}
	closed bool
	wg     sync.WaitGroup
	stop   chan struct{}
}

// New starts a stand-in on a loopback port and registers Close with
// t.Cleanup.
func New(t testing.TB) *Server {
	s := &Server{
		token:       "bkua_" + randHex(20),
		agentTok:    "bkaj_" + randHex(20),
		now:         time.Now,
		pipelines:   map[string]*pipeline{},
		clusters:    map[string]bool{},
		builds:      map[string][]*build{},
		blobs:       map[string]*artifact{},
		annotations: map[string][]*annotation{},
		grace:       10 * time.Second,
		idle:        make(chan struct{}),
		outboxWake:  make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	close(s.idle)
	s.runner = s.defaultRunner
	s.mux = http.NewServeMux()
	s.routes()
	s.ts = httptest.NewServer(s)
	s.wg.Add(1)
	go s.deliverLoop()
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Close cancels every running build, waits for builds and webhook
// deliveries to finish, and shuts the server down. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for _, bs := range s.builds {
		for _, b := range bs {
			if b.cancel != nil {
				b.cancel()
			}
		}
	}
	s.held = nil
	s.mu.Unlock()
	// Let cancelled builds finish and their webhooks go out, then stop.
	_ = s.Wait(context.Background())
	close(s.stop)
	s.wg.Wait()
	s.ts.Close()
}

// URL is the REST base that go-buildkite's WithBaseURL takes, with the
// trailing slash it needs: http://127.0.0.1:PORT/ . go-buildkite adds
// "v2/..." itself.
func (s *Server) URL() string { return s.ts.URL + "/" }

// APIURL is where REST is served: URL()+"v2/".
func (s *Server) APIURL() string { return s.ts.URL + apiPrefix + "/" }

// Token is the API access token the server accepts.
func (s *Server) Token() string { return s.token }

// SetClock replaces the server's clock (time.Now by default). Timestamps in
// JSON and the webhook signature's timestamp follow it.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetCancelGrace sets how long a cancelled step may take to exit after its
// context is cancelled (the agent's SIGTERM) before the stand-in gives up on
// it and marks the job canceled anyway (10 s by default, as the agent's
// cancel-grace-period). The default runner kills the process then.
func (s *Server) SetCancelGrace(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = d
}

// Wait blocks until no build is running and every webhook queued so far has
// been delivered (or dropped), or ctx ends. Held builds do not count.
func (s *Server) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
			// Re-check: work may have started between close and now.
			s.mu.Lock()
			done := s.busy == 0
			s.mu.Unlock()
			if done {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// addBusy and doneBusy track work for Wait. Callers hold s.mu.
func (s *Server) addBusy() {
	if s.busy == 0 {
		s.idle = make(chan struct{})
	}
	s.busy++
}

func (s *Server) doneBusy() {
	s.busy--
	if s.busy == 0 {
		close(s.idle)
	}
}

func (s *Server) routes() {
	p := "/v2/organizations/{org}/pipelines"
	s.handle("GET "+p, s.listPipelines)
	s.handle("POST "+p, s.createPipeline)
	s.handle("GET "+p+"/{pipeline}", s.getPipeline)
	s.handle("PATCH "+p+"/{pipeline}", s.updatePipeline)
	b := p + "/{pipeline}/builds"
	s.handle("GET "+b, s.listBuilds)
	s.handle("POST "+b, s.createBuild)
	s.handle("GET "+b+"/{number}", s.getBuild)
	s.handle("PUT "+b+"/{number}/cancel", s.cancelBuild)
	s.handle("GET "+b+"/{number}/artifacts", s.listArtifacts)
	s.handle("GET "+b+"/{number}/jobs/{job}/artifacts", s.listJobArtifacts)
	s.handle("GET "+b+"/{number}/jobs/{job}/artifacts/{id}", s.getArtifact)
	s.handle("GET "+b+"/{number}/jobs/{job}/artifacts/{id}/download", s.downloadArtifact)
	s.handle("GET "+b+"/{number}/jobs/{job}/log", s.getJobLog)
	s.handle("GET "+b+"/{number}/jobs/{job}/log.txt", s.getJobLog)
	s.handle("GET "+b+"/{number}/annotations", s.listAnnotations)
	s.handle("POST "+b+"/{number}/annotations", s.createAnnotation)
	s.handle("/", func(*call) response { return notFound() })
}

// ServeHTTP authenticates, applies injected failures, routes and records.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, tooBig := standin.ReadBody(r, maxBodyBytes)
	rw := &standin.StatusWriter{ResponseWriter: w}

	if strings.HasPrefix(r.URL.Path, blobPrefix) {
		// The pre-signed storage URL: no API token needed, like S3.
		s.serveBlob(rw, r)
		s.record(r, body, "none", rw.Status())
		return
	}

	auth := r.Header.Get("Authorization")
	kind := "none"
	if auth != "" {
		kind = "bearer"
	}
	s.mu.Lock()
	injected, failed := s.takeFailure(r.Method, r.URL.Path)
	s.mu.Unlock()

	switch {
	case failed:
		injected.write(rw)
	case auth != "Bearer "+s.token:
		// Buildkite answers a missing or wrong token with 401.
		errResp(http.StatusUnauthorized, "Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication").write(rw)
	case tooBig:
		errResp(http.StatusBadRequest, "Request body too large").write(rw)
	default:
		s.mux.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
	}
	s.record(r, body, kind, rw.Status())
}

type bodyKey struct{}

// call is one API request as a handler sees it.
type call struct {
	r    *http.Request
	body []byte
}

func (c *call) decode(v any) *response {
	if len(strings.TrimSpace(string(c.body))) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		r := errResp(http.StatusBadRequest, "Body must be valid JSON: "+err.Error())
		return &r
	}
	return nil
}

type response struct {
	status int
	body   any
	raw    []byte
	header http.Header
}

func (resp response) write(w http.ResponseWriter) {
	standin.WriteResponse(w, resp.status, resp.body, resp.raw, resp.header, nil)
}

func jsonResp(status int, body any) response { return response{status: status, body: body} }

// errResp is Buildkite's error body: {"message": "..."} (422s add
// "errors").
func errResp(status int, message string) response {
	return jsonResp(status, map[string]any{"message": message})
}

func notFound() response { return errResp(http.StatusNotFound, "No route matches") }

func unprocessable(message string, errs ...string) response {
	body := map[string]any{"message": message}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	return jsonResp(http.StatusUnprocessableEntity, body)
}

type handler func(c *call) response

// handle registers a Go 1.22 pattern. Handlers run with s.mu held; the
// response is written after it is released.
func (s *Server) handle(pattern string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		body, _ := r.Context().Value(bodyKey{}).([]byte)
		c := &call{r: r, body: body}
		s.mu.Lock()
		resp := h(c)
		s.mu.Unlock()
		resp.write(w)
	})
}

func page[T any](c *call, items []T) response {
	out, h := standin.Page(c.r, c.r.URL.Path, items)
	return response{status: http.StatusOK, body: out, header: h}
}

// ts renders a time as the REST API does (RFC 3339 with milliseconds, UTC);
// nil for the zero time.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
