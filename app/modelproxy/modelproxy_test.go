package modelproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

type providers map[string]config.Provider

func (p providers) Provider(name string) (config.Provider, bool) { v, ok := p[name]; return v, ok }

// The proxy with a Budget, as `inspect run` wires it: the key is added and
// kept from the answer, the usage is counted, and past the budget nothing
// more reaches the provider.
func TestProxyWithABudgetCountsAndStops(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Api-Key")+" "+r.URL.Path)
		_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
		_, _ = io.WriteString(w, `{"echo":"`+key+`","usage":{"input_tokens":70,"output_tokens":40}}`)
	}))
	t.Cleanup(upstream.Close)
	p := New(Options{Providers: providers{"a": {Kind: contract.ProviderKindAnthropic, BaseURL: upstream.URL, Key: key}}})
	spec := contract.Spec{Agent: contract.Agent{Preset: contract.PresetClaudeCode, Model: "m-1", Provider: "a"}}
	budget := NewBudget(100, 0)
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
		p.Serve(w, r, spec, budget, zerolog.Nop())
	})
	ask := func(provider, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", provider, "v1/messages"), bytes.NewReader([]byte(body)))
		req.Header.Set("X-Api-Key", "sk-agent-made-up")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, _ := ask("other", `{}`); code != http.StatusForbidden {
		t.Errorf("another provider = %d", code)
	}
	if code, _ := ask("a", `{"model":"m-2"}`); code != http.StatusForbidden {
		t.Errorf("another model = %d", code)
	}
	if len(got) != 0 || budget.Used().Requests != 0 {
		t.Fatalf("refused requests went on: %v, %+v", got, budget.Used())
	}
	code, body := ask("a", `{"model":"m-1"}`)
	if code != http.StatusOK || strings.Contains(body, key) || len(got) != 1 || got[0] != key+" /v1/messages" {
		t.Fatalf("answer %d %s; provider got %v", code, body, got)
	}
	if u := budget.Used(); u != (Usage{InputTokens: 70, OutputTokens: 40, TotalTokens: 110, Requests: 1}) || !budget.Spent() {
		t.Errorf("used %+v, spent %v", u, budget.Spent())
	}
	if code, body := ask("a", `{"model":"m-1"}`); code != http.StatusTooManyRequests || !strings.Contains(body, "token budget (100) is spent") || len(got) != 1 {
		t.Errorf("past the budget: %d %s; provider calls %d", code, body, len(got))
	}
	if NewBudget(0, 0).Spent() {
		t.Error("a budget of 0 is spent")
	}
}
