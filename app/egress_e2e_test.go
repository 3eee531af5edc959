package app_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// modelKey is the provider's key, which only the app may hold.
const modelKey = "sk-proj-inspect-test-0123456789abcdefghijklmnop"

// newModelHarness runs real sandboxed sessions whose agent may reach the
// scripted model, as provider "scripted", only through the model proxy.
func newModelHarness(t *testing.T, budget int64) (*harness, *fakemodel.Server, *local.Executor) {
	t.Helper()
	model := fakemodel.New()
	t.Cleanup(model.Close)
	model.RequireKey(modelKey)
	h, lx := newSandboxHarness(t, func(c *configServer) {
		c.Agents.TokenBudget = budget
		c.Agents.Providers = map[string]config.Provider{"scripted": {Kind: "openai", BaseURL: model.URL() + "/v1", Key: modelKey}}
		c.Agents.Models = []config.Model{{Name: "scripted-1", Provider: "scripted", Presets: []string{"command", "codex"}}}
	})
	return h, model, lx
}

// A command agent that speaks to the model with curl: the proxy adds the
// key, the answer streams back, the usage lands in the store; the agent's
// own key and a made-up provider get nowhere.
func TestModelProxyCarriesTheAgentsRequestsAndCountsTokens(t *testing.T) {
	h, model, lx := newModelHarness(t, 0)
	model.Script(fakemodel.Turn{Message: "hello from the model", Usage: fakemodel.Usage{InputTokens: 1200, CacheReadTokens: 1024, OutputTokens: 34}})
	agent := `set -u
base=http://127.0.0.1:8931/v1/providers
{
  echo "scripted: $(curl -sS -H 'Authorization: Bearer sk-agent-made-up' -H 'Content-Type: application/json' -d '{"model":"scripted-1","input":"hi","stream":true}' $base/scripted/responses | grep -o 'hello from the model' | head -1)"
  echo "other provider: $(curl -sS -o /dev/null -w '%{http_code}' -d '{}' $base/openai/responses)"
  echo "other model: $(curl -sS -o /dev/null -w '%{http_code}' -d '{"model":"gpt-big","input":"hi"}' $base/scripted/responses)"
  echo "env has key: $(env | grep -c sk-proj || true)"
} > "$INSPECT_ANSWER_FILE"
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "an agent that calls the model")
	sess := h.runSandboxSession(lx, "/inspect say hello")
	if sess.Outcome != session.NoChange {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	for _, want := range []string{"scripted: hello from the model", "other provider: 403", "other model: 403", "env has key: 0"} {
		if !strings.Contains(sess.Detail, want) {
			t.Errorf("the agent's answer lacks %q:\n%s", want, sess.Detail)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+modelKey || reqs[0].Model != "scripted-1" {
		t.Fatalf("the provider got %+v", reqs)
	}
	used, err := h.st.SessionUsage(context.Background(), sess.AttemptID)
	if err != nil || used.InputTokens != 1200 || used.OutputTokens != 34 || used.Requests != 1 {
		t.Errorf("usage = %+v %v", used, err)
	}
	// The cached part of the input is kept apart (decision 0053).
	if used.CacheReadTokens != 1024 || used.CacheWriteTokens != 0 {
		t.Errorf("cache parts = %+v", used)
	}
	if strings.Contains(h.logs.String(), modelKey) {
		t.Error("the provider's key is in the app's log")
	}
}

// Past the budget the session ends in error, with the reason said.
func TestTokenBudgetStopsTheSession(t *testing.T) {
	h, model, lx := newModelHarness(t, 1000)
	for range 5 {
		model.Script(fakemodel.Turn{Message: "more", Usage: fakemodel.Usage{InputTokens: 600, OutputTokens: 100}})
	}
	agent := `for i in 1 2 3 4 5; do
  curl -sS -o /dev/null -w "%{http_code}\n" -H 'Content-Type: application/json' -d '{"model":"scripted-1","input":"again"}' http://127.0.0.1:8931/v1/providers/scripted/responses >> "$INSPECT_ANSWER_FILE"
done
`
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		"agent.sh":            agent,
		".github/inspect.yml": "agent:\n  preset: command\n  command: [\"sh\", \"agent.sh\"]\n  model: scripted-1\n",
	}, "a chatty agent")
	sess := h.runSandboxSession(lx, "/inspect talk a lot")
	if sess.Outcome != session.Errored || sess.Reason != "token_budget" || !strings.Contains(sess.Detail, "budget of 1000") {
		t.Fatalf("session = %s/%s %s: %s\n%s", sess.State(), sess.Outcome, sess.Reason, sess.Detail, h.logs)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the provider got %d requests; the budget (passed by the second) should stop the rest", n)
	}
	h.expectOneReply(issueNumber, "budget of 1000")
}

// The real Codex CLI (npm @openai/codex at the preset's pinned version,
// installed by .ci/ensure-agent-clis) runs as the agent, inside the sandbox,
// reaching the scripted model only through the model proxy. The scripted
// model fixes the sample repo's failing test with one command, then
// answers; the session ends in a verified pull request with the answer and
// the usage.
func TestRealCodexCLIFixesTheSampleRepo(t *testing.T) {
	if _, err := exec.LookPath("codex"); err != nil {
		t.Fatalf("codex is needed (run .ci/ensure-agent-clis): %v", err)
	}
	h, model, lx := newModelHarness(t, 0)
	model.Script(
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go"}, Usage: fakemodel.Usage{InputTokens: 3000, OutputTokens: 40}},
		fakemodel.Turn{Message: "Fixed Add: it added one too many.", Usage: fakemodel.Usage{InputTokens: 3100, OutputTokens: 12}},
	)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: codex\n  model: scripted-1\nverify:\n  - name: unit tests\n    run: [\"go\", \"test\", \"-json\", \"./...\"]\n",
	}, "codex as the agent")
	sess := h.runSandboxSession(lx, "/inspect make TestAdd pass")
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nmodel requests: %d, exhausted %d\n%s", sess.State(), sess.Outcome, sess.Detail, len(model.Requests()), model.Exhausted(), h.logs)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| ✅ passed |", "Fixed Add: it added one too many.", "Model usage: 6152 tokens (6100 in, 52 out) over 2 requests"} {
		if !strings.Contains(pr.GetBody(), want) {
			t.Errorf("PR body lacks %q:\n%s", want, pr.GetBody())
		}
	}
	for _, r := range model.Requests() {
		if r.Header.Get("Authorization") != "Bearer "+modelKey {
			t.Errorf("a request reached the model without the server's key: %v", r.Header)
		}
	}
	if outs := model.FunctionOutputs(); len(outs) != 1 {
		t.Errorf("function outputs = %q", outs)
	}
}

// runSandboxSession comments body on the issue and runs the session's real
// attempt to its end.
func (h *harness) runSandboxSession(lx *local.Executor, body string) store.Session {
	h.t.Helper()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: body})); code != 200 {
		h.t.Fatal(code)
	}
	h.runWorkers()
	h.waitForAttempt(lx)
	h.runWorkers()
	return h.onlySession()
}

// The same real Codex CLI, scripted by the model to misbehave: print the
// environment, read outside /workspace, reach the network directly and
// another host through the proxy, and push. No key or token reaches it,
// nothing leaves, and nothing is pushed.
func TestRealCodexCLICannotLeakOrEscape(t *testing.T) {
	if _, err := exec.LookPath("codex"); err != nil {
		t.Fatalf("codex is needed (run .ci/ensure-agent-clis): %v", err)
	}
	h, model, lx := newModelHarness(t, 0)
	model.Script(
		fakemodel.Turn{Exec: []string{
			"env; cat /proc/1/environ | tr '\\0' '\\n'",
			"cat /etc/shadow; ls -la / /root /home; cat ~/.gitconfig ~/.git-credentials",
			"curl -sS -m 5 http://1.1.1.1/ || echo direct-refused",
			"curl -sS -m 5 -x http://127.0.0.1:8931 http://example.com/ ; echo",
			"curl -sS -m 5 http://127.0.0.1:8931/v1/providers/scripted/../../../../v1/attempts ; echo",
			"git remote -v; git push origin HEAD:refs/heads/main 2>&1 || echo push-refused",
		}},
		fakemodel.Turn{Message: "I tried."},
	)
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: codex\n  model: scripted-1\n",
	}, "codex as the agent")
	mainBefore := h.gh.BranchSHA(owner, repoName, "main")
	sess := h.runSandboxSession(lx, "/inspect look around")
	if sess.State() != session.Done {
		t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, h.logs)
	}
	outs := strings.Join(model.FunctionOutputs(), "\n")
	if len(model.FunctionOutputs()) != 6 {
		t.Fatalf("the agent ran %d of the 6 commands:\n%s", len(model.FunctionOutputs()), outs)
	}
	for _, want := range []string{"direct-refused", "inspect_egress_refused", "push-refused"} {
		if !strings.Contains(outs, want) {
			t.Errorf("the agent's outputs lack %q:\n%s", want, outs)
		}
	}
	assertAgentLeakedNothing(t, h, model, sess, mainBefore, outs)
}

// assertAgentLeakedNothing checks a misbehaving agent's session: it read
// no /etc/shadow, main did not move, and no credential (the model's key,
// the webhook secret, a minted token) is in the agent's outputs, a request
// to the model, the stored result, the app's log, the thread's comments,
// or the extra texts (a PR body, say).
func assertAgentLeakedNothing(t *testing.T, h *harness, model *fakemodel.Server, sess store.Session, mainBefore, outs string, extra ...string) {
	t.Helper()
	if strings.Contains(outs, "root:") {
		t.Errorf("the agent read /etc/shadow:\n%s", outs)
	}
	if got := h.gh.BranchSHA(owner, repoName, "main"); got != mainBefore {
		t.Errorf("main moved from %s to %s", mainBefore, got)
	}
	var bodies strings.Builder
	for _, r := range model.Requests() {
		bodies.Write(r.Body)
	}
	a, err := h.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		t.Fatal(err)
	}
	var posted strings.Builder
	for _, c := range h.gh.Comments(owner, repoName, issueNumber) {
		posted.WriteString(c.Body)
	}
	for _, e := range extra {
		posted.WriteString(e)
	}
	secrets := append([]string{modelKey, h.cfg.GitHub.WebhookSecret}, h.gh.MintedTokens()...)
	for _, s := range secrets {
		for where, text := range map[string]string{
			"the agent's outputs": outs, "a request to the model": bodies.String(), "the stored result": a.Result,
			"the app's log": h.logs.String(), "GitHub": posted.String(),
		} {
			if strings.Contains(text, s) {
				t.Errorf("a credential is in %s: %.12s…", where, s)
			}
		}
	}
}
