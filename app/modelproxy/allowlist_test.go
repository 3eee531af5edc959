package modelproxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

var (
	responsesRoute = policy.ModelRoute{Method: http.MethodPost, Path: "responses"}
	chatRoute      = policy.ModelRoute{Method: http.MethodPost, Path: "chat/completions"}
	messagesRoute  = policy.ModelRoute{Method: http.MethodPost, Path: "v1/messages"}
	countRoute     = policy.ModelRoute{Method: http.MethodPost, Path: "v1/messages/count_tokens"}
)

// Each class of refusal, and its pass where the server allows it: a body
// field, a tool type or a beta value off the list, a server tool whose
// class the provider does not allow, "background": true; the message
// names what was refused.
func TestAllowedRequest(t *testing.T) {
	const openai, anthropic = contract.ProviderKindOpenAI, contract.ProviderKindAnthropic
	notNamed := "which agents.providers.p.allowed_server_tools does not name"
	cases := []struct {
		name        string
		kind        string
		route       policy.ModelRoute
		beta        map[string]string
		body        string
		serverTools []string
		want        string // "" passes
	}{
		{"a plain Responses request", openai, responsesRoute, nil,
			`{"model":"m","input":"hi","stream":true,"tools":[{"type":"function","name":"f","parameters":{}}]}`, nil, ""},
		{"an empty body", openai, responsesRoute, nil, ``, nil, ""},
		{"an unknown field", openai, responsesRoute, nil, `{"model":"m","input":"hi","frobnicate":1}`, nil,
			`the request field "frobnicate" is not allowed for openai-responses`},
		{"a stored conversation", openai, responsesRoute, nil, `{"model":"m","input":"hi","previous_response_id":"resp_1"}`, nil,
			`the request field "previous_response_id" is not allowed for openai-responses`},
		{"a field in another case", openai, responsesRoute, nil, `{"model":"m","Input":"hi"}`, nil,
			`the request field "Input" is not allowed`},
		{"a field twice", openai, responsesRoute, nil, `{"model":"m","tools":[],"Tools":[{"type":"mcp"}]}`, nil,
			`has the field "Tools" twice`},
		{"background", openai, responsesRoute, nil, `{"model":"m","input":"hi","background":true}`, nil,
			`the request field "background" is not allowed for openai-responses unless false: a background response answers at once, without usage`},
		{"background off", openai, responsesRoute, nil, `{"model":"m","input":"hi","background":false}`, nil, ""},
		{"background, asked another way", openai, responsesRoute, nil, `{"model":"m","input":"hi","background":1}`, nil,
			`the request field "background" is not allowed for openai-responses unless false`},
		{"an unknown tool type", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"teleport"}]}`, nil,
			`the tool type "teleport" is not allowed for openai-responses`},
		{"OpenAI mcp", openai, responsesRoute, nil,
			`{"model":"m","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.example/mcp"}]}`, nil,
			`the tool type "mcp" is not allowed for openai-responses: it is the server-side tool class mcp, ` + notNamed},
		{"OpenAI mcp, allowed", openai, responsesRoute, nil,
			`{"model":"m","tools":[{"type":"mcp","server_label":"x","server_url":"https://mcp.example/mcp"}]}`, []string{"mcp"}, ""},
		{"OpenAI mcp in a namespace", openai, responsesRoute, nil,
			`{"model":"m","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"},{"type":"mcp","server_url":"https://evil.example"}]}]}`, nil,
			`the tool type "mcp" is not allowed for openai-responses: it is the server-side tool class mcp`},
		{"OpenAI web_search", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"web_search"}]}`, nil,
			`the tool type "web_search" is not allowed for openai-responses: it is the server-side tool class web_search`},
		{"OpenAI web_search_preview", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"web_search_preview_2025_03_11"}]}`, nil,
			`server-side tool class web_search`},
		{"OpenAI web_search, allowed", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"web_search_preview"}]}`, []string{"web_search"}, ""},
		{"OpenAI web_search, another class allowed", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"web_search"}]}`, []string{"mcp"},
			`server-side tool class web_search`},
		{"OpenAI code_interpreter", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`, nil,
			`the tool type "code_interpreter" is not allowed for openai-responses: it is the server-side tool class code_execution`},
		{"OpenAI file_search", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, nil,
			`server-side tool class file_search`},
		{"OpenAI image_generation", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"image_generation"}]}`, nil,
			`server-side tool class image_generation`},
		{"OpenAI computer use", openai, responsesRoute, nil, `{"model":"m","tools":[{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"browser"}]}`, nil,
			`server-side tool class computer_use`},
		{"a tool with no type", openai, responsesRoute, nil, `{"model":"m","tools":[{"name":"f"}]}`, nil, "a tool has no type"},
		{"tools not an array", openai, responsesRoute, nil, `{"model":"m","tools":{"type":"mcp"}}`, nil, `the request field "tools" is not an array`},
		{"an OpenAI beta value", openai, responsesRoute, map[string]string{"OpenAI-Beta": "responses=v9"}, `{"model":"m"}`, nil,
			`the openai-beta value "responses=v9" is not allowed for openai-responses`},
		{"an Anthropic beta on OpenAI", openai, responsesRoute, map[string]string{"Anthropic-Beta": "mcp-client-2025-04-04"}, `{"model":"m"}`, []string{"mcp"},
			`the anthropic-beta value "mcp-client-2025-04-04" is not allowed for openai-responses`},

		{"a plain Chat Completions request", openai, chatRoute, nil,
			`{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"tools":[{"type":"function","function":{"name":"f"}}]}`, nil, ""},
		{"Chat Completions n (reserved n times)", openai, chatRoute, nil, `{"model":"m","messages":[],"n":8}`, nil, ""},
		{"Chat Completions web search", openai, chatRoute, nil, `{"model":"m","messages":[],"web_search_options":{}}`, nil,
			`the request field "web_search_options" is not allowed for openai-chat-completions: it is the server-side tool class web_search`},
		{"Chat Completions background", openai, chatRoute, nil, `{"model":"m","messages":[],"background":false}`, nil,
			`the request field "background" is not allowed for openai-chat-completions`},

		{"a plain Messages request", anthropic, messagesRoute, map[string]string{"Anthropic-Beta": "claude-code-20250219, effort-2025-11-24"},
			`{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"Bash","input_schema":{}},{"type":"custom","name":"x","input_schema":{}}]}`, nil, ""},
		{"count_tokens", anthropic, countRoute, nil, `{"model":"m","messages":[],"frobnicate":1}`, nil,
			`the request field "frobnicate" is not allowed for anthropic-messages`},
		{"Anthropic web search", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"web_search_20250305","name":"web_search"}]}`, nil,
			`the tool type "web_search_20250305" is not allowed for anthropic-messages: it is the server-side tool class web_search, ` + notNamed},
		{"Anthropic web fetch", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`, nil,
			`server-side tool class web_fetch`},
		{"Anthropic web fetch, allowed", anthropic, messagesRoute, map[string]string{"Anthropic-Beta": "web-fetch-2025-09-10"},
			`{"model":"m","tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`, []string{"web_fetch"}, ""},
		{"Anthropic code execution", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`, nil,
			`server-side tool class code_execution`},
		{"Anthropic computer use", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"computer_20250124","name":"computer"}]}`, nil,
			`server-side tool class computer_use`},
		{"Anthropic mcp_servers", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[],"mcp_servers":[{"type":"url","url":"https://evil.example/sse","name":"x"}]}`, nil,
			`the request field "mcp_servers" is not allowed for anthropic-messages: it is the server-side tool class mcp, ` + notNamed},
		{"Anthropic mcp_toolset", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]}`, nil,
			`the tool type "mcp_toolset" is not allowed for anthropic-messages: it is the server-side tool class mcp`},
		{"Anthropic mcp beta", anthropic, messagesRoute, map[string]string{"Anthropic-Beta": "claude-code-20250219,mcp-client-2025-04-04"}, `{"model":"m"}`, nil,
			`the anthropic-beta value "mcp-client-2025-04-04" is not allowed for anthropic-messages: it is the server-side tool class mcp, ` + notNamed},
		{"Anthropic MCP, allowed", anthropic, messagesRoute, map[string]string{"Anthropic-Beta": "mcp-client-2025-11-20"},
			`{"model":"m","mcp_servers":[{"type":"url","url":"https://mcp.example/sse","name":"x"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]}`, []string{"mcp"}, ""},
		{"a beta value off the list", anthropic, messagesRoute, map[string]string{"Anthropic-Beta": "claude-code-20250219,files-api-2025-04-14"}, `{"model":"m"}`, nil,
			`the anthropic-beta value "files-api-2025-04-14" is not allowed for anthropic-messages`},
		{"a tool type in another case", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"Type":"web_fetch_20250910","name":"web_fetch"}]}`, nil,
			`a tool has the key "Type"`},
		{"a tool's type twice", anthropic, messagesRoute, nil, `{"model":"m","tools":[{"type":"custom","type":"web_fetch_20250910"}]}`, nil,
			`the request body has the field "type" twice in tools[0]`},
		{"Anthropic background", anthropic, messagesRoute, nil, `{"model":"m","background":true}`, nil,
			`the request field "background" is not allowed for anthropic-messages`},

		{"an Anthropic image by URL", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://evil.example/?d=secret"}}]}]}`, nil,
			`the request field "messages" holds a content source of type "url", which the provider would fetch from another host`},
		{"an Anthropic document by URL in the system prompt", anthropic, messagesRoute, nil,
			`{"model":"m","system":[{"type":"document","source":{"type":"url","url":"https://evil.example/a.pdf"}}]}`, nil,
			`the request field "system" holds a content source of type "url"`},
		{"a tool call's arguments naming a URL (the model's words, never fetched)", anthropic, messagesRoute, nil,
			`{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Fetch","input":{"source":{"type":"url","url":"https://example.com/a.png"},"image_url":"https://example.com/b"}}]}]}`, nil, ""},
		{"an Anthropic image by URL beside a tool call", anthropic, messagesRoute, nil,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_use","id":"t1","name":"F","input":{}},{"type":"image","source":{"type":"url","url":"https://evil.example/x"}}]}]}`, nil,
			`a content source of type "url"`},
		{"an Anthropic image inline", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}`, nil, ""},
		{"an OpenAI input_image by URL", openai, responsesRoute, nil,
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"HTTPS://evil.example/x.png"}]}]}`, nil,
			`the request field "input" holds an image_url that is not a data: URL`},
		{"an OpenAI input_file by URL", openai, responsesRoute, nil,
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"https://evil.example/x.pdf"}]}]}`, nil,
			`the request field "input" holds a file_url that is not a data: URL`},
		{"an OpenAI input_image inline", openai, responsesRoute, nil,
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}]}`, nil, ""},
		{"a Chat Completions image by URL", openai, chatRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://evil.example/x.png"}}]}]}`, nil,
			`the request field "messages" holds an image_url that is not a data: URL`},
		// A duplicate key anywhere in the body (Go's decoder, and the
		// check above, take the last; another decoder may take the first),
		// compared as Go's decoder compares keys: after unescaping, folding
		// case as Unicode does (the long s folds to s).
		{"a source's type twice", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://evil/x","type":"base64"}}]}]}`, nil,
			`the request body has the field "type" twice in messages[0].content[0].source (as "type" and "type")`},
		{"an image_url twice", openai, responsesRoute, nil,
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://a","image_url":"data:x"}]}]}`, nil,
			`the request body has the field "image_url" twice in input[0].content[0]`},
		{"a nested key twice, escaped and in another case", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","\u0054ype":"url","url":"https://evil/x"}}]}]}`, nil,
			`the request body has the field "Type" twice in messages[0].content[0].source (as "type" and "Type")`},
		{"a nested key twice, folded", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url"},"\u017Fource":{"type":"base64"}}]}]}`, nil,
			`the request body has the field "ſource" twice in messages[0].content[0]`},
		{"a key twice in a tool's schema", openai, responsesRoute, nil,
			`{"model":"m","tools":[{"type":"function","name":"f","parameters":{"a":1,"A":2}}]}`, nil,
			`the request body has the field "A" twice in tools[0].parameters`},
		{"the same key in two objects", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, nil, ""},
		{"nested 64 deep", openai, responsesRoute, nil, `{"model":"m","input":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`, nil, ""},
		{"nested 65 deep", openai, responsesRoute, nil, `{"model":"m","input":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`, nil,
			`the request body nests deeper than 64 at input` + strings.Repeat("[0]", 63)},
		{"a content source's type in another case", anthropic, messagesRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"Type":"URL","url":"https://evil/x"}}]}]}`, nil,
			`the request field "messages" holds a content source of type "url"`},
		{"an escaped key", openai, responsesRoute, nil, `{"model":"m","input":"hi","\u0062ackground":true}`, nil,
			`the request field "background" is not allowed for openai-responses unless false`},

		// The counts the reservation reads (prepareBody) are JSON integers
		// in range: another form would be sent on but not reserved.
		{"n written as a float", openai, chatRoute, nil, `{"model":"m","messages":[],"max_tokens":1000,"n":64.0}`, nil,
			`the request field "n" must be a whole number from 0 to 1125899906842624, in digits (found 64.0)`},
		{"n with an exponent", openai, chatRoute, nil, `{"model":"m","messages":[],"n":1e2}`, nil, `the request field "n" must be a whole number`},
		{"n as a string", openai, chatRoute, nil, `{"model":"m","messages":[],"n":"64"}`, nil, `the request field "n" must be a whole number`},
		{"n negative", openai, chatRoute, nil, `{"model":"m","messages":[],"n":-1}`, nil, `the request field "n" must be a whole number`},
		{"n past the bound", openai, chatRoute, nil, `{"model":"m","messages":[],"n":1125899906842625}`, nil, `the request field "n" must be a whole number`},
		{"n at the bound", openai, chatRoute, nil, `{"model":"m","messages":[],"n":1125899906842624}`, nil, ""},
		{"n null", openai, chatRoute, nil, `{"model":"m","messages":[],"n":null}`, nil, ""},
		{"max_tokens with an exponent", openai, chatRoute, nil, `{"model":"m","messages":[],"max_tokens":1e5}`, nil,
			`the request field "max_tokens" must be a whole number from 0 to 1125899906842624, in digits (found 1e5)`},
		{"max_completion_tokens as a float", openai, chatRoute, nil, `{"model":"m","messages":[],"max_completion_tokens":100000.5}`, nil,
			`the request field "max_completion_tokens" must be a whole number`},
		{"max_output_tokens as a float", openai, responsesRoute, nil, `{"model":"m","input":"hi","max_output_tokens":5000.0}`, nil,
			`the request field "max_output_tokens" must be a whole number`},
		{"Messages max_tokens as a float", anthropic, messagesRoute, nil, `{"model":"m","max_tokens":32000.0}`, nil,
			`the request field "max_tokens" must be a whole number`},
		{"max_output_tokens in digits", openai, responsesRoute, nil, `{"model":"m","input":"hi","max_output_tokens":5000}`, nil, ""},
		{"a URL in text", openai, chatRoute, nil,
			`{"model":"m","messages":[{"role":"user","content":"see https://example.com/x.png and {\"image_url\":\"https://e.example\"}"}]}`, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.beta {
				h.Set(k, v)
			}
			got := allowedRequest(tc.kind, "p", tc.route, h, []byte(tc.body), tc.serverTools)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("allowedRequest = %q, want %q", got, tc.want)
			}
		})
	}
}

// A beta header sent as several lines (Header.Add) is read line by line:
// one value off the list refuses the request, wherever it is.
func TestAllowedRequestReadsEveryBetaHeaderLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string // "" passes
	}{
		{"two lines on the list", []string{"claude-code-20250219", "effort-2025-11-24"}, ""},
		{"the second line off the list", []string{"claude-code-20250219", "mcp-client-2025-04-04"},
			`the anthropic-beta value "mcp-client-2025-04-04" is not allowed for anthropic-messages`},
		{"the first line off the list", []string{"files-api-2025-04-14, effort-2025-11-24", "claude-code-20250219"},
			`the anthropic-beta value "files-api-2025-04-14" is not allowed for anthropic-messages`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.lines {
				h.Add("Anthropic-Beta", v)
			}
			got := allowedRequest(contract.ProviderKindAnthropic, "p", messagesRoute, h, []byte(`{"model":"m"}`), nil)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("allowedRequest = %q, want %q", got, tc.want)
			}
		})
	}
}

// The query string goes to the provider as sent, so it is allowlisted
// too: Anthropic's routes take Claude Code's beta=true alone (see
// testdata/recorded/claude-code-*), OpenAI's take none. The refusal names
// the query.
func TestAllowedQuery(t *testing.T) {
	const openai, anthropic = contract.ProviderKindOpenAI, contract.ProviderKindAnthropic
	for _, tc := range []struct {
		kind  string
		route policy.ModelRoute
		query string
		want  string // "" passes
	}{
		{anthropic, messagesRoute, "", ""},
		{anthropic, messagesRoute, "beta=true", ""},
		{anthropic, countRoute, "beta=true", ""},
		{anthropic, messagesRoute, "beta=true&beta=true", `the query "beta=true&beta=true" is not allowed for anthropic-messages: only "beta=true" is`},
		{anthropic, messagesRoute, "beta=false", `the query "beta=false" is not allowed for anthropic-messages`},
		{anthropic, messagesRoute, "Beta=true", `the query "Beta=true" is not allowed`},
		{anthropic, messagesRoute, "url=https://evil.example", `the query "url=https://evil.example" is not allowed`},
		{openai, responsesRoute, "", ""},
		{openai, responsesRoute, "beta=true", `the query "beta=true" is not allowed for openai-responses: it takes none`},
		{openai, chatRoute, "api-version=2024-10-21", `the query "api-version=2024-10-21" is not allowed for openai-chat-completions: it takes none`},
	} {
		got := allowedQuery(tc.kind, tc.route, tc.query)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s ?%s: allowedQuery = %q, want %q", tc.kind, tc.route.Path, tc.query, got, tc.want)
		}
	}
}

// recorded is one request recorded from a real agent CLI
// (fakemodel.Recorded, read back).
type recorded struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  string              `json:"query"`
	Header map[string][]string `json:"header"`
	Body   json.RawMessage     `json:"body"`
}

// recording is one recorded request, as the proxy sees it: its provider
// kind and its path relative to the base_url (whose /v1 an OpenAI base
// holds).
type recording struct {
	file, cli string
	kind      string
	path      string
	recorded
}

// recordings reads every request the pinned agent CLIs made
// (testdata/recorded/<cli>/request-*.json).
func recordings(t *testing.T) []recording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "recorded", "*", "request-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []recording
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rc := recording{file: f, cli: filepath.Base(filepath.Dir(f))}
		if err := json.Unmarshal(b, &rc.recorded); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rc.kind, rc.path = contract.ProviderKindAnthropic, strings.TrimPrefix(rc.Path, "/")
		if !strings.HasPrefix(rc.path, "v1/messages") {
			rc.kind, rc.path = contract.ProviderKindOpenAI, strings.TrimPrefix(rc.path, "v1/")
		}
		out = append(out, rc)
	}
	return out
}

// Every request the pinned agent CLIs made (testdata/recorded) passes the
// allowlist of its API, with no server tool allowed: the list is the real
// clients', not our guess at them. Each CLI's recordings are there.
func TestRecordedRequestsPassTheAllowlist(t *testing.T) {
	seen := map[string]int{}
	for _, rc := range recordings(t) {
		d := policy.DecideModelRequest(rc.kind, rc.Method, strings.Split(rc.path, "/"))
		if !d.Allowed {
			t.Errorf("%s: %s", rc.file, d.Why)
			continue
		}
		if why := allowedQuery(rc.kind, d.Route, rc.Query); why != "" {
			t.Errorf("%s: %s", rc.file, why)
		}
		if why := allowedRequest(rc.kind, "p", d.Route, http.Header(rc.Header), rc.Body, nil); why != "" {
			t.Errorf("%s (%s): %s", rc.file, apiOf(rc.kind, d.Route), why)
		}
		seen[rc.cli]++
	}
	for _, cli := range []string{"codex-0.171.0", "opencode-1.18.33-openai", "opencode-1.18.33-anthropic", "claude-code-2.1.332"} {
		if seen[cli] < 2 {
			t.Errorf("%d recorded requests of %s; want its whole session's", seen[cli], cli)
		}
	}
}

// recordingProvider is a provider that answers every request with a little
// usage and records each one's path and body in *got (read it after the
// request's answer).
func recordingProvider(t *testing.T) (upstream *httptest.Server, got *[]string) {
	t.Helper()
	got = new([]string)
	upstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // a failed read shows as a short body in got
		*got = append(*got, r.URL.Path+" "+string(b))
		_, _ = io.WriteString(w, `{"usage":{"input_tokens":7,"output_tokens":3}}`)
	}))
	t.Cleanup(upstream.Close)
	return upstream, got
}

// Through the proxy: fifty background requests asking for five million
// output tokens are each refused before they reach the provider or touch
// the budget, with the reason; a server tool goes on only to a provider
// whose config allows its class.
func TestProxyRefusesWhatTheAllowlistDoesNot(t *testing.T) {
	upstream, got := recordingProvider(t)
	p := New(Options{Providers: providers{
		"plain": {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-allowlist-test-0123456789"},
		"mcp":   {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-allowlist-test-0123456789", AllowedServerTools: []string{contract.ServerToolMCP}},
	}})
	budget := NewBudget(10000, 0)
	ask := func(provider, body string) (int, string) {
		spec := contract.Spec{Agent: contract.Agent{Preset: contract.PresetCodex, Model: "m-1", Provider: provider}}
		mux := http.NewServeMux()
		mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
			p.Serve(w, r, spec, budget, zerolog.Nop())
		})
		req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", provider, "responses"), strings.NewReader(body))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for range 50 {
		code, body := ask("plain", `{"model":"m-1","input":"go on","background":true,"max_output_tokens":100000}`)
		if code != http.StatusForbidden || !strings.Contains(body, `the request field \"background\" is not allowed for openai-responses unless false`) {
			t.Fatalf("background: %d %s", code, body)
		}
	}
	mcp := `{"model":"m-1","input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"https://mcp.example/sse"}]}`
	if code, body := ask("plain", mcp); code != http.StatusForbidden || !strings.Contains(body, "agents.providers.plain.allowed_server_tools does not name") {
		t.Errorf("mcp to plain: %d %s", code, body)
	}
	if len(*got) != 0 || budget.Used() != (Usage{}) {
		t.Fatalf("refused requests went on: %q, %+v", *got, budget.Used())
	}
	if code, body := ask("mcp", mcp); code != http.StatusOK || len(*got) != 1 || (*got)[0] != "/v1/responses "+mcp {
		t.Errorf("mcp to a provider that allows it: %d %s; provider got %q", code, body, *got)
	}
}

