package render

import (
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
)

func TestMoneyAgeAndShortDigest(t *testing.T) {
	for usd, want := range map[float64]string{0: "$0.0000", 0.00004: "$0.0000", 0.0731: "$0.0731", 0.9999: "$0.9999", 0.99995: "$1.00", 1: "$1.00", 12.345: "$12.35", 250: "$250.00"} {
		if got := Money(usd); got != want {
			t.Errorf("Money(%g) = %q, want %q", usd, got, want)
		}
	}
	for d, want := range map[time.Duration]string{-time.Minute: "0m", 20 * time.Second: "0m", 2*time.Hour + 5*time.Minute: "2h5m", 3 * time.Hour: "3h", 49*time.Hour + 20*time.Minute: "49h"} {
		if got := age(d); got != want {
			t.Errorf("age(%s) = %q, want %q", d, got, want)
		}
	}
	if got := ShortDigest("sha256:0123456789abcdef"); got != "sha256:0123456789ab" {
		t.Errorf("ShortDigest = %q", got)
	}
}

func TestExtrasOfPricesOnlyWhatItCan(t *testing.T) {
	cost := func(model string, u contract.TokenUsage) (float64, bool) {
		return float64(u.Total) / 1e6, model == "priced"
	}
	u := &contract.TokenUsage{Total: 2_000_000}
	if x := ExtrasOf(cost, "priced", u, "https://x/sessions/1"); !x.Priced || x.Cost != 2 || x.SessionURL != "https://x/sessions/1" {
		t.Errorf("priced: %+v", x)
	}
	for name, x := range map[string]Extras{
		"an unpriced model": ExtrasOf(cost, "other", u, ""),
		"no usage":          ExtrasOf(cost, "priced", nil, ""),
		"no model":          ExtrasOf(cost, "", u, ""),
		"no prices":         ExtrasOf(nil, "priced", u, ""),
	} {
		if x.Priced || CostLine(x) != "" || SessionLinkLine(x) != "" {
			t.Errorf("%s: %+v", name, x)
		}
	}
}

// The provenance line links the attestation and the keys, and is absent
// when the attempt has none (no provenance keys, or no change).
func TestProvenanceLine(t *testing.T) {
	if got := ProvenanceLine(Extras{SessionURL: "https://i.example/sessions/s1"}); got != "" {
		t.Errorf("without an attestation: %q", got)
	}
	got := ProvenanceLine(Extras{ProvenanceURL: "https://i.example/sessions/s1/attempts/a1/provenance", KeysURL: "https://i.example/provenance/keys"})
	for _, want := range []string{"https://i.example/sessions/s1/attempts/a1/provenance", "`inspect verify`", "https://i.example/provenance/keys"} {
		if !strings.Contains(got, want) {
			t.Errorf("the line lacks %q: %q", want, got)
		}
	}
}
