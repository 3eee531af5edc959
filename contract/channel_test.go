package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRoutesServe registers every route on a ServeMux (which panics on a
// malformed or conflicting pattern) and checks what each path fills in.
func TestRoutesServe(t *testing.T) {
	mux := http.NewServeMux()
	handle := func(route string) {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s|%s|%s|%s|%s", route, r.PathValue(PathValueAttempt), r.PathValue(PathValueProvider), r.PathValue(PathValueRegistry), r.PathValue(PathValueRest))
		})
	}
	for _, r := range []string{RouteClaim, RouteSpec, RouteRepoToken, RouteProgress, RouteOutput, RouteResult, PathEgressModel, "GET " + PathEgressRegistry} {
		handle(r)
	}
	const id = "01hx-1"
	cases := []struct {
		method, path, want string
	}{
		{"POST", AttemptPath(PathClaim, id), RouteClaim + "|01hx-1|||"},
		{"GET", AttemptPath(PathSpec, id), RouteSpec + "|01hx-1|||"},
		{"POST", AttemptPath(PathRepoToken, id), RouteRepoToken + "|01hx-1|||"},
		{"POST", AttemptPath(PathProgress, id), RouteProgress + "|01hx-1|||"},
		{"POST", AttemptPath(PathOutput, id), RouteOutput + "|01hx-1|||"},
		{"PUT", AttemptPath(PathResult, id), RouteResult + "|01hx-1|||"},
		{"POST", EgressModelPath(id, "openai", "/v1/responses"), PathEgressModel + "|01hx-1|openai||v1/responses"},
		{"GET", strings.Replace(AttemptPath(PathEgressRegistry, id), "{registry}/{path...}", "proxy.golang.org/x/@v/list", 1), "GET " + PathEgressRegistry + "|01hx-1||proxy.golang.org|x/@v/list"},
		{"GET", EgressRegistryPath(id, "gomods", "golang.org/x/mod/@v/list"), "GET " + PathEgressRegistry + "|01hx-1||gomods|golang.org/x/mod/@v/list"},
		// The path is kept escaped: a scoped npm name stays one segment
		// on the wire (the app reads r.URL.EscapedPath to see it so).
		{"GET", EgressRegistryPath(id, "npmjs", "@types%2fnode"), "GET " + PathEgressRegistry + "|01hx-1||npmjs|@types/node"},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
			t.Errorf("%s %s: %d %q, want %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.want)
		}
	}
	// The wrong method is refused by the mux, not served.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", AttemptPath(PathClaim, id), nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET claim: %d", rec.Code)
	}
	for _, p := range []string{PathClaim, PathSpec, PathRepoToken, PathProgress, PathResult, PathEgress, PathEgressModel, PathEgressRegistry} {
		if !strings.HasPrefix(p, "/v1/attempts/{attempt}/") {
			t.Errorf("%s is not under the versioned attempt prefix", p)
		}
		if p != PathClaim && p != PathSpec && p != PathRepoToken && p != PathProgress && p != PathResult && !strings.HasPrefix(p, PathEgress) {
			t.Errorf("%s is not under %s", p, PathEgress)
		}
	}
}

func TestAttemptPathEscapes(t *testing.T) {
	if got := AttemptPath(PathSpec, "a/b"); got != "/v1/attempts/a%2Fb/spec" {
		t.Fatalf("AttemptPath = %q", got)
	}
}

func validClaimRequest() ClaimRequest {
	return ClaimRequest{AttemptID: "att-1", ClaimCode: fakeToken("cc_", 32), SpecVersion: SpecVersion, RunnerVersion: "v1.2.3"}
}

