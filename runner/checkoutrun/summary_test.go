package checkoutrun

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/testreport"
)

// The summary says what part of the input was prompt-cache reads and
// writes, and prices the usage as the session page does
// (config.Server.ModelCost): cache reads at cached_input_price, writes at
// cache_write_price.
func TestSummaryPricesTheUsageAsTheServerDoes(t *testing.T) {
	cfg := config.Defaults()
	cfg.Agents.Models = []config.Model{{Name: "claude-x", InputPrice: 3, OutputPrice: 15, CachedInputPrice: 0.3, CacheWritePrice: 3.75}}
	used := &contract.TokenUsage{Input: 49203, CacheRead: 48000, CacheWrite: 1200, Output: 1000, Total: 50203, Requests: 2}
	for _, tc := range []struct {
		name   string
		server *config.Server
		want   string
	}{
		// 3×3 + 48000×0.3 + 1200×3.75 + 1000×15, per million.
		{"priced", &cfg, "Model:    50203 tokens (49203 in, of which 48000 cache reads and 1200 cache writes, 1000 out) over 2 requests; $0.0339 at the server's prices\n"},
		{"no server config", nil, "Model:    50203 tokens (49203 in, of which 48000 cache reads and 1200 cache writes, 1000 out) over 2 requests\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Spec: contract.Spec{Agent: contract.Agent{Model: "claude-x"}}, server: tc.server,
				Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Usage: used}}
			var b bytes.Buffer
			r.WriteSummary(&b)
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("summary lacks %q:\n%s", tc.want, b.String())
			}
		})
	}
}

// A session whose answers came without usage reports was charged their
// reservations (Total past Input plus Output): the summary prices that
// part at output_price rather than showing $0 for it.
func TestSummaryPricesTokensChargedWithoutAUsageReport(t *testing.T) {
	cfg := config.Defaults()
	cfg.Agents.Models = []config.Model{{Name: "m", InputPrice: 3, OutputPrice: 15}}
	used := &contract.TokenUsage{Total: 64_020, Requests: 1}
	r := &Result{Spec: contract.Spec{Agent: contract.Agent{Model: "m"}}, server: &cfg,
		Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Usage: used}}
	var b bytes.Buffer
	r.WriteSummary(&b)
	// 64,020×15 per million.
	if want := "Model:    64020 tokens (0 in, 0 out) over 1 requests; $0.9603 at the server's prices\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// When setup fails before the agent runs, the summary says the agent did
// not run (not that it changed nothing), and a setup command that could not
// resolve a host gets a hint naming egress.registries: the sandbox has no
// DNS of its own, and a package manager's error says only that the name did
// not resolve.
func TestSummaryTellsAnAgentThatDidNotRunFromOneThatChangedNothing(t *testing.T) {
	const hint = "      hint: setup could not resolve a host name: the sandbox reaches package registries only through egress.registries (give them in --server-config; see docs/configuration.md)\n"
	setupFailed := contract.CommandResult{Phase: contract.PhaseSetup, Name: "setup", Argv: []string{"go", "mod", "download"}, ExitCode: 1,
		OutputTail: "go: github.com/x/y@v1.0.0: Get \"https://proxy.golang.org/github.com/x/y/@v/v1.0.0.mod\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: no such host\n"}
	npmFailed := contract.CommandResult{Phase: contract.PhaseSetup, Name: "setup", Argv: []string{"npm", "ci"}, ExitCode: 1,
		OutputTail: "npm error code EAI_AGAIN\nnpm error request to https://registry.npmjs.org/left-pad failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org\n"}
	testFailed := contract.CommandResult{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test"}, ExitCode: 1, OutputTail: "FAIL\n"}
	agentRan := contract.CommandResult{Phase: contract.PhaseAgent, Name: "agent", Argv: []string{"codex"}}
	for _, tc := range []struct {
		name     string
		commands []contract.CommandResult
		patch    string
		hints    int
	}{
		{"setup failed on DNS (go)", []contract.CommandResult{setupFailed}, "Patch:    no change: the agent did not run (no patch written)\n", 1},
		{"setup failed on DNS (npm)", []contract.CommandResult{npmFailed}, "Patch:    no change: the agent did not run (no patch written)\n", 1},
		{"the agent ran and changed nothing", []contract.CommandResult{agentRan, testFailed}, "Patch:    no change: the agent changed nothing (no patch written)\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Manifest: &contract.Manifest{}, Evidence: contract.Evidence{Outcome: contract.OutcomeError, Commands: tc.commands}}
			var b bytes.Buffer
			r.WriteSummary(&b)
			if !strings.Contains(b.String(), tc.patch) {
				t.Errorf("summary lacks %q:\n%s", tc.patch, b.String())
			}
			if got := strings.Count(b.String(), hint); got != tc.hints {
				t.Errorf("%d DNS hints, want %d:\n%s", got, tc.hints, b.String())
			}
		})
	}
}

// A failing go test -json run is shown as the text its events carry, not
// as raw JSON, with the counts and the runner they came from.
func TestSummaryShowsGoTestJSONAsText(t *testing.T) {
	tail, err := os.ReadFile("../testreport/testdata/go1.26.8-test-json-fail.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Evidence: contract.Evidence{Outcome: contract.OutcomeVerifyFailed,
		Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "test", Argv: []string{"go", "test", "-json", "./..."}, ExitCode: 1, OutputTail: string(tail)}},
		Tests:    testreport.Parse(tail, testreport.Options{})[0]}}
	var b bytes.Buffer
	r.WriteSummary(&b)
	out := b.String()
	if strings.Contains(out, `"Action"`) {
		t.Errorf("raw go test -json events in the summary:\n%s", out)
	}
	for _, want := range []string{"| FAIL example.com/calc/calc", "Tests:    3 passed, 3 failed, 1 skipped (go test -json)", "FAIL example.com/calc/calc.TestSub"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
