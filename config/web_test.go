package config

import (
	"strings"
	"testing"
)

// Prices price tokens per million, only for the model that has them, and
// a negative price is refused.
func TestModelCostAndPrices(t *testing.T) {
	c := Defaults()
	c.Agents.Models = []Model{{Name: "m1", InputPrice: 2, OutputPrice: 8}, {Name: "m2"}}
	if usd, ok := c.ModelCost("m1", 500_000, 250_000); !ok || usd != 3 {
		t.Errorf("m1: %v %v, want $3", usd, ok)
	}
	if _, ok := c.ModelCost("m2", 1, 1); ok {
		t.Error("a model without prices has a cost")
	}
	c.Agents.Models[0].OutputPrice = -1
	var faults []string
	c.validateAgentPrices(func(key, format string, args ...any) { faults = append(faults, key) })
	if len(faults) != 1 || !strings.HasSuffix(faults[0], ".input_price") {
		t.Errorf("faults = %v", faults)
	}
}
