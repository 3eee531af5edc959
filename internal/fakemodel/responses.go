package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The OpenAI Responses API (POST /v1/responses).
//
// A streamed turn is these events, each "event: TYPE" and "data: JSON"
// with the same "type" and a "sequence_number" counting from 0:
//
//	response.created      {"response": {"id": "resp_N", "status": "in_progress", "output": [], ...}}
//	response.in_progress  {"response": {...}}
//	for each output item, at output_index i:
//	  response.output_item.added  {"output_index": i, "item": ITEM (in progress)}
//	  for a function call:
//	    response.function_call_arguments.delta  {"item_id", "output_index", "delta"}
//	    response.function_call_arguments.done   {"item_id", "output_index", "arguments"}
//	  for a message:
//	    response.content_part.added  {"item_id", "output_index", "content_index": 0, "part"}
//	    response.output_text.delta   {"item_id", "output_index", "content_index": 0, "delta"}
//	    response.output_text.done    {"item_id", "output_index", "content_index": 0, "text"}
//	    response.content_part.done   {"item_id", "output_index", "content_index": 0, "part"}
//	  response.output_item.done   {"output_index": i, "item": ITEM}
//	response.completed    {"response": {"id": "resp_N", "status": "completed", "output": [ITEM...], "usage": {...}}}
//
// where a function call ITEM is
// {"type":"function_call","id":"fc_N_i","call_id":"call_N_i","name":"exec_command","arguments":"{\"cmd\":\"...\"}","status":"completed"}
// (or "bash" with {"command": ...} when the request offers that tool, as
// OpenCode does)
// and a message ITEM is
// {"type":"message","id":"msg_N","role":"assistant","status":"completed","content":[{"type":"output_text","text":"...","annotations":[]}]}.
// The usage is {"input_tokens", "input_tokens_details": {"cached_tokens"},
// "output_tokens", "output_tokens_details": {"reasoning_tokens": 0},
// "total_tokens"}. A request that does not stream gets the completed
// response object as JSON.
//
// A request with "background": true that does not stream is answered at
// once, as the API does (https://platform.openai.com/docs/guides/background):
// the response object with "background": true, "status": "queued", no
// output and "usage": null. Its turn is used up; this server serves no
// GET /v1/responses/{id} to poll it (the model proxy relays no such
// route). A streamed background request is answered as any stream.

var responsesDialect = dialect{
	inputField: "input",
	apiKey:     bearerKey,
	errBody:    openAIError,
	validate:   validateResponses,
	outputs:    responsesOutputs,
	answer:     answerResponses,
}

// bearerKey is the key of "Authorization: Bearer KEY".
func bearerKey(r *http.Request) string {
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(key)
}

// openAIError is OpenAI's error body:
// {"error":{"message":...,"type":...,"param":null,"code":...}}.
func openAIError(status int, kind, msg string) any {
	typ, code := "invalid_request_error", any(nil)
	switch kind {
	case errAuth:
		code = "invalid_api_key"
	case errNotFound:
		code = "unknown_url"
	case errExhausted:
		typ, code = "server_error", "script_exhausted"
	case errScripted:
		switch {
		case status == http.StatusTooManyRequests:
			typ, code = "requests", "rate_limit_exceeded"
		case status == http.StatusUnauthorized:
			code = "invalid_api_key"
		case status >= 500:
			typ = "server_error"
		}
	}
	return map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}}
}

// validateResponses checks that "input" is text or a list of items.
func validateResponses(_ *http.Request, raw map[string]json.RawMessage) string {
	in := raw["input"]
	var text string
	var items []json.RawMessage
	if json.Unmarshal(in, &text) != nil && json.Unmarshal(in, &items) != nil {
		return "Invalid type for 'input': expected a string or an array of input items."
	}
	return ""
}

// responsesOutputs finds the function_call_output items of an input.
func responsesOutputs(input json.RawMessage) [][2]string {
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal(input, &items) != nil {
		return nil // a plain text input
	}
	var out [][2]string
	for _, it := range items {
		if it.Type == "function_call_output" {
			out = append(out, [2]string{it.CallID, outputText(it.Output)})
		}
	}
	return out
}

// outputText reads a tool output: a string, or a list of content parts
// whose texts are joined.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

// shellTool is the function a model calls to run a command, and the
// argument that carries the command: the tool the client offers. Codex CLI
// offers exec_command {"cmd"}; OpenCode offers bash {"command"}. A request
// that lists neither gets exec_command, as before tools were read.
type shellTool struct{ name, arg string }

var shellTools = []shellTool{{"exec_command", "cmd"}, {"bash", "command"}}

