package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// sumGolangOrg is sum.golang.org's verifier key as the server's default
// carries it (config's test holds it to the go toolchain's own).
const sumGolangOrg = config.DefaultSumDB

var (
	goRegistry  = contract.Registry{Name: "gomods", Kind: policy.RegistryGoProxy, Phases: []contract.Phase{contract.PhaseSetup, contract.PhaseVerify}, SumDB: sumGolangOrg}
	npmRegistry = contract.Registry{Name: "npmjs", Kind: policy.RegistryNPM, Phases: []contract.Phase{contract.PhaseSetup}}
)

// egressSession is a claimed session against the fake channel, with no
// sandbox: for calling the egress handler directly.
func egressSession(t *testing.T, regs ...contract.Registry) (*session, *channeltest.Server) {
	t.Helper()
	ch := channeltest.New(t)
	spec := ch.Spec("sess-reg", "sess-reg-a1", strings.Repeat("a", 40), []string{"true"})
	spec.Registries = regs
	code := ch.AddAttempt(spec)
	c, err := newChannel(ch.URL(), "", spec.AttemptID, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	if _, err := c.claim(context.Background(), code); err != nil {
		t.Fatal(err)
	}
	log, red := zerolog.New(zerolog.NewTestWriter(t)), contract.NewRedactor(code)
	return &session{cfg: Config{SandboxPath: DefaultSandboxPath}, log: log, ch: c, red: red, spec: spec, gate: newEgressGate(spec.Registries, c, red, log).forAgent(openAIAgent)}, ch
}

// openAIAgent is an agent whose provider speaks the OpenAI API, for the
// gate's model routes.
var openAIAgent = contract.Agent{Preset: contract.PresetCommand, Model: "m", Provider: "openai", ProviderKind: contract.ProviderKindOpenAI}

// at moves the session to phase, as enter does, without a progress event.
func (s *session) at(p contract.Phase) {
	s.phase = p
	s.gate.setPhase(p)
}

func serveEgress(s *session, method, target string, hdr http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	maps.Copy(r.Header, hdr)
	w := httptest.NewRecorder()
	s.gate.handler().ServeHTTP(w, r)
	return w
}

// refusalOf decodes a 403's body, failing unless it is one.
func refusalOf(t *testing.T, w *httptest.ResponseRecorder) egressRefusal {
	t.Helper()
	if w.Code != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", w.Code, w.Body)
	}
	var body egressRefusal
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Type != "inspect_egress_refused" {
		t.Fatalf("refusal body %q: %v", w.Body, err)
	}
	return body
}

// An allowed read in setup goes to the channel's registry route with the
// session token and only the allowlisted headers, and its answer comes back
// with only the allowlisted response headers.
func TestEgressRelaysARegistryReadInSetup(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Set-Cookie", "upstream=1")
		w.Header().Set("X-Upstream-Secret", "s3cret")
		fmt.Fprint(w, "v0.1.0\nv0.2.0\n")
	})
	s.at(contract.PhaseSetup)
	w := serveEgress(s, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/list?go-get=1", http.Header{
		"Accept":                      {"*/*"},
		"User-Agent":                  {"Go-http-client/1.1"},
		"If-None-Match":               {`"v0"`},
		"Authorization":               {"Bearer made-up"},
		"Cookie":                      {"x=1"},
		contract.HeaderSessionToken:   {"forged"},
		"X-Forwarded-For":             {"10.0.0.1"},
		"Npm-Auth-Type":               {"web"},
		contract.HeaderRunnerVersion:  {"forged"},
		"Proxy-Authorization":         {"Basic eDp5"},
		"If-Modified-Since":           {"Mon, 02 Jan 2006 15:04:05 GMT"},
		"Accept-Encoding-Not-Allowed": {"x"},
	})
	if w.Code != http.StatusOK || w.Body.String() != "v0.1.0\nv0.2.0\n" {
		t.Fatalf("got %d %q", w.Code, w.Body)
	}
	if got := w.Header().Get("ETag"); got != `"v1"` {
		t.Errorf("ETag = %q", got)
	}
	if w.Header().Get("Set-Cookie") != "" || w.Header().Get("X-Upstream-Secret") != "" {
		t.Errorf("response headers beyond the allowlist came back: %v", w.Header())
	}
	a := ch.Attempt(s.spec.AttemptID)
	if len(a.RegistryRequests) != 1 {
		t.Fatalf("registry requests = %+v", a.RegistryRequests)
	}
	req := a.RegistryRequests[0]
	if req.Registry != "gomods" || req.Path != "golang.org/x/mod/@v/list" || req.Method != "GET" || req.RawQuery != "" {
		t.Errorf("relayed %+v", req)
	}
	if got := req.Header.Get(contract.HeaderSessionToken); got != a.SessionToken {
		t.Errorf("session token %q, want the attempt's", got)
	}
	for k := range req.Header {
		switch k {
		case "Accept", "User-Agent", "If-None-Match", "If-Modified-Since", contract.HeaderSessionToken, contract.HeaderRunnerVersion, "Accept-Encoding":
			// Accept-Encoding is Go's transport's own (gzip, decoded on
			// the way back).
		default:
			t.Errorf("header %s went on: %q", k, req.Header[k])
		}
	}
	if got := req.Header.Get(contract.HeaderRunnerVersion); got != "test" {
		t.Errorf("runner version %q", got)
	}
	if got := req.Header.Get("User-Agent"); got != "Go-http-client/1.1" {
		t.Errorf("User-Agent %q", got)
	}
	if v := ch.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %q", v)
	}
	if n := s.gate.refusals.Load(); n != 0 {
		t.Errorf("%d refusals counted", n)
	}
}

