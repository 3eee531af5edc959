package modelproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// The APIs a model request can speak, named in refusals.
const (
	apiAnthropicMessages = "anthropic-messages"
	apiOpenAIResponses   = "openai-responses"
	apiOpenAIChat        = "openai-chat-completions"
)

// allowlist is what one API's requests may carry: the body's top-level
// fields, the types of the client-side tools offered (run by the agent's
// CLI in the sandbox), and the values of the beta headers.
type allowlist struct {
	fields    []string
	toolTypes []string
	// untypedTool says a tool with no "type" is a client-side one
	// (Anthropic's custom tools).
	untypedTool bool
	betas       map[string][]string // by canonical header name
}

// allowlists are modelled on the requests the pinned agent CLIs make
// (runner/supervisor: Codex CLI, OpenCode, Claude Code), recorded in
// testdata/recorded (TestRecordedRequestsPassTheAllowlist holds every one
// to its API's list), plus the output caps the reservation reads. Chat
// Completions, which none of the CLIs speaks, gets the documented fields
// a tool-calling agent needs
// (https://platform.openai.com/docs/api-reference/chat/create), n among
// them: the reservation takes n times the output cap (prepareBody,
// decision 0053). Decision 0055.
var allowlists = map[string]allowlist{
	apiOpenAIResponses: {
		fields: []string{
			// Codex CLI 0.171.0
			"model", "stream", "input", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "store",
			"include", "prompt_cache_key", "client_metadata",
			// OpenCode 1.18.33
			"max_output_tokens",
			// "background" is refused unless false: see backgroundRefusal.
			"background",
		},
		// namespace: a named group of tools (Codex's multi_agent_v1), whose
		// own tools are held to this list too.
		toolTypes: []string{"function", "namespace"},
	},
	apiOpenAIChat: {
		fields: []string{"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
			"tools", "tool_choice", "parallel_tool_calls", "temperature", "top_p", "stop", "response_format",
			"reasoning_effort", "seed", "user", "store", "prompt_cache_key", "n"},
		toolTypes: []string{"function"},
	},
	apiAnthropicMessages: {
		fields: []string{
			// Claude Code 2.1.332
			"model", "messages", "system", "tools", "metadata", "max_tokens", "thinking", "context_management",
			"output_config", "stream",
			// OpenCode 1.18.33
			"tool_choice",
		},
		untypedTool: true,
		toolTypes:   []string{"custom"},
		betas: map[string][]string{"Anthropic-Beta": {
			// Claude Code 2.1.332
			"claude-code-20250219", "interleaved-thinking-2025-05-14", "context-management-2025-06-27",
			"mid-conversation-tool-changes-2026-07-01", "thinking-token-count-2026-05-13",
			"advanced-tool-use-2025-11-20", "effort-2025-11-24",
		}},
	},
}

// betaHeaders are the request headers that turn on a provider's beta
// features; the proxy passes them on (contract.ModelRequestHeaders), so
// each value must be on its API's list.
var betaHeaders = []string{"Anthropic-Beta", "OpenAI-Beta"}

// serverToolTypes are the tool types the providers run on their own
// servers, by API, with their class (contract.ServerTools): a request may
// offer one only when the provider's allowed_server_tools names its class.
// A dated Anthropic type matches by its prefix up to the date. From
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-reference
// and https://platform.openai.com/docs/guides/tools.
var serverToolTypes = map[string][]struct{ prefix, class string }{
	apiAnthropicMessages: {
		{"web_search_", contract.ServerToolWebSearch},
		{"web_fetch_", contract.ServerToolWebFetch},
		{"code_execution_", contract.ServerToolCodeExecution},
		{"bash_code_execution_", contract.ServerToolCodeExecution},
		{"text_editor_code_execution_", contract.ServerToolCodeExecution},
		{"computer_", contract.ServerToolComputerUse},
		{"mcp_toolset", contract.ServerToolMCP},
	},
	apiOpenAIResponses: {
		{"web_search", contract.ServerToolWebSearch}, // web_search, web_search_preview and dated ones
		{"mcp", contract.ServerToolMCP},
		{"code_interpreter", contract.ServerToolCodeExecution},
		{"computer", contract.ServerToolComputerUse}, // computer, computer_use_preview
		{"file_search", contract.ServerToolFileSearch},
		{"image_generation", contract.ServerToolImageGeneration},
	},
}

