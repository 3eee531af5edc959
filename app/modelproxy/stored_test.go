package modelproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// storingResponses stands in for OpenAI's Responses API as far as stored
// conversations go (https://platform.openai.com/docs/api-reference/responses/create,
// https://platform.openai.com/docs/guides/conversation-state): a response
// is stored unless "store": false, each of its input items under an id;
// a later request may name a stored item (an item_reference) instead of
// sending it, and "all previous input tokens ... are billed as input
// tokens". Input is billed when generation starts, so an answer the
// client hangs up on is billed all the same. It records what it billed.
type storingResponses struct {
	mu     sync.Mutex
	items  map[string]int64 // stored items' input tokens, by id
	billed int64
	next   int
}

func (s *storingResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	var req struct {
		Input  []json.RawMessage `json:"input"`
		Store  *bool             `json:"store"`
		Stream bool              `json:"stream"`
	}
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, "not a Responses request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	input, stored := int64(len(b)/4), []string(nil)
	for _, raw := range req.Input {
		var item struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		_ = json.Unmarshal(raw, &item) // an item of another shape is inline content, counted above
		if item.Type == "item_reference" {
			n, ok := s.items[item.ID]
			if !ok {
				s.mu.Unlock()
				http.Error(w, `{"error":{"message":"Item not found"}}`, http.StatusBadRequest)
				return
			}
			input += n
			continue
		}
		if req.Store == nil || *req.Store {
			s.next++
			id := fmt.Sprintf("msg_%d", s.next)
			s.items[id] = int64(len(raw) / 4)
			stored = append(stored, id)
		}
	}
	s.billed += input + 1 // and one output token, generated before any hang-up
	s.mu.Unlock()
	if !req.Stream {
		_ = json.NewEncoder(w).Encode(map[string]any{"stored": stored, "usage": map[string]int64{
			"input_tokens": input, "output_tokens": 1, "total_tokens": input + 1}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	_, _ = io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done() // the client hung up before response.completed
}

// The attack suspected in issue 33, reproduced: one honest request stores
// a large input (charged in full); then continuations name it by an
// item_reference in a few bytes and hang up before the usage report. The
// provider bills the stored input each time; the session must be charged
// at least what the provider billed. Before decision 0061 each
// continuation was charged its reservation, a few dozen tokens.
func TestAbortedContinuationIsChargedWhatTheProviderBills(t *testing.T) {
	provider := &storingResponses{items: map[string]int64{}}
	upstream := httptest.NewServer(provider)
	t.Cleanup(upstream.Close)
	p := New(Options{Providers: providers{"o": {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-stored-test-0123456789"}}})
	budget := NewBudget(0, 0)
	served := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
		spec := contract.Spec{SessionID: "s1", Agent: contract.Agent{Preset: contract.PresetCodex, Model: "m-1", Provider: "o"}}
		p.Serve(w, r, spec, budget, zerolog.Nop())
		served <- struct{}{}
	})
	proxy := httptest.NewServer(mux)
	t.Cleanup(proxy.Close)
	url := proxy.URL + contract.EgressModelPath("a1", "o", "responses")

	big := `{"model":"m-1","input":[{"role":"user","content":"` + strings.Repeat("remember this. ", 4000) + `"}]}`
	resp, err := http.Post(url, "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	var first struct {
		Stored []string `json:"stored"`
	}
	err = json.NewDecoder(resp.Body).Decode(&first)
	_ = resp.Body.Close() // read whole
	<-served
	if err != nil || resp.StatusCode != http.StatusOK || len(first.Stored) != 1 {
		t.Fatalf("the first request: %d %v %+v", resp.StatusCode, err, first)
	}

	statuses := map[int]int{}
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		body := `{"model":"m-1","stream":true,"max_output_tokens":16,"input":[{"type":"item_reference","id":"` + first.Stored[0] + `"},{"role":"user","content":"go on"}]}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusOK {
			// The first event is there: hang up before the usage report.
			if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		_ = resp.Body.Close() // hung up on purpose
		<-served
	}
	provider.mu.Lock()
	billed := provider.billed
	provider.mu.Unlock()
	if used := budget.Used().TotalTokens; used < billed {
		t.Errorf("the session was charged %d tokens; the provider billed %d (continuations answered: %v)", used, billed, statuses)
	}
	if statuses[http.StatusForbidden] != 5 {
		t.Errorf("continuations by item_reference answered %v; want 403 each", statuses)
	}
}

// Each way a request can continue stored content, through the proxy:
// refused before it reaches the provider, with the reason. The top-level
// ones were refused already by the allowlist (decision 0055: refuted
// there); the ones inside the content passed it (confirmed, decision
// 0061). What the CLIs send inline passes.
func TestStoredContentIsRefused(t *testing.T) {
	upstream, got := recordingProvider(t)
	p := New(Options{Providers: providers{
		"o": {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-stored-test-0123456789"},
		"a": {Kind: contract.ProviderKindAnthropic, BaseURL: upstream.URL, Key: "sk-stored-test-0123456789"},
	}})
	const stored = "content the provider stored"
	cases := []struct {
		name, provider, path, body string
		beta                       string
		want                       string // "" passes
	}{
		// Refuted: the allowlist refuses these top-level fields.
		{"previous_response_id", "o", "responses", `{"model":"m-1","input":"go on","previous_response_id":"resp_1"}`, "",
			`the request field "previous_response_id" is not allowed for openai-responses`},
		{"a conversation by id", "o", "responses", `{"model":"m-1","input":"go on","conversation":"conv_1"}`, "",
			`the request field "conversation" is not allowed for openai-responses`},
		{"a conversation object", "o", "responses", `{"model":"m-1","input":"go on","conversation":{"id":"conv_1"}}`, "",
			`the request field "conversation" is not allowed for openai-responses`},
		{"a stored prompt", "o", "responses", `{"model":"m-1","prompt":{"id":"pmpt_1","version":"2"}}`, "",
			`the request field "prompt" is not allowed for openai-responses`},
		{"an Anthropic container reused", "a", "v1/messages", `{"model":"m-1","max_tokens":5,"messages":[],"container":"container_1"}`, "",
			`the request field "container" is not allowed for anthropic-messages: it is the server-side tool class code_execution`},
		{"the Anthropic Files API beta", "a", "v1/messages", `{"model":"m-1","max_tokens":5,"messages":[]}`, "files-api-2025-04-14",
			`the anthropic-beta value "files-api-2025-04-14" is not allowed`},

		// Confirmed: inside the content, past the allowlist.
		{"an item_reference", "o", "responses", `{"model":"m-1","input":[{"type":"item_reference","id":"msg_1"},{"role":"user","content":"go on"}]}`, "",
			`the request field "input" names an item_reference, ` + stored},
		{"an item reference by its id alone", "o", "responses", `{"model":"m-1","input":[{"id":"msg_1"}]}`, "",
			`names an item by its id alone (an item reference), ` + stored},
		{"reasoning by its id", "o", "responses", `{"model":"m-1","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`, "",
			`names a reasoning item without its encrypted_content, ` + stored},
		{"an input_file by file_id", "o", "responses", `{"model":"m-1","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-1"}]}]}`, "",
			`names an input_file by its file_id`},
		{"an input_file by File_id, in another case", "o", "responses", `{"model":"m-1","input":[{"role":"user","content":[{"type":"input_file","File_id":"file-1"}]}]}`, "",
			`names an input_file by its file_id`},
		{"an input_image by file_id", "o", "responses", `{"model":"m-1","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, "",
			`names an input_image by its file_id`},
		{"a Chat Completions file part", "o", "chat/completions", `{"model":"m-1","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, "",
			`the request field "messages" names a file part by its file_id`},
		{"Chat Completions audio of an earlier answer", "o", "chat/completions", `{"model":"m-1","messages":[{"role":"assistant","audio":{"id":"audio_1"}}]}`, "",
			`names the audio of an earlier answer by its id`},
		{"an Anthropic document by file_id", "a", "v1/messages",
			`{"model":"m-1","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]}`, "",
			`the request field "messages" names a file source by its file_id`},
		{"an Anthropic file in the system prompt", "a", "v1/messages",
			`{"model":"m-1","max_tokens":5,"system":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}`, "",
			`the request field "system" names a file source by its file_id`},
		{"an Anthropic container_upload", "a", "v1/messages",
			`{"model":"m-1","max_tokens":5,"messages":[{"role":"user","content":[{"type":"container_upload","file_id":"file_1"}]}]}`, "",
			`names a container_upload by its file_id`},

		// Inline content passes.
		{"reasoning carried encrypted, as Codex does", "o", "responses",
			`{"model":"m-1","store":false,"input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"type":"message","id":"msg_1","role":"user","content":[{"type":"input_text","text":"hi"}]}]}`, "", ""},
		{"a tool call whose arguments name a file_id", "a", "v1/messages",
			`{"model":"m-1","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"type":"file","file_id":"x"}}]}]}`, "", ""},
		{"an inline input_file", "o", "responses",
			`{"model":"m-1","input":[{"role":"user","content":[{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"}]}]}`, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			*got = nil
			mux := http.NewServeMux()
			mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
				spec := contract.Spec{Agent: contract.Agent{Preset: contract.PresetCodex, Model: "m-1", Provider: tc.provider}}
				p.Serve(w, r, spec, NewBudget(0, 0), zerolog.Nop())
			})
			req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", tc.provider, tc.path), strings.NewReader(tc.body))
			if tc.beta != "" {
				req.Header.Set("Anthropic-Beta", tc.beta)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			var answer struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &answer) // a success's body has no message
			if tc.want == "" {
				if rec.Code != http.StatusOK || len(*got) != 1 {
					t.Errorf("inline content: %d %s; the provider got %q", rec.Code, rec.Body, *got)
				}
				return
			}
			if rec.Code != http.StatusForbidden || !strings.Contains(answer.Message, tc.want) {
				t.Errorf("%d %s; want 403 with %q", rec.Code, rec.Body, tc.want)
			}
			if len(*got) != 0 {
				t.Errorf("the refused request reached the provider: %q", *got)
			}
		})
	}
}

// Every request the pinned agent CLIs made (testdata/recorded) names no
// stored content: the refusal costs the real clients nothing.
func TestRecordedRequestsNameNoStoredContent(t *testing.T) {
	all := recordings(t)
	if len(all) < 8 {
		t.Fatalf("%d recorded requests", len(all))
	}
	for _, rc := range all {
		api := apiOf(rc.kind, policy.ModelRoute{Method: rc.Method, Path: rc.path})
		if api == "" {
			t.Errorf("%s: no API for %s %s", rc.file, rc.Method, rc.path)
			continue
		}
		if why := storedReference(api, rc.Body); why != "" {
			t.Errorf("%s (%s): %s", rc.file, api, why)
		}
	}
}