// A scoped npm name keeps its escaped slash on the way to the app, and a
// HEAD is relayed as a HEAD.
func TestEgressKeepsARegistryPathEscaped(t *testing.T) {
	s, ch := egressSession(t, npmRegistry)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "2")
		if r.Method == http.MethodGet {
			fmt.Fprint(w, "{}")
		}
	})
	s.at(contract.PhaseSetup)
	for _, m := range []string{"GET", "HEAD"} {
		if w := serveEgress(s, m, "/v1/registries/npmjs/@types%2fnode", http.Header{"Accept": {"application/vnd.npm.install-v1+json"}}); w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", m, w.Code, w.Body)
		} else if got := w.Header().Get("Content-Length"); got != "2" {
			t.Errorf("%s: Content-Length %q", m, got)
		}
	}
	reqs := ch.Attempt(s.spec.AttemptID).RegistryRequests
	if len(reqs) != 2 || reqs[0].RawPath != "@types%2fnode" || reqs[0].Path != "@types/node" || reqs[1].Method != "HEAD" {
		t.Fatalf("relayed %+v", reqs)
	}
	if got := reqs[0].Header.Get("Accept"); got != "application/vnd.npm.install-v1+json" {
		t.Errorf("Accept %q", got)
	}
}

// What the registry egress refuses never reaches the channel, is counted,
// and says in its 403 what is open.
func TestEgressRefusesRegistryRequests(t *testing.T) {
	gomodsSetup := `"registries":[{"name":"gomods","kind":"goproxy","url":"http://127.0.0.1:8931/v1/registries/gomods/","phases":["setup","verify"]},{"name":"npmjs","kind":"npm","url":"http://127.0.0.1:8931/v1/registries/npmjs/","phases":["setup"]}]`
	for _, tc := range []struct {
		name          string
		phase         contract.Phase
		method        string
		target        string
		want          []string // in the body
		wantNotInBody string
	}{
		{"the agent phase", contract.PhaseAgent, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/list",
			[]string{`registry \"gomods\" is open only to these phases: setup, verify (not agent)`, "the model proxy at " + ModelBaseURL("<provider>"), `"phase":"agent"`}, `"registries"`},
		{"PUT", contract.PhaseSetup, "PUT", "/v1/registries/gomods/golang.org/x/mod/@v/v0.1.0.zip",
			[]string{"only GET and HEAD", gomodsSetup}, ""},
		{"POST", contract.PhaseSetup, "POST", "/v1/registries/npmjs/-/v1/login",
			[]string{"only GET and HEAD"}, ""},
		{"an unknown registry", contract.PhaseSetup, "GET", "/v1/registries/elsewhere/golang.org/x/mod/@v/list",
			[]string{`no registry named \"elsewhere\"`, gomodsSetup}, ""},
		{"a bad registry name", contract.PhaseSetup, "GET", "/v1/registries/Else%2fwhere/x",
			[]string{"only /v1/registries/{name}/... is served"}, ""},
		{"npm publish", contract.PhaseSetup, "PUT", "/v1/registries/npmjs/left-pad",
			[]string{"only GET and HEAD"}, ""},
		{"npm dist-tags", contract.PhaseSetup, "GET", "/v1/registries/npmjs/-/package/left-pad/dist-tags",
			[]string{"registry operations under /-/"}, ""},
		{"npm login", contract.PhaseSetup, "GET", "/v1/registries/npmjs/-/whoami",
			[]string{"registry operations under /-/"}, ""},
		{"npm audit", contract.PhaseSetup, "GET", "/v1/registries/npmjs/-/npm/v1/security/advisories/bulk",
			[]string{"audits are not served"}, ""},
		{"a path outside the protocol", contract.PhaseSetup, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/v0.1.0.tar",
			[]string{"not a GOPROXY version file"}, ""},
		{"dot-dot", contract.PhaseSetup, "GET", "/v1/registries/gomods/x/%2e%2e/@v/list",
			[]string{"not a clean relative path"}, ""},
		{"verify, npm not open", contract.PhaseVerify, "GET", "/v1/registries/npmjs/left-pad",
			[]string{`registry \"npmjs\" is open only to these phases: setup (not verify)`, `"name":"gomods"`}, `"name":"npmjs"`},
		{"CONNECT", contract.PhaseSetup, "CONNECT", "registry.npmjs.org:443",
			[]string{"this is not a proxy"}, ""},
		{"absolute-form", contract.PhaseSetup, "GET", "http://proxy.golang.org/v1/registries/gomods/golang.org/x/mod/@v/list",
			[]string{"this is not a proxy"}, ""},
		{"the model route in setup", contract.PhaseSetup, "POST", "/v1/providers/openai/responses",
			[]string{"the model proxy serves the agent only", `"phase":"setup"`}, "the model proxy at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ch := egressSession(t, goRegistry, npmRegistry)
			ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) { t.Errorf("relayed %s %s", r.Method, r.URL) })
			ch.ServeModel(func(w http.ResponseWriter, r *http.Request) { t.Errorf("relayed %s %s", r.Method, r.URL) })
			s.at(tc.phase)
			w := serveEgress(s, tc.method, tc.target, nil)
			refusalOf(t, w)
			body := w.Body.String()
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("the refusal lacks %s:\n%s", want, body)
				}
			}
			if tc.wantNotInBody != "" && strings.Contains(body, tc.wantNotInBody) {
				t.Errorf("the refusal has %s:\n%s", tc.wantNotInBody, body)
			}
			a := ch.Attempt(s.spec.AttemptID)
			if len(a.RegistryRequests)+len(a.ModelRequests) > 0 {
				t.Errorf("relayed %+v %+v", a.RegistryRequests, a.ModelRequests)
			}
			if n := s.gate.refusals.Load(); n != 1 {
				t.Errorf("%d refusals counted, want 1", n)
			}
		})
	}
}

