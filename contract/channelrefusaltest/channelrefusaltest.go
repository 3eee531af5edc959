// Package channelrefusaltest holds a session channel's backend to
// contract.ChannelRefusals: every route, refused for a bad token, another
// attempt's id, the wrong kind, an ended attempt, an expired token, a
// reused claim and another spec version, each with the table's status and
// code, and in the table's order where several checks fail at once.
// app/channel runs it over the app's backend, runner/checkoutrun over
// `inspect run`'s (decision 0046).
//
// It is test support only.
package channelrefusaltest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Attempt is one attempt on the channel under test, not yet claimed.
type Attempt struct {
	// Channel serves the channel's routes (its backend holds the attempt).
	Channel   http.Handler
	ID        string
	ClaimCode string
	// End ends the attempt, as the backend's own life ends one.
	End func()
	// Expire moves the backend's clock past the attempt's token expiry.
	Expire func()
}

// Backend makes attempts on one backend's channel.
type Backend struct {
	// New makes a new attempt of kind, unclaimed; false when this backend
	// never has an attempt of kind (`inspect run` runs one session).
	New func(t *testing.T, kind contract.AttemptKind) (Attempt, bool)
	// Unserved are the routes (ChannelRoute.Pattern) this backend does
	// not serve.
	Unserved []string
}

// otherAttempt is an attempt id no backend knows.
const otherAttempt = "att-other-0123"

// wrongToken is a well-formed token that is no attempt's.
const wrongToken = "wrong-token-0123456789abcdef0123456789"

// answer is a channel's answer: its status and, for an error, its code
// and message.
type answer struct {
	status  int
	code    contract.ErrorCode
	message string
}

func (a answer) is(ref contract.ChannelRefusal, checkMessage bool) bool {
	return a.status == ref.Status && a.code == ref.Code && (!checkMessage || a.message == ref.Message)
}

func call(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set(contract.HeaderSessionToken, token)
	}
	req.Header.Set(contract.HeaderRunnerVersion, "channelrefusaltest")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code}
	var e contract.ErrorResponse
	if rec.Code >= 300 && json.Unmarshal(rec.Body.Bytes(), &e) == nil {
		a.code, a.message = e.Code, e.Message
	}
	return a
}