func TestChannelMessagesValidate(t *testing.T) {
	type tc struct {
		name   string
		msg    interface{ Validate() error }
		faults []string
	}
	cr := func(f func(*ClaimRequest)) ClaimRequest { c := validClaimRequest(); f(&c); return c }
	resp := func(f func(*ClaimResponse)) ClaimResponse {
		c := ClaimResponse{SessionToken: fakeToken("ist_", 40), ExpiresAt: t1}
		f(&c)
		return c
	}
	rt := func(f func(*RepoTokenResponse)) RepoTokenResponse {
		c := RepoTokenResponse{Token: newGHS(), ExpiresAt: t1}
		f(&c)
		return c
	}
	pe := func(f func(*ProgressEvent)) ProgressEvent {
		p := ProgressEvent{Seq: 1, Time: t0, Phase: PhaseAgent, Message: "running the agent"}
		f(&p)
		return p
	}
	er := func(f func(*ErrorResponse)) ErrorResponse {
		e := ErrorResponse{Code: ErrorClaimUsed, Message: "this claim code was already used"}
		f(&e)
		return e
	}
	cases := []tc{
		{"claim valid", cr(func(*ClaimRequest) {}), nil},
		{"claim attempt", cr(func(c *ClaimRequest) { c.AttemptID = "" }), []string{"attempt_id"}},
		{"claim code missing", cr(func(c *ClaimRequest) { c.ClaimCode = "" }), []string{"claim_code"}},
		{"claim code short", cr(func(c *ClaimRequest) { c.ClaimCode = "abc" }), []string{"claim_code"}},
		{"claim code space", cr(func(c *ClaimRequest) { c.ClaimCode = strings.Repeat("a", 20) + " b" }), []string{"claim_code"}},
		{"claim code too long", cr(func(c *ClaimRequest) { c.ClaimCode = strings.Repeat("a", MaxCredentialBytes+1) }), []string{"claim_code"}},
		{"claim spec version", cr(func(c *ClaimRequest) { c.SpecVersion = "" }), []string{"spec_version"}},
		{"claim runner version", cr(func(c *ClaimRequest) { c.RunnerVersion = "a\nb" }), []string{"runner_version"}},
		{"claim response valid", resp(func(*ClaimResponse) {}), nil},
		{"claim response token", resp(func(c *ClaimResponse) { c.SessionToken = "" }), []string{"session_token"}},
		{"claim response expiry", resp(func(c *ClaimResponse) { c.ExpiresAt = zeroTime }), []string{"expires_at"}},
		{"repo token valid (520-char ghs)", rt(func(*RepoTokenResponse) {}), nil},
		{"repo token missing", rt(func(r *RepoTokenResponse) { r.Token = "" }), []string{"token"}},
		{"repo token expiry", rt(func(r *RepoTokenResponse) { r.ExpiresAt = zeroTime }), []string{"expires_at"}},
		{"progress valid", pe(func(*ProgressEvent) {}), nil},
		{"progress empty message", pe(func(p *ProgressEvent) { p.Message = "" }), nil},
		{"progress seq", pe(func(p *ProgressEvent) { p.Seq = 0 }), []string{"seq"}},
		{"progress time", pe(func(p *ProgressEvent) { p.Time = zeroTime }), []string{"time"}},
		{"progress phase missing", pe(func(p *ProgressEvent) { p.Phase = "" }), []string{"phase"}},
		{"progress phase unknown", pe(func(p *ProgressEvent) { p.Phase = "dancing" }), []string{"phase"}},
		{"progress message too long", pe(func(p *ProgressEvent) { p.Message = strings.Repeat("m", MaxProgressMessageBytes+1) }), []string{"message"}},
		{"progress message newline", pe(func(p *ProgressEvent) { p.Message = "a\nb" }), []string{"message"}},
		{"progress message zero-width", pe(func(p *ProgressEvent) { p.Message = "a\u200bb" }), []string{"message"}},
		{"progress message invalid UTF-8", pe(func(p *ProgressEvent) { p.Message = "\xff" }), []string{"message"}},
		{"error valid", er(func(*ErrorResponse) {}), nil},
		{"error code", er(func(e *ErrorResponse) { e.Code = "" }), []string{"code"}},
		{"error message", er(func(e *ErrorResponse) { e.Message = strings.Repeat("m", MaxReasonBytes+1) }), []string{"message"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantFaults(t, c.msg.Validate(), c.faults...) })
	}
}

var zeroTime time.Time