// The model route in the agent phase is as it was: relayed, and its
// refusals say what they said.
func TestEgressModelRouteUnchangedInTheAgentPhase(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	ch.ServeModel(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	s.at(contract.PhaseAgent)
	if w := serveEgress(s, "POST", "/v1/providers/openai/responses", nil); w.Code != http.StatusOK || w.Body.String() != "ok" {
		t.Fatalf("model route: %d %q", w.Code, w.Body)
	}
	s2, _ := egressSession(t)
	s2.at(contract.PhaseAgent)
	w := serveEgress(s2, "GET", "/v1/models", nil)
	refusalOf(t, w)
	want := `{"error":{"type":"inspect_egress_refused","message":"Inspect's sandbox has no network; it reaches only the model proxy at http://127.0.0.1:8931/v1/providers/<provider>: only /v1/providers/{provider}/... is served"}}` + "\n"
	if got := w.Body.String(); got != want {
		t.Errorf("refusal body\n%s\nwant\n%s", got, want)
	}
}

func TestRegistryEnv(t *testing.T) {
	goPrivate := goRegistry
	goPrivate.Name, goPrivate.NoSumDB = "private", []string{"corp.example/*", "git.corp.example"}
	pypi := contract.Registry{Name: "pypi", Kind: policy.RegistryPyPI, Phases: []contract.Phase{contract.PhaseSetup, contract.PhaseAgent}}
	goAgent := goRegistry
	goAgent.Name, goAgent.Phases = "agentmods", []contract.Phase{contract.PhaseAgent}
	goClear := map[string]string{"GOPRIVATE": "", "GONOPROXY": "", "GOINSECURE": "", "GONOSUMCHECK": ""}
	with := func(base map[string]string, more ...map[string]string) map[string]string {
		m := maps.Clone(base)
		for _, x := range more {
			maps.Copy(m, x)
		}
		return m
	}
	goEnv := with(goClear, map[string]string{"GOPROXY": "http://127.0.0.1:8931/v1/registries/gomods/", "GOSUMDB": sumGolangOrg, "GONOSUMDB": ""})
	npmEnv := map[string]string{"npm_config_registry": "http://127.0.0.1:8931/v1/registries/npmjs/", "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false", "npm_config_replace_registry_host": "always"}
	pypiEnv := map[string]string{"PIP_INDEX_URL": "http://127.0.0.1:8931/v1/registries/pypi/simple/", "PIP_TRUSTED_HOST": "127.0.0.1:8931"}
	for _, tc := range []struct {
		name  string
		regs  []contract.Registry
		phase contract.Phase
		want  map[string]string
	}{
		{"none", nil, contract.PhaseSetup, map[string]string{}},
		{"goproxy in setup", []contract.Registry{goRegistry}, contract.PhaseSetup, goEnv},
		{"goproxy in verify", []contract.Registry{goRegistry}, contract.PhaseVerify, goEnv},
		// Closed to the agent, and pointed at all the same: the egress
		// refuses and records what go asks for there.
		{"goproxy closed to the agent", []contract.Registry{goRegistry}, contract.PhaseAgent, goEnv},
		{"no_sumdb", []contract.Registry{goPrivate}, contract.PhaseSetup, with(goEnv, map[string]string{
			"GOPROXY": "http://127.0.0.1:8931/v1/registries/private/", "GONOSUMDB": "corp.example/*,git.corp.example"})},
		{"the first goproxy wins", []contract.Registry{goRegistry, goPrivate}, contract.PhaseSetup, goEnv},
		{"the first open one wins", []contract.Registry{npmRegistry, goPrivate, goRegistry}, contract.PhaseVerify, with(goEnv, npmEnv, map[string]string{
			"GOPROXY": "http://127.0.0.1:8931/v1/registries/private/", "GONOSUMDB": "corp.example/*,git.corp.example"})},
		{"an open one wins over a closed one before it", []contract.Registry{goRegistry, goAgent}, contract.PhaseAgent, with(goEnv, map[string]string{
			"GOPROXY": "http://127.0.0.1:8931/v1/registries/agentmods/"})},
		{"every kind", []contract.Registry{goRegistry, npmRegistry, pypi}, contract.PhaseSetup, with(goEnv, npmEnv, pypiEnv)},
		{"every kind in the agent, open or not", []contract.Registry{goRegistry, npmRegistry, pypi}, contract.PhaseAgent, with(goEnv, npmEnv, pypiEnv)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := registryEnv(tc.regs, tc.phase); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("registryEnv =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// The registry env wins over the repo's, in any case; the rest of the
// repo's env stays, and a phase with no registry gets the repo's as is.
func TestRegistryEnvOverridesTheRepos(t *testing.T) {
	s, _ := egressSession(t, goRegistry, npmRegistry)
	s.spec.Env = map[string]string{"GOPROXY": "direct", "GOSUMDB": "off", "GOPRIVATE": "*", "NPM_CONFIG_REGISTRY": "http://evil.example/", "GOFLAGS": "-mod=mod"}
	s.at(contract.PhaseSetup)
	env := s.sandboxEnv()
	for _, want := range []string{"GOPROXY=" + RegistryBaseURL("gomods"), "GOSUMDB=" + sumGolangOrg, "GOPRIVATE=", "npm_config_registry=" + RegistryBaseURL("npmjs"), "GOFLAGS=-mod=mod", "INSPECT_SESSION_ID=sess-reg"} {
		if !slices.Contains(env, want) {
			t.Errorf("setup's env lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "NPM_CONFIG_REGISTRY=") || kv == "GOPROXY=direct" {
			t.Errorf("the repo's %s survived", kv)
		}
	}
	if agent := s.agentEnv(nil); !slices.Contains(agent, "npm_config_registry="+RegistryBaseURL("npmjs")) {
		t.Errorf("the agent's env in setup lacks the registry: %q", agent)
	}
	// No registry is open to the agent: its package managers are pointed
	// at the egress all the same, to be refused there and recorded, and
	// the repo's names lose as in setup.
	s.at(contract.PhaseAgent)
	agentEnv := s.agentEnv(map[string]string{"OPENAI_BASE_URL": ModelBaseURL("openai")})
	for _, want := range []string{"GOPROXY=" + RegistryBaseURL("gomods"), "GOPRIVATE=", "npm_config_registry=" + RegistryBaseURL("npmjs")} {
		if !slices.Contains(agentEnv, want) {
			t.Errorf("the agent's env, with no registry open, lacks %s: %q", want, agentEnv)
		}
	}
	for _, kv := range agentEnv {
		if strings.HasPrefix(kv, "NPM_CONFIG_REGISTRY=") || kv == "GOPROXY=direct" || kv == "GOPRIVATE=*" {
			t.Errorf("the repo's %s survived in the agent's env", kv)
		}
	}
	if !s.egressFor(contract.PhaseAgent) || !s.egressFor(contract.PhaseSetup) || !s.egressFor(contract.PhaseVerify) {
		t.Error("egressFor: the agent always, setup and verify with a registry open")
	}
	// npmjs is closed to verify: verify runs under the forwarder all the
	// same, so that npm's requests there are refused and recorded.
	s.spec.Registries = []contract.Registry{npmRegistry}
	s.gate = newEgressGate(s.spec.Registries, s.ch, s.red, s.log).forAgent(openAIAgent)
	if !s.egressFor(contract.PhaseVerify) {
		t.Error("egressFor(verify) with a registry closed to verify")
	}
	s.spec.Registries = nil
	s.gate = newEgressGate(s.spec.Registries, s.ch, s.red, s.log).forAgent(openAIAgent)
	if s.egressFor(contract.PhaseVerify) || s.egressFor(contract.PhaseSetup) {
		t.Error("egressFor(setup or verify) with no registry at all")
	}
}

// In the sandbox: setup's real `go build` downloads a module, and checks it
// against the checksum database (there is no go.sum yet), through the
// forwarder, the egress socket and the channel's registry route, with the
// session token added on the way; the agent and verify, to which the
// registry is not open, have go pointed at the egress all the same and are
// refused there, and each refusal is recorded.
func TestSetupDownloadsModulesThroughTheRegistryEgress(t *testing.T) {
	alpha := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
		"go.mod":   fakegoproxy.GoMod("fake.test/alpha"),
		"alpha.go": "// Package alpha greets.\npackage alpha\n\n// Greeting is a greeting.\nfunc Greeting() string { return \"hello\" }\n",
	}}
	gp := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{alpha}})
	_, verifierKey := gp.SumDB()
	ch := channeltest.New(t)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue(contract.PathValueRegistry) != "gomods" {
			http.NotFound(w, r)
			return
		}
		up := r.Clone(r.Context())
		up.URL.Path, up.URL.RawPath = "/"+r.PathValue(contract.PathValueRest), ""
		gp.Handler().ServeHTTP(w, up)
	})
	agent := `set -u
echo "agent: GOPROXY=[${GOPROXY:-}] $(curl -sS -o /dev/null -w '%{http_code}' http://` + EgressListen + `/v1/registries/gomods/fake.test/alpha/@v/list)" > "$INSPECT_ANSWER_FILE"
`
	sha := ch.Seed(map[string]string{
		"go.mod":   "module consumer.test/app\n\ngo 1.21\n\nrequire fake.test/alpha v1.0.0\n",
		"app.go":   "// Package app greets.\npackage app\n\nimport \"fake.test/alpha\"\n\n// Hi greets.\nfunc Hi() string { return alpha.Greeting() }\n",
		"agent.sh": agent,
	})
	spec := ch.Spec("sess-goreg", "sess-goreg-a1", sha, []string{"sh", "agent.sh"},
		contract.Command{Name: "offline", Timeout: contract.Duration(time.Minute), Argv: []string{"sh", "-c", `echo "verify: GOPROXY=[${GOPROXY:-}] $(curl -sS -m 5 -o /dev/null -w '%{http_code}' "${GOPROXY}fake.test/alpha/@v/list")"`}})
	spec.Registries = []contract.Registry{{Name: "gomods", Kind: policy.RegistryGoProxy, Phases: []contract.Phase{contract.PhaseSetup}, SumDB: verifierKey}}
	// The repo's own GOPROXY and GOSUMDB lose to the registry's.
	spec.Env = map[string]string{"GOPROXY": "https://proxy.golang.org,direct", "GOSUMDB": "off", "GOFLAGS": "-mod=mod -modcacherw"}
	spec.Setup = []contract.Command{{Name: "build", Timeout: contract.Duration(2 * time.Minute), Argv: []string{"sh", "-c", `go env GOPROXY GOSUMDB && go build ./... && echo built`}}}
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	byName := map[string]string{}
	for _, c := range u.Evidence.Commands {
		byName[c.Name] = c.OutputTail
	}
	if out := byName["build"]; !strings.Contains(out, RegistryBaseURL("gomods")+"\n"+verifierKey+"\n") || !strings.Contains(out, "built") {
		t.Errorf("setup's output:\n%s", out)
	}
	if got := strings.TrimSpace(u.Evidence.FinalAnswer); got != "agent: GOPROXY=["+RegistryBaseURL("gomods")+"] 403" {
		t.Errorf("the agent saw %q", got)
	}
	if out := byName["offline"]; !strings.Contains(out, "verify: GOPROXY=["+RegistryBaseURL("gomods")+"] 403") {
		t.Errorf("verify's output:\n%s", out)
	}
	a := ch.Attempt(spec.AttemptID)
	kinds := map[fakegoproxy.Kind]int{}
	for _, r := range gp.Requests() {
		kinds[r.Kind]++
	}
	if kinds[fakegoproxy.KindZip] != 1 || kinds[fakegoproxy.KindSumDBSupported] == 0 || kinds[fakegoproxy.KindSumDBLookup] != 1 {
		t.Errorf("the proxy saw %v", kinds)
	}
	for _, r := range a.RegistryRequests {
		if r.Header.Get(contract.HeaderSessionToken) != a.SessionToken || r.Method != http.MethodGet {
			t.Errorf("relayed %s %s without the session token", r.Method, r.Path)
		}
	}
	if len(a.RegistryRequests) != len(gp.Requests()) {
		t.Errorf("%d registry requests relayed, %d reached the proxy", len(a.RegistryRequests), len(gp.Requests()))
	}
	// The evidence's audit has every relayed request, in setup, and the
	// agent's and verify's refusals.
	audit := u.Evidence.Egress
	if audit == nil || audit.Registry.Requests != len(a.RegistryRequests) || len(audit.Records) != len(a.RegistryRequests) || audit.Registry.Bytes == 0 {
		t.Fatalf("audit %+v, %d requests relayed", audit, len(a.RegistryRequests))
	}
	for _, r := range audit.Records {
		if r.Kind != contract.EgressRegistry || r.Phase != contract.PhaseSetup || r.Upstream != "gomods" || r.Method != "GET" || r.Status != http.StatusOK {
			t.Errorf("record %+v", r)
		}
	}
	if audit.RefusedCount != 2 || len(audit.Refused) != 2 {
		t.Fatalf("refusals %+v", audit.Refused)
	}
	for i, phase := range []contract.Phase{contract.PhaseAgent, contract.PhaseVerify} {
		if r := audit.Refused[i]; r.Phase != phase || r.Path != "fake.test/alpha/@v/list" || r.Upstream != "gomods" || r.Status != http.StatusForbidden ||
			!strings.Contains(r.Why, "open only to these phases: setup (not "+string(phase)+")") {
			t.Errorf("refusal %d: %+v", i, r)
		}
	}
}

