package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// ChannelAttempt is what ChannelServer needs to know of an authenticated
// attempt to make its checks.
type ChannelAttempt struct {
	// Kind is the attempt's (empty: a session).
	Kind AttemptKind
	// Ended says the attempt has ended: cancelled, timed out, replaced or
	// reported.
	Ended bool
	// Expires is when its session token stops working.
	Expires time.Time
}

// ErrClaimRefused is the error a backend's Claim returns for an unknown
// attempt, a wrong claim code or one already spent.
var ErrClaimRefused = errors.New("claim refused")

// ChannelBackend answers the session channel's domain questions for
// ChannelServer, which does the routing, the decoding and its caps, the
// checks of ChannelRefusals in their order, and the encoding. A is the
// backend's own record of an authenticated attempt, handed back to it on
// every later call of the request.
//
// A method's error is written as it is when it is a ChannelRefusal (see
// Refusal); any other is a failure worth retrying (503).
type ChannelBackend[A any] interface {
	// Serves returns nil when the backend serves the route (its
	// ChannelRoute.Pattern), else why not.
	Serves(route string) error
	// Claim exchanges the attempt's claim code for its session token,
	// once; ErrClaimRefused otherwise.
	Claim(ctx context.Context, attemptID, claimCode string) (ClaimResponse, error)
	// Authenticate returns the attempt whose session token this is, or an
	// error (any: the answer is the same).
	Authenticate(ctx context.Context, attemptID, sessionToken string) (A, ChannelAttempt, error)
	// Spec returns a session attempt's Spec, encoded.
	Spec(ctx context.Context, a A) ([]byte, error)
	// RepoToken mints a read-only token for the attempt's repository.
	RepoToken(ctx context.Context, a A) (RepoTokenResponse, error)
	// Progress records a progress event, decoded and validated.
	Progress(ctx context.Context, a A, ev ProgressEvent) error
	// Output records a live output chunk, decoded and validated.
	Output(ctx context.Context, a A, c OutputChunk) error
	// Result records the result upload, decoded and validated against the
	// spec's limits; raw is its body as sent.
	Result(ctx context.Context, a A, up ResultUpload, raw []byte) error
	// Artifact records an artifact whose name the spec's globs match,
	// within the per-file cap.
	Artifact(ctx context.Context, a A, name string, content []byte) error
	// SnapshotJob returns a snapshot build's SnapshotJob, encoded.
	SnapshotJob(ctx context.Context, a A) ([]byte, error)
	// SnapshotResult records a snapshot build's result, decoded and
	// validated.
	SnapshotResult(ctx context.Context, a A, res SnapshotResult) error
	// Turns returns the session's turns after after (none: nil), and
	// records every turn up to after as delivered to the attempt: the
	// supervisor that asks for what follows N has N (decision 0071).
	Turns(ctx context.Context, a A, after int) ([]Turn, error)
	// Recorder keeps the running agent's flight recorder, decoded and
	// validated (the newest one counts).
	Recorder(ctx context.Context, a A, rec Recorder) error
	// AgentState returns the packed agent state the attempt's spec names
	// (Spec.AgentState); ErrAgentStateGone when it is not kept.
	AgentState(ctx context.Context, a A) ([]byte, error)
	// Egress returns the handler of an egress route (PathEgressModel,
	// PathEgressRegistry) for the attempt.
	Egress(ctx context.Context, a A, route string) http.Handler
}

// ChannelServerOptions are a ChannelServer's optional parts.
type ChannelServerOptions struct {
	// Now is the clock the token's expiry is checked against (time.Now
	// when nil).
	Now func() time.Time
	// OnRefusal, when set, is told of every refused request: the status,
	// and the refusal or the error behind it. It must not block.
	OnRefusal func(r *http.Request, status int, err error)
	// TurnsPoll is how often a waiting turns request asks the backend
	// again (TurnsPollInterval when 0).
	TurnsPoll time.Duration
}

// ChannelServer serves the session channel (every route of
// ChannelRefusals) over a backend.
type ChannelServer[A any] struct {
	backend   ChannelBackend[A]
	now       func() time.Time
	onRefusal func(*http.Request, int, error)
	turnsPoll time.Duration
	mux       *http.ServeMux
}

// NewChannelServer serves the session channel over backend.
func NewChannelServer[A any](backend ChannelBackend[A], o ChannelServerOptions) *ChannelServer[A] {
	s := &ChannelServer[A]{backend: backend, now: o.Now, onRefusal: o.OnRefusal, mux: http.NewServeMux()}
	if s.now == nil {
		s.now = time.Now
	}
	s.turnsPoll = o.TurnsPoll
	if s.turnsPoll <= 0 {
		s.turnsPoll = TurnsPollInterval
	}
	s.Register(s.mux)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusNotFound, Code: ErrorInvalid, Message: "no such route"}, nil)
	})
	return s
}

