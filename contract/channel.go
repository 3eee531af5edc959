package contract

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// ChannelVersion names the version of the session channel: the messages
// below and the paths they travel on. Channel messages carry no version
// field of their own; the "/v1/" path prefix is their version, and a new
// version gets new paths, so both can be served during an upgrade.
const ChannelVersion = "inspect.session-channel/v1"

// Path wildcards, as http.ServeMux patterns name them (r.PathValue).
const (
	PathValueAttempt  = "attempt"
	PathValueProvider = "provider"
	PathValueRegistry = "registry"
	PathValueRest     = "path"
)

// Session channel paths, as http.ServeMux patterns. The supervisor calls
// every one of them; the sandbox calls none (its egress requests are relayed
// by the supervisor, which adds the session token). Fill {attempt} with
// AttemptPath. The Route constants below add each path's method.
const (
	// PathClaim: POST a ClaimRequest, get a ClaimResponse. No session
	// token yet: the single-use claim code in the body is the
	// authentication. A second use of a code is refused (ErrorClaimUsed).
	PathClaim = "/v1/attempts/{attempt}/claim"
	// PathSpec: GET the attempt's Spec. Session token.
	PathSpec = "/v1/attempts/{attempt}/spec"
	// PathRepoToken: POST (it mints) for a RepoTokenResponse: a read-only
	// token for the one repository, revoked when the attempt ends. Session
	// token. For the supervisor's own fetch only; it never enters the
	// sandbox.
	PathRepoToken = "/v1/attempts/{attempt}/repo-token"
	// PathProgress: POST one ProgressEvent. Session token. The app keeps
	// events in seq order and ignores a seq it has seen.
	PathProgress = "/v1/attempts/{attempt}/progress"
	// PathResult: PUT a ResultUpload. Session token. Idempotent: a second
	// upload of the same attempt's result is acknowledged and changes
	// nothing, so the supervisor may retry freely.
	PathResult = "/v1/attempts/{attempt}/result"
	// PathArtifact: PUT one artifact's bytes (Content-Type
	// application/octet-stream), its workspace path in the "name" query
	// parameter, before the result. Session token. Idempotent per name.
	PathArtifact = "/v1/attempts/{attempt}/artifacts"
	// PathSnapshotJob: GET the SnapshotJob of a snapshot build attempt.
	PathSnapshotJob = "/v1/attempts/{attempt}/snapshot-job"
	// PathSnapshotResult: PUT the SnapshotResult.
	PathSnapshotResult = "/v1/attempts/{attempt}/snapshot-result"
	// PathEgress is the prefix of the egress proxy, the sandbox's only way
	// out. Session token, added by the supervisor as it relays; the app
	// adds the upstream credential and forwards only to what the server
	// allows.
	PathEgress = "/v1/attempts/{attempt}/egress/"
	// PathEgressModel: any method; a model provider's API, by the
	// provider's server-side name, path preserved. The app counts tokens
	// and stops a session over budget. Session token.
	PathEgressModel = "/v1/attempts/{attempt}/egress/model/{provider}/{path...}"
	// PathEgressRegistry: GET (and HEAD); a package registry the server
	// allows, by its server-side name, path preserved. Session token.
	PathEgressRegistry = "/v1/attempts/{attempt}/egress/registry/{registry}/{path...}"
)

// Routes: each path with its method, ready for http.ServeMux.Handle.
const (
	RouteClaim     = "POST " + PathClaim
	RouteSpec      = "GET " + PathSpec
	RouteRepoToken = "POST " + PathRepoToken
	RouteProgress  = "POST " + PathProgress
	RouteResult    = "PUT " + PathResult
	RouteArtifact  = "PUT " + PathArtifact
	// RouteSnapshotJob and RouteSnapshotResult serve snapshot builds.
	RouteSnapshotJob    = "GET " + PathSnapshotJob
	RouteSnapshotResult = "PUT " + PathSnapshotResult
)

