package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// A finished session's page as a reviewer reads it: the real Codex CLI,
// from the tools image, fixes the sample repository against the scripted
// model at priced tokens, verify runs `go test -json`, and the page shows
// the outcome apart from the agent's answer (rendered Markdown), the
// commands with verify's, the tests, the cost and the egress. Its
// screenshots are the README's and docs/dashboard.md's "finished session"
// (make screenshots): nothing in them is a test fixture's text.
func TestDashboardShowsAFinishedSessionWithItsEvidence(t *testing.T) {
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(modelKey)
	_, tools := sandboxtest.ToolsImage(t, "..")
	var lx *local.Executor
	d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
		opts = append(opts, func(c *configServer) {
			c.Agents.Providers = map[string]config.Provider{"openai": {Kind: "openai", BaseURL: model.URL() + "/v1", Key: modelKey}}
			c.Agents.Models = []config.Model{{Name: "gpt-5-codex", Provider: "openai", Presets: []string{"codex"}, InputPrice: 1.25, OutputPrice: 10}}
			c.Agents.ToolsImage = tools
		})
		h, x := newSandboxHarnessRunning(t, []string{"--layer-cache", sandboxtest.ToolsLayerCache(t, "..")}, opts...)
		lx = x
		return h
	})
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"},
			Usage: fakemodel.Usage{InputTokens: 18200, OutputTokens: 420}},
		fakemodel.Turn{Message: "Fixed `Add`: it returned `a + b + 1`.\n\n- `TestAdd` passes now\n- nothing else changed",
			Usage: fakemodel.Usage{InputTokens: 19100, OutputTokens: 64}},
	)
	d.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: codex\n  model: gpt-5-codex\n" +
			"verify:\n  - name: unit tests\n    run: [go, test, -json, ./...]\n",
	}, "Codex as the agent, go test as verify")

	sess := d.runSandboxSession(lx, "/inspect make TestAdd pass")
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nmodel requests %d\n%s", sess.State(), sess.Outcome, sess.Detail, len(model.Requests()), d.logs)
	}
	d.signIn("alice", "/sessions/"+sess.ID)
	d.do("the finished session's page", chromedp.WaitVisible(chromedp.CSS("#diff .add")))
	for sel, want := range map[string]string{
		"#commands": "unit tests",
		"#tests":    "passed",
		"#cost":     "$",
		"#egress":   "model",
		"#answer":   "TestAdd passes now",
	} {
		if got := d.text(sel); !strings.Contains(got, want) {
			t.Errorf("%s says %q, want it to hold %q", sel, got, want)
		}
	}
	// The answer is Markdown rendered (decision 0068): a list and code
	// spans, not backticks.
	if got := d.text("#answer li code"); got != "TestAdd" {
		t.Errorf("the answer's list item's code span is %q", got)
	}
	d.screenshot("session-finished")
}
