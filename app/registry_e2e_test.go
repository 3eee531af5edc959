package app_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
)

// goDepsRepo is the sample repository made a module that needs a
// third-party module it does not vendor: its go.sum names fake.test/alpha,
// which only the registry egress can bring.
func goDepsRepo(up *fakegoproxy.Proxy, alpha fakegoproxy.Module) map[string]string {
	files := examples.SampleRepo()
	files["go.mod"] = "module example.com/widgets\n\ngo 1.21\n\nrequire fake.test/alpha v1.0.0\n"
	files["go.sum"] = up.GoSum(alpha.Path, alpha.Version)
	files["uses.go"] = "package widgets\n\nimport \"fake.test/alpha\"\n\n// Greeting comes from a dependency.\nfunc Greeting() string { return alpha.Hello }\n"
	files[".github/inspect.yml"] = "agent:\n" +
		"  preset: command\n" +
		"  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\n" +
		"env:\n  GOTOOLCHAIN: local\n  GOFLAGS: -mod=readonly\n" +
		"setup:\n  - name: modules\n    run: [go, mod, download]\n" +
		"verify:\n  - name: unit tests\n    run: [go, test, -json, ./...]\n    timeout: 5m\n"
	return files
}

// goRegistry is a TLS GOPROXY upstream that wants a token, serving the one
// module goDepsRepo needs, and the server config that names it.
func goRegistry(t *testing.T) (*fakegoproxy.Proxy, fakegoproxy.Module, string, harnessOption) {
	t.Helper()
	alpha := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{
		"go.mod": fakegoproxy.GoMod("fake.test/alpha"), "alpha.go": "package alpha\n\n// Hello greets.\nconst Hello = \"hello\"\n"}}
	const token = "goproxy-upstream-token-0123456789"
	up := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{alpha}, Token: token, TLS: true, Latency: 30 * time.Millisecond})
	_, key := up.SumDB()
	return up, alpha, token, func(c *config.Server) {
		c.Egress.Registries = map[string]config.Registry{"goproxy": {Kind: "goproxy", URL: up.URL(), Token: token, CAFile: up.CertFile(), SumDB: key}}
	}
}

// assertModuleCameThroughTheEgress checks the session fetched the module
// from the upstream with the token the app added, and that the token is
// nowhere the requester or the logs can see.
func assertModuleCameThroughTheEgress(t *testing.T, r *realSessions, up *fakegoproxy.Proxy, token string) {
	t.Helper()
	h := r.harness
	sess := assertIssueSessionOpenedPR(t, h)
	if n := up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"]; n < 1 {
		t.Fatalf("the module's zip was fetched %d times; requests: %+v", n, up.Requests())
	}
	// go.sum pins the module's hashes, so go checks those and needs no
	// checksum database here (runner/supervisor's sandbox test shows the
	// database reached through the proxy for a module go.sum lacks).
	for _, q := range up.Requests() {
		if !q.Authenticated {
			t.Fatalf("%s %s reached the upstream without the token", q.Method, q.Path)
		}
	}
	if strings.Contains(r.allLogs(), token) {
		t.Fatal("the upstream's token is in the logs")
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil || strings.Contains(pr.GetBody(), token) {
		t.Fatalf("PR body: %v", err)
	}
	// The evidence's egress audit reaches the PR body: the registry
	// traffic, in one line, and nothing refused.
	if !regexp.MustCompile(`\nEgress: [1-9][0-9]* registry requests?, [0-9.]+ k?M?G?B, 0 refused\.\n`).MatchString(pr.GetBody()) {
		t.Errorf("the PR body lacks the egress summary:\n%s", pr.GetBody())
	}
	if strings.Contains(pr.GetBody(), "Refused, and never sent on") {
		t.Errorf("the PR body lists refusals:\n%s", pr.GetBody())
	}
	var summaries []string
	for _, cr := range h.gh.CheckRuns(owner, repoName) {
		summaries = append(summaries, cr.Summary)
	}
	if !slices.ContainsFunc(summaries, func(s string) bool { return strings.Contains(s, " refused.") }) {
		t.Errorf("no check run's summary has the egress summary: %q", summaries)
	}
}

// A Go repository whose dependencies are not vendored gets them through
// the registry egress, in setup and in verify, on both executors; the
// upstream's token is added by the app and never reaches the logs or
// GitHub.
func TestRealSessionFetchesGoModulesThroughTheRegistryEgress(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, executor string) {
		up, alpha, token, egress := goRegistry(t)
		r := newRealSessions(t, executor, egress)
		r.run(goDepsRepo(up, alpha), "/inspect make TestAdd pass")
		assertModuleCameThroughTheEgress(t, r, up, token)
	})
}