// Through the proxy: a query off the list is refused, naming it, before it
// reaches the provider or the budget; Claude Code's beta=true goes on as
// sent.
func TestProxySendsOnlyAnAllowedQuery(t *testing.T) {
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery)
		_, _ = io.WriteString(w, `{"usage":{"input_tokens":7,"output_tokens":3}}`)
	}))
	t.Cleanup(upstream.Close)
	p := New(Options{Providers: providers{
		"a": {Kind: contract.ProviderKindAnthropic, BaseURL: upstream.URL, Key: "sk-query-test-0123456789"},
		"o": {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-query-test-0123456789"},
	}})
	budget := NewBudget(10000, 0)
	ask := func(provider, rest, query string) (int, string) {
		spec := contract.Spec{Agent: contract.Agent{Preset: contract.PresetOpenCode, Model: "m-1", Provider: provider}}
		mux := http.NewServeMux()
		mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
			p.Serve(w, r, spec, budget, zerolog.Nop())
		})
		req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", provider, rest)+"?"+query, strings.NewReader(`{"model":"m-1"}`))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct{ provider, rest, query, want string }{
		{"a", "v1/messages", "beta=true&url=https://evil.example", `the query \"beta=true\u0026url=https://evil.example\" is not allowed for anthropic-messages`},
		{"o", "responses", "beta=true", `the query \"beta=true\" is not allowed for openai-responses`},
	} {
		if code, body := ask(tc.provider, tc.rest, tc.query); code != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("%s ?%s: %d %s", tc.rest, tc.query, code, body)
		}
	}
	if len(got) != 0 || budget.Used() != (Usage{}) {
		t.Fatalf("refused requests went on: %q, %+v", got, budget.Used())
	}
	if code, body := ask("a", "v1/messages", "beta=true"); code != http.StatusOK || len(got) != 1 || got[0] != "/v1/messages?beta=true" {
		t.Errorf("beta=true: %d %s; provider got %q", code, body, got)
	}
}