// ServeHTTP serves the channel's routes, and 404 for any other.
func (s *ChannelServer[A]) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Register adds the channel's routes (only those) to mux, for a server
// that serves other routes beside them.
func (s *ChannelServer[A]) Register(mux *http.ServeMux) {
	for _, route := range ChannelRefusals {
		if route.Pattern == RouteClaim {
			mux.HandleFunc(route.Pattern, s.claim)
			continue
		}
		mux.HandleFunc(route.Pattern, s.authed(route, s.work(route.Pattern)))
	}
}

type channelRouteKey struct{}

// ChannelRouteOf is the route (its ChannelRoute.Pattern) whose request ctx
// serves, for a backend's logs.
func ChannelRouteOf(ctx context.Context) string {
	p, _ := ctx.Value(channelRouteKey{}).(string) // "" outside a request
	return p
}

// refuse writes ref and tells OnRefusal, with err when there is one behind
// it.
func (s *ChannelServer[A]) refuse(w http.ResponseWriter, r *http.Request, ref ChannelRefusal, err error) {
	if s.onRefusal != nil {
		if err == nil {
			err = ref
		}
		s.onRefusal(r, ref.Status, err)
	}
	WriteError(w, ref.Status, ref.Code, ref.Message)
}

// fail answers a backend's error: its own refusal as it is, any other as
// worth retrying.
func (s *ChannelServer[A]) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ref ChannelRefusal
	if !errors.As(err, &ref) {
		ref = ChannelRefusal{Status: http.StatusServiceUnavailable, Code: ErrorInvalid, Message: "try again"}
	}
	s.refuse(w, r, ref, err)
}

func routeOf(pattern string) ChannelRoute {
	for _, r := range ChannelRefusals {
		if r.Pattern == pattern {
			return r
		}
	}
	panic("contract: no channel route " + pattern) // the table and Register disagree: a bug here
}

func (s *ChannelServer[A]) claim(w http.ResponseWriter, r *http.Request) {
	ctx := context.WithValue(r.Context(), channelRouteKey{}, RouteClaim)
	r = r.WithContext(ctx) // so a refusal's hook sees the route too
	id := r.PathValue(PathValueAttempt)
	route := routeOf(RouteClaim)
	req, err := DecodeClaimRequest(r.Body)
	for _, check := range route.Checks {
		var failed bool
		switch check.Check {
		case CheckClaimBody:
			failed = err != nil
		case CheckSpecVersion:
			failed = req.SpecVersion != SpecVersion
		case CheckAttemptID:
			failed = req.AttemptID != id
		case CheckClaimCode:
			resp, cerr := s.backend.Claim(ctx, id, req.ClaimCode)
			switch {
			case errors.Is(cerr, ErrClaimRefused):
				failed, err = true, cerr
			case cerr != nil:
				// Nothing was spent: try again.
				s.fail(w, r, cerr)
				return
			default:
				WriteJSON(w, 0, resp)
				return
			}
		}
		if failed {
			s.refuse(w, r, check, err)
			return
		}
	}
	panic("contract: the claim route has no claim-code check") // the table is wrong: a bug here
}

// authed makes route's checks, then does its work.
func (s *ChannelServer[A]) authed(route ChannelRoute, work func(http.ResponseWriter, *http.Request, A)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), channelRouteKey{}, route.Pattern))
		var (
			a      A
			status ChannelAttempt
		)
		for _, check := range route.Checks {
			var (
				failed bool
				err    error
			)
			switch check.Check {
			case CheckSessionToken:
				a, status, err = s.backend.Authenticate(r.Context(), r.PathValue(PathValueAttempt), r.Header.Get(HeaderSessionToken))
				failed = err != nil
			case CheckKind:
				failed = !route.Serves(status.Kind)
			case CheckEnded:
				failed = status.Ended
			case CheckExpired:
				failed = s.now().After(status.Expires)
			case CheckServed:
				if err = s.backend.Serves(route.Pattern); err != nil {
					failed, check.Message = true, err.Error()
				}
			}
			if failed {
				s.refuse(w, r, check, err)
				return
			}
		}
		work(w, r, a)
	}
}

// work is what a route does once its checks pass.
func (s *ChannelServer[A]) work(pattern string) func(http.ResponseWriter, *http.Request, A) {
	switch pattern {
	case RouteSpec:
		return s.spec
	case RouteRepoToken:
		return s.repoToken
	case RouteProgress:
		return s.progress
	case RouteOutput:
		return s.output
	case RouteResult:
		return s.result
	case RouteArtifact:
		return s.artifact
	case RouteSnapshotJob:
		return s.snapshotJob
	case RouteSnapshotResult:
		return s.snapshotResult
	case RouteTurns:
		return s.turns
	case RouteRecorder:
		return s.recorder
	case RouteAgentState:
		return s.agentState
	case PathEgressModel, PathEgressRegistry:
		return func(w http.ResponseWriter, r *http.Request, a A) {
			s.backend.Egress(r.Context(), a, pattern).ServeHTTP(w, r)
		}
	}
	panic("contract: no work for channel route " + pattern) // the table names a route this file does not serve: a bug here
}

