package app_test

import (
	"reflect"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// narrowingServer opens goproxy to setup and verify, and npmjs to the
// agent too.
func narrowingServer(c *config.Server) {
	c.Egress.Registries = map[string]config.Registry{
		"goproxy": {Kind: "goproxy", URL: "https://proxy.golang.org"},
		"npmjs":   {Kind: "npm", URL: "https://registry.npmjs.org", Phases: []string{"setup", "agent", "verify"}},
	}
}

// The spec carries the server's registries as the repository's
// `registries:` narrows them: a phase taken away, a registry off, and a
// phase the server does not open left closed.
func TestSpecCarriesEachRegistryAsTheRepositoryNarrowsIt(t *testing.T) {
	h, ex := newSessionHarness(t, narrowingServer)
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(agentConfig+
		"registries:\n  npmjs: {phases: [agent]}\n  goproxy: {phases: [verify, agent]}\n"))
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	spec := h.claim(ex.last(t)).spec()
	want := []contract.Registry{
		{Name: "goproxy", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseVerify}, SumDB: config.DefaultSumDB},
		{Name: "npmjs", Kind: "npm", Phases: []contract.Phase{contract.PhaseAgent}},
	}
	if !reflect.DeepEqual(spec.Registries, want) {
		t.Fatalf("spec registries = %+v\nwant %+v", spec.Registries, want)
	}
}

// A repository that names a registry the server does not open to it gets
// one reply that names it and what the server does open, and nothing runs.
func TestRepositoryNamingAnUnknownRegistryIsToldWhichExist(t *testing.T) {
	h, ex := newSessionHarness(t, narrowingServer)
	h.gh.SetFile(owner, repoName, "main", ".github/inspect.yml", []byte(agentConfig+"registries:\n  pypi: {off: true}\n"))
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix it"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sess := h.onlySession()
	if sess.Outcome != session.Errored || sess.Reason != "config_invalid" {
		t.Errorf("session = %s/%s: %s", sess.Outcome, sess.Reason, sess.Detail)
	}
	h.expectOneReply(issueNumber, `registries.pypi: this Inspect server opens no registry named "pypi" to this repository; it opens goproxy, npmjs`)
	if len(ex.launches) != 0 {
		t.Errorf("attempts started: %d", len(ex.launches))
	}
}
