package app_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakenpm"
)

// probeJS asks the forwarder for what the egress must refuse, and prints
// each answer's status; it exits 0 whatever it hears, so that the session
// goes on and reports.
const probeJS = `const http = require('http')
const ask = (method, path) => new Promise(done => {
  const req = http.request({host: '127.0.0.1', port: 8931, method, path}, res => { res.resume(); console.log(method, path, res.statusCode); done() })
  req.on('error', e => { console.log(method, path, e.message); done() })
  req.end()
})
;(async () => {
  for (const [m, p] of JSON.parse(process.argv[2])) await ask(m, p)
})()
`

// Everything the egress refuses is refused before it reaches the upstream,
// recorded in the evidence, and listed in the pull request, on both
// executors: npm publish's PUT in setup, a request to another host, a path
// outside npm's protocol, a registry request from the agent, whose phase
// the server does not open, and requests the repository's own
// `registries:` narrowed away (decision 0021): to a registry it turned off,
// and to one it kept to setup, from verify.
func TestRealSessionRegistryRefusalsAreRecordedAndReachNoUpstream(t *testing.T) {
	forEachExecutor(t, testRegistryRefusals)
}

func testRegistryRefusals(t *testing.T, executor string) {
	const token = "npm-upstream-token-0123456789"
	up := fakenpm.Serve(t, fakenpm.WithToken(token, "inspect"))
	if _, err := up.Add(fakenpm.Version{Name: "left-pad", Version: "1.3.0", Files: map[string]string{"index.js": "module.exports = 1\n"}}); err != nil {
		t.Fatal(err)
	}
	setupProbes := `[["GET","http://evil.example/steal"],["GET","/v1/registries/npmjs/-/whoami"],["GET","/v1/registries/spare/left-pad"]]`
	agentProbes := `[["GET","/v1/registries/npmjs/left-pad"]]`
	verifyProbes := `[["GET","/v1/registries/npmjs/left-pad"]]`
	files := map[string]string{
		"package.json":     `{"name": "widgets", "version": "1.0.0"}` + "\n",
		"scripts/probe.js": probeJS,
		".github/inspect.yml": "agent:\n" +
			"  preset: command\n" +
			"  command: [\"sh\", \"-c\", \"node scripts/probe.js \\\"$1\\\" && echo 'looked at it' > NOTES.md\", \"agent\", '" + agentProbes + "']\n" +
			// The server opens all three to setup and verify.
			"registries:\n  npmjs: {phases: [setup]}\n  spare: {off: true}\n" +
			"setup:\n" +
			// npm asks for a token before it publishes; a made-up one,
			// which the egress never passes on.
			"  - name: publish\n    run: [sh, -c, \"echo //127.0.0.1:8931/v1/registries/npmjs/:_authToken=made-up > /tmp/npmrc && npm publish --userconfig /tmp/npmrc --ignore-scripts || true\"]\n" +
			"  - name: probes\n    run: [node, scripts/probe.js, '" + setupProbes + "']\n" +
			// npmmirror stays open to verify, so verify runs under the
			// forwarder, which refuses npmjs there.
			"verify:\n  - name: probes\n    run: [node, scripts/probe.js, '" + verifyProbes + "']\n",
	}
	r := newRealSessions(t, executor, func(c *config.Server) {
		npm := config.Registry{Kind: "npm", URL: up.URL(), Token: token}
		c.Egress.Registries = map[string]config.Registry{"npmjs": npm, "npmmirror": npm, "spare": npm}
	})
	before := len(up.Requests())
	sess := r.run(files, "/inspect take notes")
	// npm publish reads the packument first (a read, relayed); its PUT
	// and every probe are refused on the way.
	for _, q := range up.Requests()[before:] {
		if q.Route.IsWrite() || q.Method != "GET" || q.Package != "widgets" {
			t.Fatalf("reached the upstream: %s %s (%s)", q.Method, q.Path, q.Route)
		}
	}
	a, err := r.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	// The spec carries the registries as the repository narrowed them.
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		t.Fatal(err)
	}
	wantRegs := []contract.Registry{
		{Name: "npmjs", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup}},
		{Name: "npmmirror", Kind: "npm", Phases: []contract.Phase{contract.PhaseSetup, contract.PhaseVerify}},
	}
	if !reflect.DeepEqual(spec.Registries, wantRegs) {
		t.Errorf("the spec's registries = %+v, want %+v", spec.Registries, wantRegs)
	}
	var res contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &res); err != nil || res.Evidence.Egress == nil {
		t.Fatalf("no egress audit in the evidence: %v", err)
	}
	audit := res.Evidence.Egress
	want := []struct {
		method, upstream, path string
		phase                  contract.Phase
	}{
		{"PUT", "npmjs", "widgets", contract.PhaseSetup}, // npm publish
		{"GET", "", "http://evil.example/steal", contract.PhaseSetup},
		{"GET", "npmjs", "-/whoami", contract.PhaseSetup},
		{"GET", "spare", "left-pad", contract.PhaseSetup},
		{"GET", "npmjs", "left-pad", contract.PhaseAgent},
		{"GET", "npmjs", "left-pad", contract.PhaseVerify},
	}
	for _, w := range want {
		found := false
		for _, r := range audit.Refused {
			if r.Method == w.method && r.Upstream == w.upstream && strings.HasSuffix(r.Path, w.path) && r.Phase == w.phase {
				found = true
			}
		}
		if !found {
			t.Errorf("no refusal of %s %s %s in %s recorded; refused: %+v", w.method, w.upstream, w.path, w.phase, audit.Refused)
		}
	}
	if audit.RefusedCount < len(want) || audit.Registry.Requests != len(up.Requests())-before {
		t.Errorf("audit counts %d refused, %d relayed; want ≥ %d refused and %d relayed", audit.RefusedCount, audit.Registry.Requests, len(want), len(up.Requests())-before)
	}
	pr, _, err := r.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	for _, s := range []string{"refused", "`PUT`", "`-/whoami`", "`left-pad`"} {
		if !strings.Contains(body, s) {
			t.Errorf("the PR body does not list %q:\n%s", s, body)
		}
	}
	if strings.Contains(body, token) || strings.Contains(r.allLogs(), token) {
		t.Fatal("the upstream's token leaked")
	}
}