// writeEncoded writes a document the backend holds encoded (and validated
// when it was made).
func writeEncoded(w http.ResponseWriter, doc []byte) {
	w.Header().Set("Content-Type", ContentTypeJSON)
	_, _ = w.Write(doc) // the peer may be gone; nothing to do
}

func (s *ChannelServer[A]) spec(w http.ResponseWriter, r *http.Request, a A) {
	doc, err := s.backend.Spec(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEncoded(w, doc)
}

func (s *ChannelServer[A]) snapshotJob(w http.ResponseWriter, r *http.Request, a A) {
	doc, err := s.backend.SnapshotJob(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEncoded(w, doc)
}

// specOf is the attempt's spec, for the limits of what it uploads.
func (s *ChannelServer[A]) specOf(w http.ResponseWriter, r *http.Request, a A) (Spec, bool) {
	doc, err := s.backend.Spec(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return Spec{}, false
	}
	var spec Spec
	if err := json.Unmarshal(doc, &spec); err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusInternalServerError, Code: ErrorInvalid, Message: "stored spec unreadable"}, err)
		return Spec{}, false
	}
	return spec, true
}

func (s *ChannelServer[A]) repoToken(w http.ResponseWriter, r *http.Request, a A) {
	tok, err := s.backend.RepoToken(r.Context(), a)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	WriteJSON(w, 0, tok)
}

func (s *ChannelServer[A]) progress(w http.ResponseWriter, r *http.Request, a A) {
	ev, err := DecodeProgressEvent(r.Body)
	if err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "invalid progress event: " + err.Error()}, err)
		return
	}
	if err := s.backend.Progress(r.Context(), a, ev); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *ChannelServer[A]) output(w http.ResponseWriter, r *http.Request, a A) {
	c, err := DecodeOutputChunk(r.Body)
	if err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "invalid output chunk: " + err.Error()}, err)
		return
	}
	if err := s.backend.Output(r.Context(), a, c); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *ChannelServer[A]) result(w http.ResponseWriter, r *http.Request, a A) {
	spec, ok := s.specOf(w, r, a)
	if !ok {
		return
	}
	// One byte past the cap, so that the decoder sees an upload over it.
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxResultUploadBytes+1))
	if err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "reading the result"}, err)
		return
	}
	up, err := DecodeResultUpload(bytes.NewReader(raw), spec.Limits.Manifest())
	switch {
	case errors.Is(err, ErrTooLarge):
		s.refuse(w, r, ChannelRefusal{Status: http.StatusRequestEntityTooLarge, Code: ErrorTooLarge, Message: "result too large"}, err)
		return
	case err != nil:
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "invalid result: " + err.Error()}, err)
		return
	}
	if err := s.backend.Result(r.Context(), a, up, raw); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// artifact takes one artifact the supervisor collected after verify
// (PathArtifact). Nothing of the upload is trusted but its bytes: the name
// must be one the spec's globs match (its artifacts' or a verify
// command's screenshots'), the body within the per-file cap
// (read no further).
func (s *ChannelServer[A]) artifact(w http.ResponseWriter, r *http.Request, a A) {
	spec, ok := s.specOf(w, r, a)
	if !ok {
		return
	}
	name := r.URL.Query().Get("name")
	caps := spec.Artifacts
	switch {
	case caps == nil:
		s.refuse(w, r, ChannelRefusal{Status: http.StatusForbidden, Code: ErrorNotAllowed, Message: "this session collects no artifacts"}, nil)
		return
	case ValidatePath(name) != nil || (!MatchArtifact(caps.Patterns, name) && ScreenshotOf(spec.Verify, name) == ""):
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "the name is not one the repository's artifacts: or screenshots: globs match"}, nil)
		return
	}
	content, err := io.ReadAll(io.LimitReader(r.Body, caps.MaxFileBytes+1))
	switch {
	case err != nil:
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "reading the artifact"}, err)
		return
	case int64(len(content)) > caps.MaxFileBytes:
		s.refuse(w, r, ChannelRefusal{Status: http.StatusRequestEntityTooLarge, Code: ErrorTooLarge, Message: "the artifact is over the per-file cap"}, nil)
		return
	}
	if err := s.backend.Artifact(r.Context(), a, name, content); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *ChannelServer[A]) snapshotResult(w http.ResponseWriter, r *http.Request, a A) {
	res, err := DecodeSnapshotResult(r.Body)
	if err != nil {
		s.refuse(w, r, ChannelRefusal{Status: http.StatusBadRequest, Code: ErrorInvalid, Message: "invalid snapshot result: " + err.Error()}, err)
		return
	}
	if err := s.backend.SnapshotResult(r.Context(), a, res); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
