package checkoutrun

import (
	"bytes"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
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
