package modelproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/policy"
)

func TestUsageMeterReadsWhatProvidersReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   Usage
	}{
		{"responses stream", []string{
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":120,\"output_tokens\":30,\"total_tokens\":150}}}\n\n",
		}, Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}},
		{"split across chunks", []string{
			"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_to",
			"kens\":7,\"output_tokens\":3}}}\r\n\r\n",
		}, Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}},
		{"anthropic stream", []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":50,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":12}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":20}}\n\n",
		}, Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70}},
		{"whole chat body", []string{`{"object":"chat.completion","usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`},
			Usage{InputTokens: 9, OutputTokens: 4, TotalTokens: 13}},
		// Anthropic's cache reads and writes are input beside input_tokens
		// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching);
		// the stream was counted as 3 input tokens.
		{"anthropic stream with caching", []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"type\":\"message\",\"usage\":{\"input_tokens\":3,\"cache_creation_input_tokens\":1200,\"cache_read_input_tokens\":48000,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":250}}\n\n",
		}, Usage{InputTokens: 49203, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 250, TotalTokens: 49453}},
		// message_delta's counts are cumulative and replace
		// message_start's, field by field
		// (https://docs.anthropic.com/en/docs/build-with-claude/streaming).
		{"anthropic message_delta replaces message_start", []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":500,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":40,\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":900,\"output_tokens\":12}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":40,\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":900,\"output_tokens\":30}}\n\n",
		}, Usage{InputTokens: 947, CacheReadTokens: 900, CacheWriteTokens: 7, OutputTokens: 30, TotalTokens: 977}},
		{"anthropic whole message", []string{`{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"cache_creation_input_tokens":20,"cache_read_input_tokens":100,"output_tokens":7}}`},
			Usage{InputTokens: 125, CacheReadTokens: 100, CacheWriteTokens: 20, OutputTokens: 7, TotalTokens: 132}},
		// OpenAI's cached input is a part of input_tokens
		// (https://platform.openai.com/docs/guides/prompt-caching).
		{"responses cached input", []string{
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":2000,\"input_tokens_details\":{\"cached_tokens\":1536},\"output_tokens\":30,\"total_tokens\":2030}}}\n\n",
		}, Usage{InputTokens: 2000, CacheReadTokens: 1536, OutputTokens: 30, TotalTokens: 2030}},
		{"chat cached input", []string{`{"object":"chat.completion","usage":{"prompt_tokens":1500,"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens":4,"total_tokens":1504}}`},
			Usage{InputTokens: 1500, CacheReadTokens: 1024, OutputTokens: 4, TotalTokens: 1504}},
		{"an error body", []string{`{"error":{"message":"bad key"}}`}, Usage{}},
		{"garbage", []string{"data: {not json\n\n"}, Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &usageMeter{}
			for _, c := range tc.chunks {
				m.Write([]byte(c))
			}
			if got := m.usage(); got != tc.want {
				t.Errorf("usage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestModelRefusalReadsTheBodyAsProvidersWould(t *testing.T) {
	for body, refused := range map[string]bool{
		``:                                      false,
		`  `:                                    false,
		`{}`:                                    false,
		`{"model":"allowed","input":"hi"}`:      false,
		`{"input":"hi"}`:                        false,
		`{"model":"other"}`:                     true,
		`{"model":"other","Model":"allowed"}`:   true,
		`{"Model":"allowed"}`:                   true,
		`{"model":"other","model":"allowed"}`:   true,
		`{"model":"allowed","model":"allowed"}`: true,
		`{"model":7}`:                           true,
		`[{"model":"other"}]`:                   true,
		`{"model":"allowed"} {"model":"x"}`:     true,
		`{"model":"allowed"`:                    true,
		`not json`:                              true,
	} {
		if got := modelRefusal([]byte(body), "allowed") != ""; got != refused {
			t.Errorf("modelRefusal(%s): refused = %v, want %v", body, got, refused)
		}
	}
}

// askThroughABudget sends one request of the spec's model through Serve to
// a provider of kind at upstream (whose /v1 an OpenAI base holds), with a
// Budget as `inspect run` wires it, and returns the answer and the budget.
func askThroughABudget(upstream, kind, path, body string, defaultOutput int64) (*httptest.ResponseRecorder, *Budget) {
	base := upstream
	if kind == contract.ProviderKindOpenAI {
		base += "/v1"
	}
	p := New(Options{Providers: providers{"p": {Kind: kind, BaseURL: base, Key: "sk-test-0123456789"}}, OutputReservation: defaultOutput})
	budget := NewBudget(0, 0)
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
		spec := contract.Spec{SessionID: "s1", Agent: contract.Agent{Model: "m-1", Provider: "p"}}
		p.Serve(w, r, spec, budget, zerolog.Nop())
	})
	req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", "p", path), strings.NewReader(body))
	req.Header.Set("Anthropic-Version", "2023-06-01") // as Claude Code sends it; OpenAI's API ignores it
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec, budget
}