// Headers of the session channel.
const (
	// HeaderSessionToken carries the attempt's session token on every
	// request after the claim. It is not Authorization, so that an egress
	// request can carry the sandbox's own (dummy) Authorization through
	// untouched; the supervisor removes any HeaderSessionToken the sandbox
	// sent before it adds its own.
	HeaderSessionToken = "Inspect-Session-Token"
	// HeaderRunnerVersion carries the supervisor's `inspect version` on
	// every request, for the app's logs.
	HeaderRunnerVersion = "Inspect-Runner-Version"
	// ContentTypeJSON is the content type of every channel message.
	ContentTypeJSON = "application/json"
)

// Environment variables through which an executor starts `inspect runner`.
// They are all the supervisor is given, and none is a standing credential:
// the claim code is good for one claim. The supervisor never passes its
// environment into the sandbox (bubblewrap --clearenv).
const (
	// EnvChannelURL is the base URL of the session channel: the app's
	// public URL on Buildkite, loopback on the local executor.
	EnvChannelURL = "INSPECT_CHANNEL_URL"
	// EnvChannelSocket, when set, is a Unix socket to dial instead of
	// EnvChannelURL's host (local executor).
	EnvChannelSocket = "INSPECT_CHANNEL_SOCKET"
	EnvSessionID     = "INSPECT_SESSION_ID"
	EnvAttemptID     = "INSPECT_ATTEMPT_ID"
	// EnvClaimCode is the single-use code exchanged for the session token.
	EnvClaimCode = "INSPECT_CLAIM_CODE"
)

// The meta-data keys an executor tags a run with, where its service keeps
// meta-data (a Buildkite build's), so that the run's webhooks and a later
// search name the attempt. Runs already made carry them: changing either
// would make the search miss those runs and a dispatch start a second one.
// They name an attempt; they prove nothing (anyone who can start a run can
// set them), so the app trusts only a run it recorded.
const (
	// MetaSession's value is the session id.
	MetaSession = "inspect:session"
	// MetaAttempt's value is the attempt number, in decimal from 1.
	MetaAttempt = "inspect:attempt"
)

// Caps on channel messages.
const (
	// MaxClaimBytes caps a ClaimRequest, ClaimResponse or
	// RepoTokenResponse.
	MaxClaimBytes = 16 << 10
	// MaxProgressEventBytes caps a ProgressEvent.
	MaxProgressEventBytes = 8 << 10
	// MaxProgressMessageBytes caps a progress message, which is shown on
	// GitHub and built from untrusted output.
	MaxProgressMessageBytes = 1 << 10
	// MaxResultUploadBytes caps a ResultUpload.
	// The agent state travels in base64: 4 bytes for every 3.
	MaxResultUploadBytes = MaxEvidenceBytes + MaxManifestBytes + (MaxAgentStateBytes+2)/3*4 + 64<<10
	// MaxErrorResponseBytes caps an ErrorResponse.
	MaxErrorResponseBytes = 8 << 10
	// MinCredentialBytes and MaxCredentialBytes bound claim codes and
	// tokens (a GitHub installation token can be ~520 characters).
	MinCredentialBytes = 16
	MaxCredentialBytes = 4 << 10
)

// AttemptPath fills the {attempt} wildcard of a channel path with attemptID,
// escaped.
func AttemptPath(pattern, attemptID string) string {
	return strings.Replace(pattern, "{"+PathValueAttempt+"}", url.PathEscape(attemptID), 1)
}

// EgressListen is where the forwarder listens inside the sandbox, and
// RegistryBaseURL a registry's base there: what the sandbox's package
// managers are pointed at, and what the app rewrites a registry's
// metadata links to.
const EgressListen = "127.0.0.1:8931"

// RegistryBaseURL is the base URL of registry name inside the sandbox.
func RegistryBaseURL(name string) string {
	return "http://" + EgressListen + "/v1/registries/" + name + "/"
}

// EgressRegistryPath is the channel path that relays rest (a path of the
// registry's protocol, still escaped) to the named registry.
func EgressRegistryPath(attemptID, registry, rest string) string {
	p := AttemptPath(PathEgressRegistry, attemptID)
	p = strings.Replace(p, "{"+PathValueRegistry+"}", url.PathEscape(registry), 1)
	return strings.Replace(p, "{"+PathValueRest+"...}", strings.TrimPrefix(rest, "/"), 1)
}

