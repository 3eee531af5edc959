package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// realAgent is one agent CLI from npm, at the version its preset pins
// (runner/supervisor), run from the agents' tools image
// (.ci/ensure-tools-image builds it).
type realAgent struct {
	preset string
	// kind is the provider API the CLI speaks here, and base the
	// provider's base_url on the scripted model for that kind.
	kind string
	base func(*fakemodel.Server) string
	// query is the query string the CLI sends, which the proxy keeps.
	query string
}

var (
	realOpenCode = realAgent{preset: "opencode",
		kind: "openai", base: func(m *fakemodel.Server) string { return m.URL() + "/v1" }}
	realClaudeCode = realAgent{preset: "claude-code",
		kind: "anthropic", base: func(m *fakemodel.Server) string { return m.URL() }, query: "beta=true"}
)

// The real OpenCode (npm opencode-ai), speaking the Responses API through
// the model proxy, fixes the sample repo and leaks nothing.
func TestRealOpenCodeFixesTheSampleRepoAndLeaksNothing(t *testing.T) {
	realAgentFixesAndLeaksNothing(t, realOpenCode)
}

// The real Claude Code (npm @anthropic-ai/claude-code), speaking the
// Messages API through the model proxy, fixes the sample repo and leaks
// nothing.
func TestRealClaudeCodeFixesTheSampleRepoAndLeaksNothing(t *testing.T) {
	realAgentFixesAndLeaksNothing(t, realClaudeCode)
}

// realAgentFixesAndLeaksNothing runs one real session with the CLI as the
// agent, in the sandbox, reaching the scripted model only through the
// model proxy. The model fixes the sample's failing test, then has the CLI
// misbehave (print the environment, read outside the workspace, reach the
// network directly and another host through the proxy, call the provider's
// files API with the server's key, push), then answers. One session does
// both, so that each CLI costs one Go compile in verify: the session ends
// in a verified pull request, every request that reached the provider is
// one of the kind's named routes with the server's key, and no credential
// reached the agent, the provider's request bodies, the evidence, the log
// or GitHub.
func realAgentFixesAndLeaksNothing(t *testing.T, a realAgent) {
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(modelKey)
	// The CLI runs from the agents' tools image (decision 0069), as a
	// deployment runs it, not from the host's npm install.
	_, tools := sandboxtest.ToolsImage(t, "..")
	h, lx := newSandboxHarnessRunning(t, []string{"--layer-cache", sandboxtest.ToolsLayerCache(t, "..")}, func(c *configServer) {
		c.Agents.Providers = map[string]config.Provider{"scripted": {Kind: a.kind, BaseURL: a.base(model), Key: modelKey}}
		c.Agents.Models = []config.Model{{Name: "scripted-1", Provider: "scripted", Presets: []string{a.preset}}}
		c.Agents.ToolsImage = tools
	})
	files := "http://127.0.0.1:8931/v1/providers/scripted/files"
	if a.kind == "anthropic" {
		files = "http://127.0.0.1:8931/v1/providers/scripted/v1/files"
	}
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"},
			Usage: fakemodel.Usage{InputTokens: 3000, OutputTokens: 40}},
		fakemodel.Turn{Exec: []string{
			"env; cat /proc/1/environ | tr '\\0' '\\n'",
			"cat /etc/shadow; ls -la / /root /home; cat ~/.gitconfig ~/.git-credentials",
			"curl -sS -m 5 http://1.1.1.1/ || echo direct-refused",
			"curl -sS -m 5 -x http://127.0.0.1:8931 http://example.com/ ; echo",
			"echo files: $(curl -sS -m 5 -o /dev/null -w '%{http_code}' " + files + ")",
			"git remote -v; git push origin HEAD:refs/heads/main 2>&1 || echo push-refused",
		}, Usage: fakemodel.Usage{InputTokens: 3100, OutputTokens: 30}},
		fakemodel.Turn{Message: "Fixed Add: it added one too many.", Usage: fakemodel.Usage{InputTokens: 3200, OutputTokens: 12}},
	)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: " + a.preset + "\n  model: scripted-1\n" +
			"verify:\n  - name: unit tests\n    run: [\"go\", \"test\", \"-json\", \"./...\"]\n",
	}, a.preset+" as the agent")
	mainBefore := h.gh.BranchSHA(owner, repoName, "main")
	sess := h.runSandboxSession(lx, "/inspect make TestAdd pass")
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nmodel requests: %d, exhausted %d\n%s", sess.State(), sess.Outcome, sess.Detail, len(model.Requests()), model.Exhausted(), h.logs)
	}

	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	// The evidence names the tools image the CLI ran from.
	up := attemptResult(t, h, sess.AttemptID)
	if _, digest, _ := strings.Cut(tools, "@"); up.Evidence.ToolsImage != digest || len(up.Evidence.Commands) == 0 || !strings.HasPrefix(up.Evidence.Commands[0].Argv[0], "/opt/inspect/tools/bin/") {
		t.Errorf("evidence: tools image %q (want %s), agent %+v", up.Evidence.ToolsImage, digest, up.Evidence.Commands)
	}
	for _, want := range []string{"| ✅ passed |", "Model usage: 9382 tokens (9300 in, 82 out) over 3 requests"} {
		if !strings.Contains(pr.GetBody(), want) {
			t.Errorf("PR body lacks %q:\n%s", want, pr.GetBody())
		}
	}

	// What the CLI called: only the kind's named routes, each with the
	// server's key in the kind's header, and nothing the script did not
	// answer. A route this fails on is one the CLI needs: add it to
	// policy's modelRoutes, with this test as its evidence.
	named := map[string]bool{}
	for _, r := range policy.ModelRoutes(a.kind) {
		named[r.Method+" /v1/"+strings.TrimPrefix(r.Path, "v1/")] = true
	}
	for _, r := range model.Requests() {
		key := r.Header.Get("Authorization")
		if a.kind == "anthropic" {
			key = "Bearer " + r.Header.Get("X-Api-Key")
		}
		if !named[r.Method+" "+r.Path] || r.Query != a.query || r.Status != 200 || key != "Bearer "+modelKey {
			t.Errorf("the provider got %s %s?%s (status %d, key %q): not a named route with the server's key", r.Method, r.Path, r.Query, r.Status, key)
		}
	}

	outs := strings.Join(model.FunctionOutputs(), "\n")
	if n := len(model.FunctionOutputs()); n != 7 {
		t.Fatalf("the agent ran %d of the 7 commands:\n%s", n, outs)
	}
	for _, want := range []string{"fixed", "direct-refused", "inspect_egress_refused", "files: 403", "push-refused"} {
		if !strings.Contains(outs, want) {
			t.Errorf("the agent's outputs lack %q:\n%s", want, outs)
		}
	}
	assertAgentLeakedNothing(t, h, model, sess, mainBefore, outs, pr.GetBody())
}