// serverToolFields are body fields that configure a server tool, by API.
var serverToolFields = map[string]map[string]string{
	// mcp_servers: the MCP connector's servers, by URL; container: the
	// code execution container to reuse.
	apiAnthropicMessages: {"mcp_servers": contract.ServerToolMCP, "container": contract.ServerToolCodeExecution},
	// web_search_options: the search models' web search.
	apiOpenAIChat: {"web_search_options": contract.ServerToolWebSearch},
}

// serverToolBetas are the Anthropic beta values that turn on a server
// tool, by prefix (https://platform.claude.com/docs/en/api/beta-headers).
var serverToolBetas = []struct{ prefix, class string }{
	{"mcp-client-", contract.ServerToolMCP},
	{"web-fetch-", contract.ServerToolWebFetch},
	{"web-search-", contract.ServerToolWebSearch},
	{"code-execution-", contract.ServerToolCodeExecution},
	{"computer-use-", contract.ServerToolComputerUse},
}

// apiOf is the API a request on route of a provider of kind speaks ("" for
// a route with none, which DecideModelRequest never lets through).
func apiOf(kind string, route policy.ModelRoute) string {
	switch {
	case kind == contract.ProviderKindAnthropic && strings.HasPrefix(route.Path, "v1/messages"):
		return apiAnthropicMessages
	case kind == contract.ProviderKindOpenAI && route.Path == "responses":
		return apiOpenAIResponses
	case kind == contract.ProviderKindOpenAI && route.Path == "chat/completions":
		return apiOpenAIChat
	}
	return ""
}