// wantCharged fails t unless budget was charged want, or, when reserved,
// want with the whole reservation of body as its total.
func wantCharged(t *testing.T, budget *Budget, want Usage, reserved bool, body string, defaultOutput int64) {
	t.Helper()
	if reserved {
		_, want.TotalTokens = prepareBody(policy.ModelRoute{}, []byte(body), defaultOutput)
	}
	if got := budget.Used(); got != want {
		t.Errorf("charged %+v, want %+v", got, want)
	}
}

// What a relayed answer is charged, through Serve with a Budget (as
// `inspect run` wires it): its own usage report when it has one; its whole
// reservation when it succeeded without one (a response still in
// progress, "usage":null, as an OpenAI background answer is:
// https://platform.openai.com/docs/guides/background); nothing for an
// error or a free token count.
func TestAnswersAreChargedTheirUsageOrTheirReservation(t *testing.T) {
	const defaultOutput = 1000
	for _, tc := range []struct {
		name     string
		kind     string
		path     string
		body     string
		status   int
		answer   string
		want     Usage
		reserved bool // want.TotalTokens is the request's reservation
	}{
		{"openai answer without usage", contract.ProviderKindOpenAI, "responses", `{"model":"m-1","input":"hi"}`, http.StatusOK,
			`{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`, Usage{Requests: 1}, true},
		{"chat without usage", contract.ProviderKindOpenAI, "chat/completions", `{"model":"m-1","messages":[]}`, http.StatusOK,
			`{"id":"c1","object":"chat.completion","choices":[]}`, Usage{Requests: 1}, true},
		{"anthropic message, not streamed", contract.ProviderKindAnthropic, "v1/messages", `{"model":"m-1","max_tokens":50,"messages":[]}`, http.StatusOK,
			`{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"cache_creation_input_tokens":1200,"cache_read_input_tokens":48000,"output_tokens":20}}`,
			Usage{InputTokens: 49203, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 20, TotalTokens: 49223, Requests: 1}, false},
		{"an error", contract.ProviderKindOpenAI, "responses", `{"model":"m-1","input":"hi"}`, http.StatusBadRequest,
			`{"error":{"message":"bad","type":"invalid_request_error"}}`, Usage{Requests: 1}, false},
		{"a token count", contract.ProviderKindAnthropic, "v1/messages/count_tokens", `{"model":"m-1","messages":[]}`, http.StatusOK,
			`{"input_tokens":12}`, Usage{Requests: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			}))
			t.Cleanup(upstream.Close)
			rec, budget := askThroughABudget(upstream.URL, tc.kind, tc.path, tc.body, defaultOutput)
			if rec.Code != tc.status {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			wantCharged(t, budget, tc.want, tc.reserved, tc.body, defaultOutput)
		})
	}
}

// The proxy in front of the scripted stand-in (internal/fakemodel, which
// answers in the providers' documented shapes) charges each answer as
// the provider bills it: a cached Anthropic stream and whole message in
// full, cache parts apart; n Chat Completions choices all of their
// output. (The stand-in's background answer, queued without usage, never
// gets this far: `background` is refused before it goes, decision 0055.)
func TestTheProxyChargesTheStandInsAnswersAsBilled(t *testing.T) {
	const defaultOutput = 1000
	cached := fakemodel.Usage{InputTokens: 3, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 250}
	for _, tc := range []struct {
		name, kind, path, body string
		want                   Usage
		reserved               bool // want.TotalTokens is the reservation
	}{
		{"anthropic stream", contract.ProviderKindAnthropic, "v1/messages", `{"model":"m-1","max_tokens":500,"stream":true,"messages":[]}`,
			Usage{InputTokens: 49203, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 250, TotalTokens: 49453, Requests: 1}, false},
		{"anthropic whole message", contract.ProviderKindAnthropic, "v1/messages", `{"model":"m-1","max_tokens":500,"messages":[]}`,
			Usage{InputTokens: 49203, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 250, TotalTokens: 49453, Requests: 1}, false},
		{"openai n choices", contract.ProviderKindOpenAI, "chat/completions", `{"model":"m-1","messages":[],"n":4}`,
			Usage{InputTokens: 3, OutputTokens: 1000, TotalTokens: 1003, Requests: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := fakemodel.New()
			t.Cleanup(model.Close)
			if tc.kind == contract.ProviderKindAnthropic {
				model.Script(fakemodel.Turn{Message: "hi", Usage: cached})
			} else {
				model.Script(fakemodel.Turn{Message: "hi", Usage: fakemodel.Usage{InputTokens: 3, OutputTokens: 250}})
			}
			rec, budget := askThroughABudget(model.URL(), tc.kind, tc.path, tc.body, defaultOutput)
			if rec.Code != http.StatusOK {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			wantCharged(t, budget, tc.want, tc.reserved, tc.body, defaultOutput)
		})
	}
}