// The deploy guide's recipe on the barest root: the repository's base
// image (snapshots.base_image, every session's root, decision 0079) is a
// busybox root with no libc, no loader and no node, and the real Codex CLI
// runs from the agents' tools image (decision 0069) on it, to a verified
// pull request with its fix. Verify runs on the same root: busybox's own
// grep checks the change.
func TestRealCodexOnABusyboxRootEndsInAPR(t *testing.T) {
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(modelKey)
	_, tools := sandboxtest.ToolsImage(t, "..")
	root := sandboxtest.BusyboxRoot(t, "..")
	h, lx := newSandboxHarnessRunning(t, []string{"--layer-cache", sandboxtest.ToolsLayerCache(t, "..")}, func(c *configServer) {
		c.Agents.Providers = map[string]config.Provider{"scripted": {Kind: "openai", BaseURL: model.URL() + "/v1", Key: modelKey}}
		c.Agents.Models = []config.Model{{Name: "scripted-1", Provider: "scripted", Presets: []string{"codex"}}}
		c.Agents.ToolsImage = tools
		c.Snapshots.BaseImage = root
	})
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"}},
		fakemodel.Turn{Message: "Fixed Add: it added one too many."},
	)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: codex\n  model: scripted-1\n" +
			"verify:\n  - name: the fix\n    run: [grep, -q, \"return a + b }\", calc.go]\n  - name: no node here\n    run: [sh, -c, \"! command -v node\"]\n",
	}, "codex on busybox")
	sess := h.runSandboxSession(lx, "/inspect make TestAdd pass")
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nmodel requests %d\n%s", sess.State(), sess.Outcome, sess.Detail, len(model.Requests()), h.logs)
	}
	up := attemptResult(t, h, sess.AttemptID)
	ws := up.Evidence.Workspace
	if ws == nil || ws.BaseImage == nil || ws.ImageRoot == nil || !strings.HasSuffix(root, "@"+ws.BaseImage.Digest) {
		t.Errorf("the evidence does not name the busybox root %s as the session's: %+v", root, ws)
	}
	if _, digest, _ := strings.Cut(tools, "@"); up.Evidence.ToolsImage != digest {
		t.Errorf("the evidence's tools image %q, want %s", up.Evidence.ToolsImage, digest)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pr.GetBody(), "| ✅ passed |") {
		t.Errorf("the PR body does not say verify passed:\n%s", pr.GetBody())
	}
}
