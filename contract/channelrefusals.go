package contract

import "net/http"

// ChannelCheck names one check the session channel makes before a route
// does its work. ChannelServer makes them in the order ChannelRefusals
// gives, the first that fails answers, and every backend (the app's,
// `inspect run`'s, the supervisor tests') is held to that one table
// (decision 0046).
type ChannelCheck string

// The checks.
const (
	// CheckClaimBody: the claim request decodes strictly.
	CheckClaimBody ChannelCheck = "claim body"
	// CheckSpecVersion: the supervisor reads this build's SpecVersion.
	CheckSpecVersion ChannelCheck = "spec version"
	// CheckAttemptID: the claim's body names the path's attempt.
	CheckAttemptID ChannelCheck = "attempt id"
	// CheckClaimCode: the backend exchanges the code, once: an unknown
	// attempt, a wrong code and a reused one are all refused alike.
	CheckClaimCode ChannelCheck = "claim code"
	// CheckSessionToken: the token is the path's attempt's, after its
	// claim. A token of another attempt, and an attempt the backend does
	// not know, are refused alike, so the answer tells no one which
	// attempts exist.
	CheckSessionToken ChannelCheck = "session token"
	// CheckKind: the route serves the attempt's kind.
	CheckKind ChannelCheck = "kind"
	// CheckEnded: the attempt has not ended (cancelled, timed out,
	// replaced, reported). The result routes skip it: a result may still
	// arrive, and a repeat is acknowledged.
	CheckEnded ChannelCheck = "ended"
	// CheckExpired: the token is within its expiry, the deadline and a
	// grace for the result's upload.
	CheckExpired ChannelCheck = "expired"
	// CheckServed: this backend serves the route at all (`inspect run`
	// without a model has no model egress).
	CheckServed ChannelCheck = "served"
)

// ChannelRefusal is one check's refusal: the status and code it answers
// with. It is also the error a backend returns to refuse a request for a
// reason of its own (an artifact over the session's cap, a result for
// another commit): ChannelServer writes it as it is.
type ChannelRefusal struct {
	Check   ChannelCheck
	Status  int
	Code    ErrorCode
	Message string
}

// Error is the message.
func (r ChannelRefusal) Error() string { return r.Message }

// Refusal is a backend's own refusal of a request.
func Refusal(status int, code ErrorCode, msg string) error {
	return ChannelRefusal{Status: status, Code: code, Message: msg}
}

// The refusals, once each. The statuses are the app's, which came first:
// decision 0008 for the claim and the token, 0012 for the kinds.
var (
	refuseClaimBody   = ChannelRefusal{CheckClaimBody, http.StatusBadRequest, ErrorInvalid, "invalid claim request"}
	refuseSpecVersion = ChannelRefusal{CheckSpecVersion, http.StatusConflict, ErrorVersionMismatch, "this server sends " + SpecVersion}
	refuseAttemptID   = ChannelRefusal{CheckAttemptID, http.StatusBadRequest, ErrorInvalid, "attempt id mismatch"}
	refuseClaimCode   = ChannelRefusal{CheckClaimCode, http.StatusUnauthorized, ErrorClaimUsed, "claim refused"}
	refuseToken       = ChannelRefusal{CheckSessionToken, http.StatusUnauthorized, ErrorUnauthorized, "bad session token"}
	refuseKind        = ChannelRefusal{CheckKind, http.StatusConflict, ErrorInvalid, "not a route for this kind of attempt"}
	refuseEnded       = ChannelRefusal{CheckEnded, http.StatusGone, ErrorAttemptEnded, "the attempt has ended"}
	refuseExpired     = ChannelRefusal{CheckExpired, http.StatusGone, ErrorAttemptEnded, "the attempt's token has expired"}
	// A route a backend does not serve is missing, as an unknown path is;
	// an egress it does not serve is a destination it does not allow.
	refuseUnserved = ChannelRefusal{CheckServed, http.StatusNotFound, ErrorInvalid, "this server does not serve this route"}
	refuseNoEgress = ChannelRefusal{CheckServed, http.StatusForbidden, ErrorNotAllowed, "this server serves no such egress"}
)

// ChannelRoute is one route of the session channel: its pattern (as
// http.ServeMux takes it), the attempt kinds it serves, and its checks in
// the order they are made.
type ChannelRoute struct {
	Pattern string
	Kinds   []AttemptKind
	Checks  []ChannelRefusal
}

// Serves reports whether the route serves attempts of kind (empty is a
// session).
func (r ChannelRoute) Serves(kind AttemptKind) bool {
	if kind == "" {
		kind = KindSession
	}
	for _, k := range r.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// Refusal returns the route's refusal for check, and whether it makes it.
func (r ChannelRoute) Refusal(check ChannelCheck) (ChannelRefusal, bool) {
	for _, c := range r.Checks {
		if c.Check == check {
			return c, true
		}
	}
	return ChannelRefusal{}, false
}

var (
	sessionOnly  = []AttemptKind{KindSession}
	snapshotOnly = []AttemptKind{KindSnapshot}
	// A baseline (decision 0080) is a session without its agent: it reads
	// its spec, reports progress, output, its result and artifacts, but
	// reaches no model and has no turns, recorder or agent state.
	sessionKinds = []AttemptKind{KindSession, KindBaseline}
	// The repo token and the registry egress serve every kind: a snapshot
	// build clones, and its setup downloads what its job allows.
	allKinds = []AttemptKind{KindSession, KindSnapshot, KindBaseline}
	// authed is the checks of a route behind the session token; result
	// those of a result's upload, which an ended attempt may still make.
	authed      = []ChannelRefusal{refuseToken, refuseKind, refuseEnded, refuseExpired, refuseUnserved}
	result      = []ChannelRefusal{refuseToken, refuseKind, refuseExpired, refuseUnserved}
	egress      = []ChannelRefusal{refuseToken, refuseKind, refuseEnded, refuseExpired, refuseNoEgress}
	claimChecks = []ChannelRefusal{refuseClaimBody, refuseSpecVersion, refuseAttemptID, refuseClaimCode}
)

// ChannelRefusals is the session channel's every route, with its checks
// in order. The egress routes take any method: the far end refuses what
// its kind does not allow, and says why.
var ChannelRefusals = []ChannelRoute{
	{RouteClaim, allKinds, claimChecks},
	{RouteSpec, sessionKinds, authed},
	{RouteRepoToken, allKinds, authed},
	{RouteProgress, sessionKinds, authed},
	{RouteOutput, sessionKinds, authed},
	{RouteResult, sessionKinds, result},
	{RouteArtifact, sessionKinds, authed},
	{RouteTurns, sessionOnly, authed},
	{RouteRecorder, sessionOnly, authed},
	{RouteAgentState, sessionOnly, authed},
	{RouteSnapshotJob, snapshotOnly, authed},
	{RouteSnapshotResult, snapshotOnly, result},
	{PathEgressModel, sessionOnly, egress},
	{PathEgressRegistry, allKinds, egress},
}