func claimBody(t *testing.T, id, code, version string) string {
	t.Helper()
	b, err := json.Marshal(contract.ClaimRequest{AttemptID: id, ClaimCode: code, SpecVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// claim claims a, and returns its session token.
func claim(t *testing.T, a Attempt) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, contract.AttemptPath(contract.PathClaim, a.ID), strings.NewReader(claimBody(t, a.ID, a.ClaimCode, contract.SpecVersion)))
	rec := httptest.NewRecorder()
	a.Channel.ServeHTTP(rec, req)
	resp, err := contract.DecodeClaimResponse(rec.Body)
	if rec.Code != http.StatusOK || err != nil {
		t.Fatalf("claiming %s: %d %v", a.ID, rec.Code, err)
	}
	return resp.SessionToken
}

// request is how a route is called: its method and path for attempt id.
func request(route contract.ChannelRoute, id string) (method, path string) {
	method, pattern, ok := strings.Cut(route.Pattern, " ")
	if !ok { // an egress route: any method
		method, pattern = http.MethodPost, route.Pattern
	}
	switch pattern {
	case contract.PathEgressModel:
		return method, contract.EgressModelPath(id, "p", "responses")
	case contract.PathEgressRegistry:
		return http.MethodGet, contract.EgressRegistryPath(id, "r", "fake.test/alpha/@v/list")
	case contract.PathArtifact:
		return method, contract.AttemptPath(pattern, id) + "?name=a.png"
	}
	return method, contract.AttemptPath(pattern, id)
}

// Run holds b to contract.ChannelRefusals over every route.
func Run(t *testing.T, b Backend) {
	t.Run("claim", func(t *testing.T) { runClaim(t, b) })
	for _, route := range contract.ChannelRefusals {
		if route.Pattern == contract.RouteClaim {
			continue
		}
		t.Run(route.Pattern, func(t *testing.T) { runRoute(t, b, route) })
	}
}

func mustRefusal(t *testing.T, route contract.ChannelRoute, check contract.ChannelCheck) contract.ChannelRefusal {
	t.Helper()
	ref, ok := route.Refusal(check)
	if !ok {
		t.Fatalf("%s makes no %s check", route.Pattern, check)
	}
	return ref
}

func runClaim(t *testing.T, b Backend) {
	route := contract.ChannelRefusals[slices.IndexFunc(contract.ChannelRefusals, func(r contract.ChannelRoute) bool { return r.Pattern == contract.RouteClaim })]
	version := mustRefusal(t, route, contract.CheckSpecVersion)
	mismatch := mustRefusal(t, route, contract.CheckAttemptID)
	refused := mustRefusal(t, route, contract.CheckClaimCode)
	for _, check := range []contract.ChannelCheck{contract.CheckKind, contract.CheckEnded, contract.CheckExpired, contract.CheckSessionToken} {
		if _, ok := route.Refusal(check); ok {
			t.Errorf("the claim makes a %s check: it has no token yet", check)
		}
	}
	// A session's, or a snapshot build's on a backend with no sessions
	// (`inspect snapshot build`'s): the claim is the same for both.
	a, ok := b.New(t, contract.KindSession)
	if !ok {
		if a, ok = b.New(t, contract.KindSnapshot); !ok {
			t.Fatal("the backend has no attempt of either kind")
		}
	}
	path := contract.AttemptPath(contract.PathClaim, a.ID)
	post := func(body string) answer { return call(t, a.Channel, http.MethodPost, path, "", body) }
	for _, tc := range []struct {
		name string
		body string
		want contract.ChannelRefusal
	}{
		// The version first, whatever else is wrong: a supervisor of
		// another release is told so before anything is spent.
		{"spec-version mismatch", claimBody(t, a.ID, a.ClaimCode, "0"), version},
		{"spec-version mismatch, attempt id mismatch and a wrong code", claimBody(t, otherAttempt, wrongToken, "0"), version},
		{"attempt-id mismatch", claimBody(t, otherAttempt, a.ClaimCode, contract.SpecVersion), mismatch},
		{"attempt-id mismatch and a wrong code", claimBody(t, otherAttempt, wrongToken, contract.SpecVersion), mismatch},
		{"bad claim code", claimBody(t, a.ID, wrongToken, contract.SpecVersion), refused},
	} {
		if got := post(tc.body); !got.is(tc.want, true) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := call(t, a.Channel, http.MethodPost, contract.AttemptPath(contract.PathClaim, otherAttempt), "", claimBody(t, otherAttempt, a.ClaimCode, contract.SpecVersion)); !got.is(refused, true) {
		t.Errorf("another attempt's claim with this code: %+v, want %+v", got, refused)
	}
	// None of those spent the code; it is good once.
	if got := post(claimBody(t, a.ID, a.ClaimCode, contract.SpecVersion)); got.status != http.StatusOK {
		t.Fatalf("the claim after the refused ones: %+v", got)
	}
	if got := post(claimBody(t, a.ID, a.ClaimCode, contract.SpecVersion)); !got.is(refused, true) {
		t.Errorf("reused claim: %+v, want %+v", got, refused)
	}
	if got := post(claimBody(t, a.ID, a.ClaimCode, "0")); !got.is(version, true) {
		t.Errorf("reused claim of another version: %+v, want %+v", got, version)
	}
}

func runRoute(t *testing.T, b Backend, route contract.ChannelRoute) {
	token := mustRefusal(t, route, contract.CheckSessionToken)
	expired := mustRefusal(t, route, contract.CheckExpired)
	served := mustRefusal(t, route, contract.CheckServed)
	ended, checksEnded := route.Refusal(contract.CheckEnded)
	kindRef, checksKind := route.Refusal(contract.CheckKind)
	if !checksKind {
		t.Fatalf("%s makes no kind check", route.Pattern)
	}
	unserved := slices.Contains(b.Unserved, route.Pattern)
	for _, kind := range []contract.AttemptKind{contract.KindSession, contract.KindSnapshot, contract.KindBaseline} {
		t.Run(string(kind), func(t *testing.T) {
			if _, ok := b.New(t, kind); !ok {
				return // nothing of this kind to refuse: its routes' kind check is held with the other kind
			}
			fresh := func() (Attempt, string) {
				a, ok := b.New(t, kind)
				if !ok {
					t.Fatalf("no second %s attempt", kind)
				}
				return a, claim(t, a)
			}
			at := func(a Attempt, id, tok string) answer {
				method, path := request(route, id)
				return call(t, a.Channel, method, path, tok, "{}")
			}
			want := func(name string, got answer, ref contract.ChannelRefusal) {
				t.Helper()
				// A backend says in its own words why it does not serve a
				// route; the status and code are the table's.
				if !got.is(ref, ref.Check != contract.CheckServed) {
					t.Errorf("%s: %+v, want %+v", name, got, ref)
				}
			}

			// Before the claim, and with the claim code or another
			// attempt's id in place of the token.
			a, ok := b.New(t, kind)
			if !ok {
				t.Fatalf("no second %s attempt", kind)
			}
			want("before the claim", at(a, a.ID, ""), token)
			want("the claim code as the token", at(a, a.ID, a.ClaimCode), token)
			// A claim refused for its version gives no token and spends
			// nothing.
			if got := call(t, a.Channel, http.MethodPost, contract.AttemptPath(contract.PathClaim, a.ID), "", claimBody(t, a.ID, a.ClaimCode, "0")); got.status == http.StatusOK {
				t.Fatalf("a claim of another spec version: %+v", got)
			}
			tok := claim(t, a)
			want("bad token", at(a, a.ID, wrongToken), token)
			want("attempt-id mismatch", at(a, otherAttempt, tok), token)
			// The refused reuse of the code changes nothing.
			if got := call(t, a.Channel, http.MethodPost, contract.AttemptPath(contract.PathClaim, a.ID), "", claimBody(t, a.ID, a.ClaimCode, contract.SpecVersion)); got.status == http.StatusOK {
				t.Fatalf("reused claim: %+v", got)
			}

			// A good token passes every check, or the backend does not
			// serve the route.
			ok200 := at(a, a.ID, tok)
			switch {
			case !route.Serves(kind):
				want("wrong kind", ok200, kindRef)
			case unserved:
				want("not served", ok200, served)
			default:
				for _, ref := range route.Checks {
					if ok200.is(ref, ref.Check != contract.CheckServed) {
						t.Errorf("a good request was refused by the %s check: %+v", ref.Check, ok200)
					}
				}
			}

			// Ended: refused, or (the result routes) past the checks.
			e, tok := fresh()
			want("bad token of an ended attempt", func() answer { e.End(); return at(e, e.ID, wrongToken) }(), token)
			got := at(e, e.ID, tok)
			switch {
			case !route.Serves(kind):
				want("wrong kind, ended", got, kindRef)
			case checksEnded:
				want("ended", got, ended)
			case got.code == contract.ErrorAttemptEnded:
				t.Errorf("ended, on a route an ended attempt may still use: %+v", got)
			}

			// Expired, and expired after its end.
			x, tok := fresh()
			x.Expire()
			got = at(x, x.ID, tok)
			if route.Serves(kind) {
				want("expired", got, expired)
			} else {
				want("wrong kind, expired", got, kindRef)
			}
			x.End()
			got = at(x, x.ID, tok)
			switch {
			case !route.Serves(kind):
				want("wrong kind, ended and expired", got, kindRef)
			case checksEnded:
				want("ended and expired", got, ended)
			default:
				want("ended and expired", got, expired)
			}
		})
	}
}