// Each egress request is recorded in the audit with the phase it arrived
// in: a relayed registry GET with its status and the bytes relayed, a
// refused PUT (which never reaches the channel) among the refusals, and a
// model request with its provider.
func TestEgressAuditRecordsEachRequest(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "v0.1.0\nv0.2.0\n") })
	ch.ServeModel(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "model answer")
	})
	s.at(contract.PhaseSetup)
	if w := serveEgress(s, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/list?go-get=1", nil); w.Code != http.StatusOK {
		t.Fatalf("GET: %d %s", w.Code, w.Body)
	}
	refusalOf(t, serveEgress(s, "PUT", "/v1/registries/gomods/golang.org/x/mod/@v/v0.1.0.zip?x=1", nil))
	s.at(contract.PhaseAgent)
	if w := serveEgress(s, "POST", "/v1/providers/openai/responses", nil); w.Code != http.StatusTeapot {
		t.Fatalf("model: %d %s", w.Code, w.Body)
	}
	refusalOf(t, serveEgress(s, "CONNECT", "registry.npmjs.org:443", nil))

	a := s.gate.evidence()
	if a == nil {
		t.Fatal("no audit")
	}
	for i := range a.Records {
		if a.Records[i].Millis < 0 {
			t.Errorf("record %d: negative millis", i)
		}
		a.Records[i].Millis = 0 // the time taken is the machine's
	}
	want := &contract.EgressAudit{
		Model:        contract.EgressCount{Requests: 1, Bytes: int64(len("model answer"))},
		Registry:     contract.EgressCount{Requests: 1, Bytes: int64(len("v0.1.0\nv0.2.0\n"))},
		RefusedCount: 2,
		Records: []contract.EgressRecord{
			{Kind: contract.EgressRegistry, Phase: contract.PhaseSetup, Upstream: "gomods", Method: "GET", Path: "golang.org/x/mod/@v/list", Status: 200, Bytes: 14},
			{Kind: contract.EgressModel, Phase: contract.PhaseAgent, Upstream: "openai", Method: "POST", Path: "responses", Status: http.StatusTeapot, Bytes: 12},
		},
		Refused: []contract.EgressRecord{
			{Kind: contract.EgressRefused, Phase: contract.PhaseSetup, Upstream: "gomods", Method: "PUT", Path: "golang.org/x/mod/@v/v0.1.0.zip", Status: 403,
				Why: "only GET and HEAD reach a registry: the sandbox may download packages, never publish or change them"},
			{Kind: contract.EgressRefused, Phase: contract.PhaseAgent, Method: "CONNECT", Path: "registry.npmjs.org:443", Status: 403,
				Why: "this is not a proxy; no other host can be reached, and neither CONNECT nor TRACE is served"},
		},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("audit\n%+v\nwant\n%+v", a, want)
	}
	if n := s.gate.refusals.Load(); n != 2 {
		t.Errorf("%d refusals counted, want 2", n)
	}
	if reqs := ch.Attempt(s.spec.AttemptID).RegistryRequests; len(reqs) != 1 {
		t.Errorf("relayed %+v", reqs)
	}
	ev := contract.Evidence{Version: contract.EvidenceVersion, SessionID: "s", AttemptID: "a", PinnedSHA: strings.Repeat("a", 40),
		StartedAt: time.Unix(1, 0), EndedAt: time.Unix(2, 0), Outcome: contract.OutcomeOK, Egress: a}
	if err := ev.Validate(); err != nil {
		t.Errorf("evidence with the audit: %v", err)
	}
}