// EgressModelPath is the channel path that relays rest (a provider API
// path, such as "v1/responses") to the named model provider.
func EgressModelPath(attemptID, provider, rest string) string {
	p := AttemptPath(PathEgressModel, attemptID)
	p = strings.Replace(p, "{"+PathValueProvider+"}", url.PathEscape(provider), 1)
	return strings.Replace(p, "{"+PathValueRest+"...}", strings.TrimPrefix(rest, "/"), 1)
}

// ClaimRequest exchanges the single-use claim code an executor gave the
// supervisor for the attempt's session token. It also states the spec
// version the supervisor reads, so a version mismatch is refused at the
// first request, before any work (ErrorVersionMismatch).
type ClaimRequest struct {
	AttemptID string `json:"attempt_id"`
	ClaimCode string `json:"claim_code"`
	// SpecVersion is the SpecVersion the supervisor was built with.
	SpecVersion string `json:"spec_version"`
	// RunnerVersion is the supervisor's `inspect version`.
	RunnerVersion string `json:"runner_version,omitempty"`
}

// String hides the claim code, so printing a request does not spend it.
func (c ClaimRequest) String() string {
	return "ClaimRequest{attempt " + c.AttemptID + ", claim code " + Redacted + "}"
}

// ClaimResponse gives the supervisor its session token. The token is a
// credential: the supervisor keeps it out of the sandbox, its logs and its
// evidence (add it to the Redactor).
type ClaimResponse struct {
	SessionToken string `json:"session_token"`
	// Kind is what the attempt is: a session (KindSession, also when
	// empty), whose spec is at PathSpec, or a snapshot build
	// (KindSnapshot), whose job is at PathSnapshotJob.
	Kind AttemptKind `json:"kind,omitempty"`
	// ExpiresAt is when the token stops working; the session's deadline
	// plus a grace period for the result upload.
	ExpiresAt time.Time `json:"expires_at"`
}

// String hides the token.
func (c ClaimResponse) String() string {
	return "ClaimResponse{session token " + Redacted + ", expires " + c.ExpiresAt.Format(time.RFC3339) + "}"
}

// RepoTokenResponse gives the supervisor a read-only token for the session's
// repository (contents: read, that repository only), to fetch the pinned
// SHA outside the sandbox. It is revoked when the attempt ends.
type RepoTokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// String hides the token.
func (r RepoTokenResponse) String() string {
	return "RepoTokenResponse{token " + Redacted + ", expires " + r.ExpiresAt.Format(time.RFC3339) + "}"
}

// ProgressEvent is one step of an attempt, shown in the progress comment and
// the check run while the session runs. Message is untrusted text (it may
// quote an agent's output), so it is capped, single-line and redacted; see
// CleanProgressMessage.
type ProgressEvent struct {
	// Seq numbers events from 1, so the app can order them and drop
	// repeats of a retried POST.
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Phase   Phase     `json:"phase"`
	Message string    `json:"message"`
}

// ResultUpload is the end of an attempt: its evidence, and the change it
// made. Manifest is absent when the attempt failed before there could be a
// change; an empty change is a manifest with no files.
type ResultUpload struct {
	Evidence Evidence  `json:"evidence"`
	Manifest *Manifest `json:"manifest,omitempty"`
	// AgentState is the agent's packed conversation state, for a later
	// continuation to resume (decision 0072): at most MaxAgentStateBytes.
	AgentState []byte `json:"agent_state,omitempty"`
}

// ErrorCode is a stable, machine-readable reason for a refused channel
// request.
type ErrorCode string

// Error codes.
const (
	ErrorUnauthorized    ErrorCode = "unauthorized"
	ErrorClaimUsed       ErrorCode = "claim_used"
	ErrorVersionMismatch ErrorCode = "version_mismatch"
	// ErrorAttemptEnded: the attempt was cancelled, timed out or replaced;
	// the supervisor stops.
	ErrorAttemptEnded ErrorCode = "attempt_ended"
	ErrorInvalid      ErrorCode = "invalid"
	ErrorTooLarge     ErrorCode = "too_large"
	// ErrorOverBudget: the egress proxy stopped the session for tokens.
	ErrorOverBudget ErrorCode = "over_budget"
	// ErrorNotAllowed: an egress destination the server does not allow.
	ErrorNotAllowed ErrorCode = "not_allowed"
	// ErrorNotFound: what the request names is not kept (an agent state
	// pruned or never kept).
	ErrorNotFound ErrorCode = "not_found"
)