func TestResultUploadValidate(t *testing.T) {
	good := func() ResultUpload {
		m := validManifest()
		return ResultUpload{Evidence: validEvidence(), Manifest: &m}
	}
	cases := []struct {
		name   string
		mutate func(*ResultUpload)
		limits ManifestLimits
		faults []string
	}{
		{"valid", func(*ResultUpload) {}, ManifestLimits{}, nil},
		{"valid without manifest", func(u *ResultUpload) { u.Manifest = nil }, ManifestLimits{}, nil},
		{"evidence fault is prefixed", func(u *ResultUpload) { u.Evidence.Outcome = "" }, ManifestLimits{}, []string{"evidence.outcome"}},
		{"manifest fault is prefixed", func(u *ResultUpload) { u.Manifest.Files[0].Path = "../x" }, ManifestLimits{}, []string{"manifest.files[0].path"}},
		{"manifest over limits", func(*ResultUpload) {}, ManifestLimits{MaxFiles: 1}, []string{"manifest.files"}},
		{"base differs from pinned", func(u *ResultUpload) { u.Manifest.BaseSHA = sha2 }, ManifestLimits{}, []string{"manifest.base_sha"}},
		{"valid agent state at its cap", func(u *ResultUpload) { u.AgentState = make([]byte, MaxAgentStateBytes) }, ManifestLimits{}, nil},
		{"agent state over its cap", func(u *ResultUpload) { u.AgentState = make([]byte, MaxAgentStateBytes+1) }, ManifestLimits{}, []string{"agent_state"}},
		{"agent state note's reason", func(u *ResultUpload) { u.Evidence.AgentState = &AgentStateNote{Fresh: "gone\x00"} }, ManifestLimits{}, []string{"evidence.agent_state.fresh"}},
		{"agent state note's attempt", func(u *ResultUpload) { u.Evidence.AgentState = &AgentStateNote{Restored: "a b"} }, ManifestLimits{}, []string{"evidence.agent_state.restored"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := good()
			tc.mutate(&u)
			wantFaults(t, u.Validate(tc.limits), tc.faults...)
		})
	}
}

func TestChannelRoundTrips(t *testing.T) {
	m := validManifest()
	m.Normalize()
	claim := validClaimRequest()
	cresp := ClaimResponse{SessionToken: fakeToken("ist_", 40), ExpiresAt: t1}
	rtok := RepoTokenResponse{Token: newGHS(), ExpiresAt: t1}
	prog := ProgressEvent{Seq: 3, Time: t0, Phase: PhaseVerify, Message: "go test ./..."}
	eresp := ErrorResponse{Code: ErrorAttemptEnded, Message: "cancelled by octocat"}
	upload := ResultUpload{Evidence: validEvidence(), Manifest: &m}

	check := func(name string, in any, decode func([]byte) (any, error)) {
		t.Helper()
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("%s: round trip changed it:\n got %+v\nwant %+v", name, got, in)
		}
	}
	check("claim request", claim, func(b []byte) (any, error) { return DecodeClaimRequest(bytes.NewReader(b)) })
	check("claim response", cresp, func(b []byte) (any, error) { return DecodeClaimResponse(bytes.NewReader(b)) })
	check("repo token", rtok, func(b []byte) (any, error) { return DecodeRepoTokenResponse(bytes.NewReader(b)) })
	check("progress", prog, func(b []byte) (any, error) { return DecodeProgressEvent(bytes.NewReader(b)) })
	check("error", eresp, func(b []byte) (any, error) { return DecodeErrorResponse(bytes.NewReader(b)) })
	check("result", upload, func(b []byte) (any, error) { return DecodeResultUpload(bytes.NewReader(b), ManifestLimits{}) })
}