// Requests arrive concurrently; each is recorded once, a secret in a
// refused path redacted.
func TestEgressAuditIsSafeForConcurrentRequests(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") })
	s.at(contract.PhaseSetup)
	secret := "ghs_" + strings.Repeat("A", 36)
	const n = 16
	done := make(chan int, 2*n)
	for range n {
		go func() { done <- serveEgress(s, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/list", nil).Code }()
		go func() { done <- serveEgress(s, "DELETE", "/v1/registries/gomods/"+secret, nil).Code }()
	}
	for range 2 * n {
		<-done
	}
	a := s.gate.evidence()
	if a.Registry.Requests != n || len(a.Records) != n || a.RefusedCount != n || len(a.Refused) != n {
		t.Fatalf("audit counts %+v, %d records, %d refused", a.Registry, len(a.Records), len(a.Refused))
	}
	for _, r := range a.Refused {
		if r.Path != contract.Redacted {
			t.Fatalf("refused path %q, want it redacted", r.Path)
		}
	}
}

// A registry answer the app cuts (decision 0059: a rewritten document goes
// without a length, and the app cuts its answer when the upstream's body
// is cut) reaches the package manager cut, never as a short whole one: a
// PEP 503 page ended early would parse, listing fewer files.
func TestEgressPassesACutRegistryAnswerOnCut(t *testing.T) {
	s, ch := egressSession(t, pypiRegistryForCut)
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!DOCTYPE html><html><body><a href="http://10.0.0.1/v1/registries/pypi/files/demo-1.0.whl#sha256=00">demo-1.0</a>`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // as the app cuts it
	})
	s.at(contract.PhaseSetup)
	front := httptest.NewServer(s.gate.handler())
	t.Cleanup(front.Close)
	// The status line and the first of the page arrive (the relay
	// passes them as they come), and only then the break: a request that
	// failed before its headers would say nothing of how a cut answer
	// reaches the sandbox.
	resp, err := http.Get(front.URL + "/v1/registries/pypi/simple/demo/")
	if err != nil {
		t.Fatalf("no status line: %v; want the answer begun, then cut", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != -1 {
		t.Fatalf("answer %d with length %d, want the app's 200 without a length", resp.StatusCode, resp.ContentLength)
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("the cut page reached the sandbox whole: %d %q", resp.StatusCode, body)
	}
	if !strings.HasPrefix(`<!DOCTYPE html><html><body>`, string(body)) && !strings.HasPrefix(string(body), `<!DOCTYPE html><html><body>`) {
		t.Fatalf("before the break the sandbox got %q, not the start of the app's page", body)
	}
}

var pypiRegistryForCut = contract.Registry{Name: "pypi", Kind: policy.RegistryPyPI, Phases: []contract.Phase{contract.PhaseSetup}}

// heldRegistry is the app's registry route in a test, holding every
// request until releaseAll: holding counts those it holds now, most the
// most it held at once, and arrived gets one signal per request.
type heldRegistry struct {
	arrived       chan struct{}
	releaseAll    func()
	holding, most atomic.Int64
}

func holdRegistry(t *testing.T, ch *channeltest.Server) *heldRegistry {
	t.Helper()
	release := make(chan struct{})
	hr := &heldRegistry{arrived: make(chan struct{}, 2*maxRegistryRelays), releaseAll: sync.OnceFunc(func() { close(release) })}
	t.Cleanup(hr.releaseAll) // a failed test's requests end before the server does
	ch.ServeRegistry(func(w http.ResponseWriter, r *http.Request) {
		n := hr.holding.Add(1)
		for m := hr.most.Load(); n > m && !hr.most.CompareAndSwap(m, n); m = hr.most.Load() {
		}
		hr.arrived <- struct{}{}
		<-release
		hr.holding.Add(-1)
		fmt.Fprint(w, "v0.1.0\n")
	})
	return hr
}

// The class closed (issue 33, decision 0059): what waits grows with what
// the sandbox asks for. The app caps an attempt's registry requests in
// flight, but each one over its cap still held a connection and a parked
// handler there: the gate relayed every request at once, on a transport
// with no cap on connections. Now the gate relays at most
// maxRegistryRelays, the rest waiting here, on a transport of their own,
// and the channel's other routes still get through while they all wait.
func TestEgressRelaysAtMostTheCapOfRegistryRequestsAndTheRestWaitInTheSupervisor(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	hr := holdRegistry(t, ch)
	arrived, releaseAll, holding, most := hr.arrived, hr.releaseAll, &hr.holding, &hr.most
	const over = 3
	queued := make(chan struct{}, over)
	s.gate.registryQueued = queued
	s.at(contract.PhaseSetup)
	codes := make(chan int, maxRegistryRelays+over)
	for range maxRegistryRelays + over {
		go func() { codes <- serveEgress(s, "GET", "/v1/registries/gomods/golang.org/x/mod/@v/list", nil).Code }()
	}
	for got, waiting := 0, 0; got < maxRegistryRelays || waiting < over; {
		select {
		case <-arrived:
			if got++; got > maxRegistryRelays {
				t.Fatalf("%d registry requests reached the app at once, want at most %d, the rest waiting in the supervisor", got, maxRegistryRelays)
			}
		case <-queued:
			waiting++
		}
	}
	// All the cap's turns held at the app and the rest waiting here: the
	// session's progress still reaches the app, on its own connection.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ch.progress(ctx, contract.ProgressEvent{Seq: 1, Time: time.Now(), Phase: contract.PhaseSetup}); err != nil {
		t.Fatalf("progress while the registry requests wait: %v", err)
	}
	if n := holding.Load(); n != maxRegistryRelays {
		t.Fatalf("the app holds %d registry requests, want the cap, %d", n, maxRegistryRelays)
	}
	releaseAll()
	for range maxRegistryRelays + over {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a registry request was answered %d; want every one served once its turn came", code)
		}
	}
	if m := most.Load(); m > maxRegistryRelays {
		t.Fatalf("the app held %d at once, want at most %d", m, maxRegistryRelays)
	}
	if got := len(ch.Attempt(s.spec.AttemptID).RegistryRequests); got != maxRegistryRelays+over {
		t.Fatalf("%d relayed, want %d", got, maxRegistryRelays+over)
	}
}

// The channel's registry transport holds at most maxRegistryRelays
// connections, whoever calls it: the extra ones wait for a connection,
// and the control routes, on their own transport, do not.
func TestChannelRegistryRequestsShareAtMostTheCapOfConnections(t *testing.T) {
	s, ch := egressSession(t, goRegistry)
	hr := holdRegistry(t, ch)
	arrived, releaseAll, most := hr.arrived, hr.releaseAll, &hr.most
	const over = 2
	waitingForConn := make(chan struct{}, maxRegistryRelays+over)
	trace := &httptrace.ClientTrace{GetConn: func(string) { waitingForConn <- struct{}{} }}
	ctx := httptrace.WithClientTrace(context.Background(), trace)
	errs := make(chan error, maxRegistryRelays+over)
	for range maxRegistryRelays + over {
		go func() {
			resp, err := s.ch.registry(ctx, http.MethodGet, "gomods", "golang.org/x/mod/@v/list", http.Header{})
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for range maxRegistryRelays + over {
		<-waitingForConn
	}
	for range maxRegistryRelays {
		<-arrived
	}
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ch.progress(pctx, contract.ProgressEvent{Seq: 1, Time: time.Now(), Phase: contract.PhaseSetup}); err != nil {
		t.Fatalf("progress while the registry connections are all held: %v", err)
	}
	releaseAll()
	for range maxRegistryRelays + over {
		if err := <-errs; err != nil {
			t.Errorf("a registry request: %v", err)
		}
	}
	if m := most.Load(); m > maxRegistryRelays {
		t.Fatalf("the app held %d registry requests at once through one channel, want at most %d", m, maxRegistryRelays)
	}
}