// ErrorResponse is the body of every non-2xx channel answer, so the
// supervisor can act on Code and log Message.
type ErrorResponse struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
}

// Validate reports the request's faults.
func (c ClaimRequest) Validate() error {
	var f faults
	checkID(&f, "attempt_id", c.AttemptID)
	checkCredential(&f, "claim_code", c.ClaimCode)
	checkLine(&f, "spec_version", c.SpecVersion, MaxNameBytes, true)
	checkLine(&f, "runner_version", c.RunnerVersion, MaxNameBytes, false)
	return f.err("claim request")
}

// Validate reports the response's faults.
func (c ClaimResponse) Validate() error {
	var f faults
	checkCredential(&f, "session_token", c.SessionToken)
	if c.ExpiresAt.IsZero() {
		f.add("expires_at", "is required")
	}
	switch c.Kind {
	case "", KindSession, KindSnapshot, KindBaseline:
	default:
		f.add("kind", "%s is not a kind of attempt", safeQuote(string(c.Kind)))
	}
	return f.err("claim response")
}

// Validate reports the response's faults.
func (r RepoTokenResponse) Validate() error {
	var f faults
	checkCredential(&f, "token", r.Token)
	if r.ExpiresAt.IsZero() {
		f.add("expires_at", "is required")
	}
	return f.err("repo token response")
}

// Validate reports the event's faults.
func (p ProgressEvent) Validate() error {
	var f faults
	if p.Seq < 1 {
		f.add("seq", "must be 1 or more")
	}
	if p.Time.IsZero() {
		f.add("time", "is required")
	}
	switch {
	case p.Phase == "":
		f.add("phase", "is required")
	case !isPhase(p.Phase):
		f.add("phase", "must be one of prepare, setup, agent, verify, upload, not %s", safeQuote(string(p.Phase)))
	}
	checkLine(&f, "message", p.Message, MaxProgressMessageBytes, false)
	return f.err("progress event")
}

// Validate reports every fault of the evidence and the manifest (fields
// prefixed "evidence." and "manifest."), and checks that the change applies
// to the commit the evidence ran on.
func (u *ResultUpload) Validate(limits ManifestLimits) error {
	var f faults
	u.Evidence.validate(&f, "evidence")
	if u.Manifest != nil {
		u.Manifest.validate(&f, "manifest", limits)
		if u.Manifest.BaseSHA != u.Evidence.PinnedSHA {
			f.add("manifest.base_sha", "must equal evidence.pinned_sha")
		}
	}
	if len(u.AgentState) > MaxAgentStateBytes {
		f.add("agent_state", "is %d bytes, over the %d allowed", len(u.AgentState), MaxAgentStateBytes)
	}
	return f.err("result upload")
}

// Validate reports the response's faults.
func (e ErrorResponse) Validate() error {
	var f faults
	checkLine(&f, "code", string(e.Code), MaxNameBytes, true)
	checkText(&f, "message", e.Message, MaxReasonBytes, false)
	return f.err("error response")
}

// DecodeClaimRequest reads and validates a ClaimRequest strictly.
func DecodeClaimRequest(r io.Reader) (ClaimRequest, error) {
	var c ClaimRequest
	err := decodeMessage(r, "claim request", MaxClaimBytes, &c)
	return c, err
}

// DecodeClaimResponse reads and validates a ClaimResponse strictly.
func DecodeClaimResponse(r io.Reader) (ClaimResponse, error) {
	var c ClaimResponse
	err := decodeMessage(r, "claim response", MaxClaimBytes, &c)
	return c, err
}

// DecodeRepoTokenResponse reads and validates a RepoTokenResponse strictly.
func DecodeRepoTokenResponse(r io.Reader) (RepoTokenResponse, error) {
	var t RepoTokenResponse
	err := decodeMessage(r, "repo token response", MaxClaimBytes, &t)
	return t, err
}

