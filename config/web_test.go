package config

import (
	"math"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Prices price tokens per million, only for the model that has them, and
// a negative price is refused.
func TestModelCostAndPrices(t *testing.T) {
	c := Defaults()
	c.Agents.Models = []Model{{Name: "m1", InputPrice: 2, OutputPrice: 8}, {Name: "m2"}}
	if usd, ok := c.ModelCost("m1", contract.TokenUsage{Input: 500_000, Output: 250_000}); !ok || usd != 3 {
		t.Errorf("m1: %v %v, want $3", usd, ok)
	}
	if _, ok := c.ModelCost("m2", contract.TokenUsage{Input: 1, Output: 1}); ok {
		t.Error("a model without prices has a cost")
	}
	c.Agents.Models[0].OutputPrice = -1
	var faults []string
	c.validateAgentPrices(func(key, format string, args ...any) { faults = append(faults, key) })
	if len(faults) != 1 || !strings.HasSuffix(faults[0], ".input_price") {
		t.Errorf("faults = %v", faults)
	}
}

// Cache reads and writes, parts of the input, are priced at their own
// rates (cached_input_price, cache_write_price), the rest of the input at
// input_price; an unset cache price is input_price's. The stream:
// 48,000 cache reads, 1,200 cache writes, 3 other input tokens.
func TestModelCostPricesCacheReadsAndWritesApart(t *testing.T) {
	used := contract.TokenUsage{Input: 49203, CacheRead: 48000, CacheWrite: 1200, Output: 1000}
	for _, tc := range []struct {
		name  string
		model Model
		want  float64 // US dollars
	}{
		// 3×3 + 48000×0.3 + 1200×3.75 + 1000×15, per million.
		{"all four prices", Model{InputPrice: 3, OutputPrice: 15, CachedInputPrice: 0.3, CacheWritePrice: 3.75}, 0.033909},
		// 49203×3 + 1000×15, per million.
		{"no cache prices", Model{InputPrice: 3, OutputPrice: 15}, 0.162609},
		// 3×3 + 48000×0.3 + 1200×3 + 1000×15, per million.
		{"a cached input price only", Model{InputPrice: 3, OutputPrice: 15, CachedInputPrice: 0.3}, 0.033009},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.model.Name = "claude-x"
			c.Agents.Models = []Model{tc.model}
			usd, ok := c.ModelCost("claude-x", used)
			if !ok || math.Abs(usd-tc.want) > 1e-9 {
				t.Errorf("cost = %v %v, want $%v", usd, ok, tc.want)
			}
		})
	}
	c := Defaults()
	c.Agents.Models = []Model{{Name: "m", InputPrice: 1, CachedInputPrice: -1, CacheWritePrice: -2}}
	var faults []string
	c.validateAgentPrices(func(key, format string, args ...any) { faults = append(faults, key) })
	if len(faults) != 2 || !strings.HasSuffix(faults[0], ".cached_input_price") || !strings.HasSuffix(faults[1], ".cache_write_price") {
		t.Errorf("faults = %v", faults)
	}
}

// Tokens charged to the budget without a usage report (Total past Input
// plus Output: an answer cut off before its report is charged its
// reservation) cost something: they are priced at output_price, the
// higher rate, not at nothing (decision 0053).
func TestModelCostPricesChargedButUnreportedTokensAtTheOutputPrice(t *testing.T) {
	c := Defaults()
	c.Agents.Models = []Model{{Name: "m", InputPrice: 3, OutputPrice: 15, CachedInputPrice: 0.3}}
	for _, tc := range []struct {
		name string
		used contract.TokenUsage
		want float64 // US dollars
	}{
		// 100,000 charged, none reported: 100,000×15 per million.
		{"no report at all", contract.TokenUsage{Total: 100_000, Requests: 1}, 1.5},
		// 1,000×3 + 500×15 + (10,000 − 1,500)×15 = 138,000, per million.
		{"a part reported", contract.TokenUsage{Input: 1000, Output: 500, Total: 10_000, Requests: 2}, 0.138},
		// 1,000×3 + 500×15, per million: a Total of exactly the sum adds nothing.
		{"all reported", contract.TokenUsage{Input: 1000, Output: 500, Total: 1500, Requests: 1}, 0.0105},
		// Total below the sum (as a provider may report it) takes nothing off.
		{"a total below the sum", contract.TokenUsage{Input: 1000, Output: 500, Total: 1200, Requests: 1}, 0.0105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			usd, ok := c.ModelCost("m", tc.used)
			if !ok || math.Abs(usd-tc.want) > 1e-9 {
				t.Errorf("cost = %v %v, want $%v", usd, ok, tc.want)
			}
		})
	}
}