// allowedRequest says why a model request is refused under its API's
// allowlist ("" when it passes): a top-level body field, a tool type or a
// beta header value not on the list, a server tool whose class the
// provider's allowed_server_tools (serverTools) does not name, or
// "background": true. provider names the provider in the message. body
// has passed modelRefusal: empty, or one JSON object.
func allowedRequest(kind, provider string, route policy.ModelRoute, header http.Header, body []byte, serverTools []string) string {
	api := apiOf(kind, route)
	list, ok := allowlists[api]
	if !ok {
		return fmt.Sprintf("the route %s has no allowlist for a provider of kind %s", route, kind)
	}
	notAllowed := func(class string) string {
		return fmt.Sprintf("it is the server-side tool class %s, which agents.providers.%s.allowed_server_tools does not name", class, provider)
	}
	for _, h := range betaHeaders {
		for _, v := range header.Values(h) {
			for _, beta := range strings.Split(v, ",") {
				beta = strings.TrimSpace(beta)
				if beta == "" || slices.Contains(list.betas[h], beta) {
					continue
				}
				why := fmt.Sprintf("the %s value %q is not allowed for %s", strings.ToLower(h), beta, api)
				if class := classOf(serverToolBetas, beta); class != "" {
					if api == apiAnthropicMessages && slices.Contains(serverTools, class) {
						continue
					}
					why += ": " + notAllowed(class)
				}
				return why
			}
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return ""
	}
	if why := bodyShapeRefusal(body); why != "" {
		return why
	}
	fields, err := objectFields(body)
	if err != nil {
		return "the request body " + err.Error()
	}
	for _, f := range fields {
		why := fmt.Sprintf("the request field %q is not allowed for %s", f.key, api)
		if class, ok := serverToolFields[api][f.key]; ok {
			if slices.Contains(serverTools, class) {
				continue
			}
			return why + ": " + notAllowed(class)
		}
		if !slices.Contains(list.fields, f.key) {
			return why
		}
		if slices.Contains(reservationCounts, f.key) {
			if why := countRefusal(f.key, f.value); why != "" {
				return why
			}
			continue
		}
		switch f.key {
		case "background":
			if !bytes.Equal(f.value, []byte("false")) && !bytes.Equal(f.value, []byte("null")) {
				return why + " unless false: a background response answers at once, without usage, while the provider goes on generating and charging for it, past the session's token budget"
			}
		case "tools":
			if why := allowedTools(api, list, f.value, serverTools, notAllowed); why != "" {
				return why
			}
			continue
		}
		var v any
		if json.Unmarshal(f.value, &v) == nil {
			if where := contentByURL(v); where != "" {
				return fmt.Sprintf("the request field %q holds %s, which the provider would fetch from another host; send the content inline (base64, or a data: URL)", f.key, where)
			}
		}
	}
	return ""
}

// allowedQuery says why a request's query string is refused ("" when it
// passes): it goes to the provider as sent, so it is allowlisted like the
// body. Claude Code asks Anthropic's routes for ?beta=true (its
// recordings in testdata/recorded); nothing else is sent, and OpenAI's
// routes take no query at all. The comparison is of the query as written,
// so no other spelling of beta=true passes.
func allowedQuery(kind string, route policy.ModelRoute, rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	api := apiOf(kind, route)
	query := rawQuery
	if len(query) > maxQuoted {
		query = query[:maxQuoted] + "..."
	}
	if kind == contract.ProviderKindAnthropic {
		if rawQuery == "beta=true" {
			return ""
		}
		return fmt.Sprintf("the query %q is not allowed for %s: only \"beta=true\" is", query, api)
	}
	return fmt.Sprintf("the query %q is not allowed for %s: it takes none", query, api)
}

// maxQuoted bounds what of a refused value a refusal quotes.
const maxQuoted = 200

// maxBodyDepth bounds how deeply a request body's objects and arrays nest:
// the CLIs' deepest (a tool's JSON schema) is far shallower, and the
// checks after bodyShapeRefusal decode the body recursively.
const maxBodyDepth = 64

// bodyShapeRefusal walks the whole body once, token by token, and says
// why it is refused ("" when it is not): a key that appears twice in one
// object, at any depth, or nesting deeper than maxBodyDepth. Keys are
// compared after unescaping and folding case as Go's decoder folds it
// (Unicode simple folding): decoders disagree on which of two keys counts
// (Go's takes the last, matching case-insensitively), so the one checked
// here (a content source's type, say) might not be the one the provider
// reads. body has passed modelRefusal: one JSON object.
func bodyShapeRefusal(body []byte) string {
	// frame is one open object or array: an object's keys so far (folded,
	// to the key as written) and its current key; an array's current
	// index.
	type frame struct {
		object  bool
		seen    map[string]string
		key     string
		wantKey bool
		index   int
	}
	var stack []frame
	where := func() string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case f.object && i == 0:
				b.WriteString(f.key)
			case f.object:
				b.WriteString("." + f.key)
			default:
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return ""
		}
		if err != nil {
			return "the request body is not one JSON object"
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key, _ := tok.(string) // the decoder yields only a string or '}' here
			top := &stack[n-1]
			folded := foldKey(key)
			if first, dup := top.seen[folded]; dup {
				in := ""
				if n > 1 {
					stack = stack[:n-1] // where names the object holding the key
					in = " in " + where()
				}
				return fmt.Sprintf("the request body has the field %q twice%s (as %q and %q)", key, in, first, key)
			}
			top.seen[folded], top.key, top.wantKey = key, key, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxBodyDepth {
				return fmt.Sprintf("the request body nests deeper than %d at %s", maxBodyDepth, where())
			}
			stack = append(stack, frame{object: tok == json.Delim('{'), seen: map[string]string{}, wantKey: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// foldKey is key with each rune replaced by the least of those it folds
// to (unicode.SimpleFold's orbit): two keys fold alike exactly when
// strings.EqualFold, Go's decoder's own matching, says they are equal.
func foldKey(key string) string {
	var b strings.Builder
	for _, r := range key {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// countRefusal says why the value of a count the reservation reads
// (reservationCounts) is refused ("" when it passes): it must be a JSON
// integer written in digits from 0 to maxOutputReservation, or null (no
// cap). prepareBody decodes each into an int64, which 64.0, 1e5 or "64"
// fail, so another form would be sent to a provider that reads it as a
// number while the reservation took it for absent.
func countRefusal(key string, value json.RawMessage) string {
	v := bytes.TrimSpace(value)
	if bytes.Equal(v, []byte("null")) {
		return ""
	}
	digits := len(v) > 0 && len(v) <= 16 && !bytes.ContainsFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if digits {
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n <= maxOutputReservation {
			return ""
		}
	}
	found := string(v)
	if len(found) > maxQuoted {
		found = found[:maxQuoted] + "..."
	}
	return fmt.Sprintf("the request field %q must be a whole number from 0 to %d, in digits (found %s)", key, maxOutputReservation, found)
}

// contentByURL finds content the provider would fetch itself: an
// Anthropic image or document whose source is {"type": "url"}, an OpenAI
// input_image's or input_file's image_url/file_url, or Chat Completions'
// {"image_url": {"url": ...}}, other than a data: URL. It says what it
// found ("" for none). Like a server tool, such a fetch reaches a host of
// the request's choosing, with what the URL carries.
// (https://platform.claude.com/docs/en/build-with-claude/vision,
// https://platform.openai.com/docs/guides/images-vision)
func contentByURL(v any) string {
	switch x := v.(type) {
	case map[string]any:
		if t, _ := fieldFolded(x, "type").(string); strings.EqualFold(t, "url") {
			return `a content source of type "url"`
		}
		for _, k := range []string{"image_url", "file_url"} {
			u := fieldFolded(x, k)
			if m, ok := u.(map[string]any); ok {
				u = fieldFolded(m, "url")
			}
			if s, ok := u.(string); ok && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "data:") {
				return fmt.Sprintf("%s that is not a data: URL", map[string]string{"image_url": "an image_url", "file_url": "a file_url"}[k])
			}
		}
		typ, _ := fieldFolded(x, "type").(string)
		for k, e := range x {
			if isToolCallInput(typ, k) {
				continue
			}
			if where := contentByURL(e); where != "" {
				return where
			}
		}
	case []any:
		for _, e := range x {
			if where := contentByURL(e); where != "" {
				return where
			}
		}
	}
	return ""
}

// fieldFolded is the value of x's key that folds to name, as Go's
// decoder would match it: a provider that reads keys in any case reads
// "Type" as "type". bodyShapeRefusal has refused two such keys in one
// object, so there is at most one.
func fieldFolded(x map[string]any, name string) any {
	if v, ok := x[name]; ok {
		return v
	}
	for k, v := range x {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// hasFolded says whether x has a key that folds to name (fieldFolded).
func hasFolded(x map[string]any, name string) bool {
	for k := range x {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// allowedTools says why a tools array is refused ("" when it passes): each
// tool is an object whose type is a client-side type on the list (a
// namespace's own tools likewise), or a server tool the provider allows.
func allowedTools(api string, list allowlist, raw json.RawMessage, serverTools []string, notAllowed func(class string) string) string {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return ""
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return `the request field "tools" is not an array`
	}
	for _, tool := range tools {
		fields, err := objectFields(tool)
		if err != nil {
			return "a tool " + err.Error()
		}
		typ, typed, nested := "", false, json.RawMessage(nil)
		for _, f := range fields {
			if f.key != "type" && strings.EqualFold(f.key, "type") {
				return fmt.Sprintf("a tool has the key %q: only \"type\" names a tool's type", f.key)
			}
			switch f.key {
			case "type":
				typed = true
				if json.Unmarshal(f.value, &typ) != nil {
					return "a tool's type is not a string"
				}
			case "tools":
				nested = f.value
			}
		}
		switch {
		case !typed && list.untypedTool:
			continue
		case !typed:
			return "a tool has no type"
		}
		why := fmt.Sprintf("the tool type %q is not allowed for %s", typ, api)
		if slices.Contains(list.toolTypes, typ) {
			if typ == "namespace" {
				if why := allowedTools(api, list, nested, serverTools, notAllowed); why != "" {
					return why
				}
			}
			continue
		}
		if class := classOf(serverToolTypes[api], typ); class != "" {
			if slices.Contains(serverTools, class) {
				continue
			}
			return why + ": " + notAllowed(class)
		}
		return why
	}
	return ""
}

// classOf is the server tool class of the first entry whose prefix name
// starts with, or "".
func classOf(table []struct{ prefix, class string }, name string) string {
	for _, e := range table {
		if strings.HasPrefix(name, e.prefix) {
			return e.class
		}
	}
	return ""
}

// field is one key of a JSON object with its value, as written.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields is a JSON object's fields in order. A key that appears
// twice, even differing only in case, is refused: decoders disagree on
// which one counts (Go's takes the last, matching case-insensitively), so
// the one checked here might not be the one the provider reads.
// (bodyShapeRefusal has already refused a key twice at any depth in a
// request; the check stays so that objectFields is safe on its own.)
func objectFields(raw []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("is not a JSON object")
	}
	var out []field
	seen := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var value json.RawMessage
		if err != nil || !isKey || dec.Decode(&value) != nil {
			return nil, fmt.Errorf("is not a JSON object")
		}
		if first, dup := seen[foldKey(key)]; dup {
			return nil, fmt.Errorf("has the field %q twice (as %q and %q)", key, first, key)
		}
		seen[foldKey(key)] = key
		out = append(out, field{key, value})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fmt.Errorf("is not a JSON object")
	}
	return out, nil
}