// DecodeProgressEvent reads and validates a ProgressEvent strictly.
func DecodeProgressEvent(r io.Reader) (ProgressEvent, error) {
	var p ProgressEvent
	err := decodeMessage(r, "progress event", MaxProgressEventBytes, &p)
	return p, err
}

// DecodeErrorResponse reads and validates an ErrorResponse strictly.
func DecodeErrorResponse(r io.Reader) (ErrorResponse, error) {
	var e ErrorResponse
	err := decodeMessage(r, "error response", MaxErrorResponseBytes, &e)
	return e, err
}

// DecodeResultUpload reads a ResultUpload strictly (the evidence's and the
// manifest's versions included) and validates it against limits.
func DecodeResultUpload(r io.Reader, limits ManifestLimits) (ResultUpload, error) {
	data, err := readCapped(r, "result upload", MaxResultUploadBytes)
	if err != nil {
		return ResultUpload{}, err
	}
	// Versions first, so another version is reported as such rather than
	// as an unknown field.
	var head struct {
		Evidence json.RawMessage `json:"evidence"`
		Manifest json.RawMessage `json:"manifest"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return ResultUpload{}, fmt.Errorf("decoding result upload: %w", err)
	}
	if err := checkVersion(orNull(head.Evidence), "evidence", EvidenceVersion); err != nil {
		return ResultUpload{}, err
	}
	if len(head.Manifest) > 0 && string(head.Manifest) != "null" {
		if err := checkVersion(head.Manifest, "change manifest", ManifestVersion); err != nil {
			return ResultUpload{}, err
		}
	}
	var u ResultUpload
	if err := unmarshalStrict(data, "result upload", &u); err != nil {
		return ResultUpload{}, err
	}
	if err := u.Validate(limits); err != nil {
		return ResultUpload{}, err
	}
	return u, nil
}

func orNull(m json.RawMessage) []byte {
	if len(m) == 0 {
		return []byte("null")
	}
	return m
}

// decodeMessage is the common path of the channel messages' Decode
// functions: cap, strict decoding, Validate. On error *v is left zero.
func decodeMessage[T interface{ Validate() error }](r io.Reader, document string, max int64, v *T) error {
	err := decodeDocument(r, document, max, "", v)
	if err == nil {
		err = (*v).Validate()
	}
	if err != nil {
		var zero T
		*v = zero
	}
	return err
}

func isPhase(p Phase) bool {
	for _, q := range phases {
		if p == q {
			return true
		}
	}
	return false
}

// checkCredential checks the shape of a claim code or token (never its
// value in a message): printable ASCII without spaces, within bounds.
func checkCredential(f *faults, field, s string) {
	switch {
	case s == "":
		f.add(field, "is required")
	case len(s) < MinCredentialBytes || len(s) > MaxCredentialBytes:
		f.add(field, "must be %d to %d bytes", MinCredentialBytes, MaxCredentialBytes)
	default:
		for i := 0; i < len(s); i++ {
			if s[i] <= ' ' || s[i] >= 0x7f {
				f.add(field, "must be printable ASCII without spaces")
				return
			}
		}
	}
}

// CleanProgressMessage makes any text a valid ProgressEvent.Message: invalid
// UTF-8 is replaced, control and invisible characters become spaces, runs of
// spaces collapse, and it is cut to MaxProgressMessageBytes with "…". Redact
// it too; cleaning does not.
func CleanProgressMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if policy.IsHiddenInLine(r) || r == ' ' {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	out := strings.TrimRight(b.String(), " ")
	if len(out) > MaxProgressMessageBytes {
		out = policy.TruncateUTF8(out, MaxProgressMessageBytes-len("…")) + "…"
	}
	return out
}

// ValidEgressPath checks the path a model request asks of a provider (what
// follows /v1/providers/{provider}/): not empty, and no "." or ".."
// segment, so it cannot climb out of the provider's base URL, whose key the
// app adds. The app checks it (it is the trust boundary); the supervisor
// checks it too, to answer the agent early.
func ValidEgressPath(p string) bool {
	if p == "" {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}