func TestDecodeChannelStrict(t *testing.T) {
	claim, _ := json.Marshal(validClaimRequest())
	prog, _ := json.Marshal(ProgressEvent{Seq: 1, Time: t0, Phase: PhaseAgent, Message: "x"})
	m := validManifest()
	upload, _ := json.Marshal(ResultUpload{Evidence: validEvidence(), Manifest: &m})
	cases := []struct {
		name string
		run  func() error
		want error
		text string
	}{
		{"claim unknown field", func() error {
			_, err := DecodeClaimRequest(bytes.NewReader(bytes.Replace(claim, []byte(`{`), []byte(`{"token":"x",`), 1)))
			return err
		}, nil, `unknown field "token"`},
		{"claim oversize", func() error {
			_, err := DecodeClaimRequest(strings.NewReader(`{"claim_code":"` + strings.Repeat("a", MaxClaimBytes) + `"}`))
			return err
		}, ErrTooLarge, "larger"},
		{"claim invalid", func() error {
			_, err := DecodeClaimRequest(strings.NewReader(`{"attempt_id":"a","claim_code":"short","spec_version":"x"}`))
			return err
		}, nil, "claim_code"},
		{"progress oversize", func() error {
			_, err := DecodeProgressEvent(strings.NewReader(`{"message":"` + strings.Repeat("a", MaxProgressEventBytes) + `"}`))
			return err
		}, ErrTooLarge, "larger"},
		{"progress message too long but under the body cap", func() error {
			_, err := DecodeProgressEvent(bytes.NewReader(bytes.Replace(prog, []byte(`"message":"x"`), []byte(`"message":"`+strings.Repeat("a", MaxProgressMessageBytes+1)+`"`), 1)))
			return err
		}, nil, "message"},
		{"progress unknown field", func() error {
			_, err := DecodeProgressEvent(bytes.NewReader(bytes.Replace(prog, []byte(`{`), []byte(`{"level":"info",`), 1)))
			return err
		}, nil, `unknown field "level"`},
		{"result evidence version", func() error {
			_, err := DecodeResultUpload(bytes.NewReader(bytes.Replace(upload, []byte(EvidenceVersion), []byte("inspect.evidence/v1"), 1)), ManifestLimits{})
			return err
		}, ErrVersion, "evidence has version"},
		{"result evidence missing", func() error {
			_, err := DecodeResultUpload(strings.NewReader(`{}`), ManifestLimits{})
			return err
		}, ErrVersion, "evidence has no version"},
		{"result manifest version", func() error {
			_, err := DecodeResultUpload(bytes.NewReader(bytes.Replace(upload, []byte(ManifestVersion), []byte("inspect.change-manifest/v2"), 1)), ManifestLimits{})
			return err
		}, ErrVersion, "change manifest has version"},
		{"result unknown field", func() error {
			_, err := DecodeResultUpload(bytes.NewReader(bytes.Replace(upload, []byte(`{"evidence"`), []byte(`{"logs":"x","evidence"`), 1)), ManifestLimits{})
			return err
		}, nil, `unknown field "logs"`},
		{"result over limits", func() error {
			_, err := DecodeResultUpload(bytes.NewReader(upload), ManifestLimits{MaxFiles: 1})
			return err
		}, nil, "manifest.files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestCredentialsDoNotPrint(t *testing.T) {
	code := fakeToken("cc_", 32)
	tok := newGHS()
	for _, v := range []any{
		ClaimRequest{AttemptID: "a", ClaimCode: code},
		ClaimResponse{SessionToken: code, ExpiresAt: t1},
		RepoTokenResponse{Token: tok, ExpiresAt: t1},
		&RepoTokenResponse{Token: tok, ExpiresAt: t1},
	} {
		for _, format := range []string{"%v", "%s", "%+v"} {
			out := fmt.Sprintf(format, v)
			if strings.Contains(out, code) || strings.Contains(out, tok) || !strings.Contains(out, Redacted) {
				t.Errorf("Sprintf(%q, %T) = %q", format, v, out)
			}
		}
	}
}

func TestCleanProgressMessage(t *testing.T) {
	cases := map[string]string{
		"plain":                  "plain",
		"  lead\n\ttrail  \r\n ": "lead trail",
		"a\x00b\x1bc":            "a b c",
		"bidi\u202eevil":         "bidi evil",
		"zero\u200bwidth":        "zero width",
		"bad \xff byte":          "bad \uFFFD byte",
	}
	for in, want := range cases {
		if got := CleanProgressMessage(in); got != want {
			t.Errorf("CleanProgressMessage(%q) = %q, want %q", in, got, want)
		}
	}
	long := CleanProgressMessage(strings.Repeat("é", MaxProgressMessageBytes))
	if len(long) > MaxProgressMessageBytes || !utf8.ValidString(long) || !strings.HasSuffix(long, "…") {
		t.Errorf("long message: %d bytes, suffix %q", len(long), long[len(long)-6:])
	}
}

func FuzzCleanProgressMessage(f *testing.F) {
	f.Add("hello\nworld\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		p := ProgressEvent{Seq: 1, Time: t0, Phase: PhaseAgent, Message: CleanProgressMessage(s)}
		if err := p.Validate(); err != nil {
			t.Fatalf("CleanProgressMessage(%q) = %q is not a valid message: %v", s, p.Message, err)
		}
	})
}

func TestEgressRegistryPathKeepsTheEscapes(t *testing.T) {
	if got, want := EgressRegistryPath("a 1", "npmjs", "/@types%2fnode"), "/v1/attempts/a%201/egress/registry/npmjs/@types%2fnode"; got != want {
		t.Errorf("EgressRegistryPath = %q, want %q", got, want)
	}
}

func TestValidEgressPath(t *testing.T) {
	for p, ok := range map[string]bool{
		"v1/responses": true, "v1/messages": true, "v1/models/gpt-5.1": true,
		"": false, "..": false, "v1/../secret": false, "v1/./x": false, "../v1": false, "v1/..": false,
	} {
		if got := ValidEgressPath(p); got != ok {
			t.Errorf("ValidEgressPath(%q) = %v, want %v", p, got, ok)
		}
	}
}