// offeredShellTool picks the shell tool among the request's "tools".
func offeredShellTool(raw map[string]json.RawMessage) shellTool {
	var tools []struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw["tools"], &tools) // absent or odd: the default
	for _, st := range shellTools {
		for _, t := range tools {
			if t.Name == st.name {
				return st
			}
		}
	}
	return shellTools[0]
}

// responseItems are the turn's output items, finished.
func responseItems(t Turn, n int64, tool shellTool) []map[string]any {
	var items []map[string]any
	if len(t.Exec) > 0 {
		for i, cmd := range t.Exec {
			args := marshal(map[string]string{tool.arg: cmd})
			items = append(items, map[string]any{
				"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i),
				"call_id": fmt.Sprintf("call_%d_%d", n, i), "name": tool.name,
				"arguments": args, "status": "completed",
			})
		}
		return items
	}
	if t.Message != "" {
		items = append(items, map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant",
			"status": "completed", "content": []any{outputTextPart(t.Message)},
		})
	}
	return items
}

func outputTextPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

func responseObject(id, model, status string, created int64, output []map[string]any, usage any) map[string]any {
	if output == nil {
		output = []map[string]any{}
	}
	return map[string]any{
		"id": id, "object": "response", "created_at": created, "status": status,
		"model": model, "output": output, "usage": usage,
		"error": nil, "incomplete_details": nil, "parallel_tool_calls": true,
	}
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          u.total(),
	}
}

func answerResponses(w http.ResponseWriter, req *parsedRequest, t Turn, n int64) {
	id := fmt.Sprintf("resp_%d", n)
	created := time.Now().Unix()
	items := responseItems(t, n, offeredShellTool(req.raw))
	done := responseObject(id, req.model, "completed", created, items, responsesUsage(t.Usage))
	var background bool
	_ = json.Unmarshal(req.raw["background"], &background) // absent or not a boolean: in the foreground
	if background && !req.stream {
		queued := responseObject(id, req.model, "queued", created, nil, nil)
		queued["background"] = true
		writeJSON(w, http.StatusOK, queued, nil)
		return
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, done, nil)
		return
	}

	es := newEventStream(w, true)
	es.send("response.created", map[string]any{"response": responseObject(id, req.model, "in_progress", created, nil, nil)})
	es.send("response.in_progress", map[string]any{"response": responseObject(id, req.model, "in_progress", created, nil, nil)})
	for i, item := range items {
		itemID := item["id"]
		switch item["type"] {
		case "function_call":
			added := clone(item)
			added["arguments"], added["status"] = "", "in_progress"
			es.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			es.send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": i, "delta": item["arguments"]})
			es.send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": i, "arguments": item["arguments"]})
		case "message":
			added := clone(item)
			added["content"], added["status"] = []any{}, "in_progress"
			es.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"item_id": itemID, "output_index": i, "content_index": 0}
			es.send("response.content_part.added", with(part, "part", outputTextPart("")))
			es.send("response.output_text.delta", with(part, "delta", t.Message))
			es.send("response.output_text.done", with(part, "text", t.Message))
			es.send("response.content_part.done", with(part, "part", outputTextPart(t.Message)))
		}
		es.send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	es.send("response.completed", map[string]any{"response": done})
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func with(m map[string]any, k string, v any) map[string]any {
	c := clone(m)
	c[k] = v
	return c
}

// eventStream writes server-sent events, "event: TYPE" then "data: JSON"
// carrying the same "type", flushing after every event.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// seq is the next "sequence_number", or -1 when events carry none
	// (Messages).
	seq int
}

// newEventStream answers 200 text/event-stream. numbered adds a
// "sequence_number" counting from 0 to each event, as the Responses API
// does.
func newEventStream(w http.ResponseWriter, numbered bool) *eventStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	es := &eventStream{w: w, rc: http.NewResponseController(w), seq: -1}
	if numbered {
		es.seq = 0
	}
	_ = es.rc.Flush()
	return es
}

// send writes one event; payload gets "type" (and "sequence_number"). A
// client that went away makes the writes fail, which is ignored: the
// stream is the client's to drop.
func (es *eventStream) send(typ string, payload map[string]any) {
	p := clone(payload)
	p["type"] = typ
	if es.seq >= 0 {
		p["sequence_number"] = es.seq
		es.seq++
	}
	_, _ = fmt.Fprintf(es.w, "event: %s\ndata: %s\n\n", typ, marshal(p))
	_ = es.rc.Flush()
}

// marshal is JSON without the HTML escaping of <, > and &, as providers
// send it, so that a command such as "echo hi > out.txt" reads as written.
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakemodel: marshalling %T: %v", v, err)) // our own values; cannot happen
	}
	return strings.TrimSuffix(b.String(), "\n")
}
