package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API (POST /v1/messages), for clients such as
// Claude Code. The key comes in "x-api-key" (or "Authorization: Bearer");
// the body needs "model", "messages" and "max_tokens", and the request an
// "anthropic-version" header. A streamed turn is these events, each
// "event: TYPE" and "data: JSON" with the same "type" (no sequence
// numbers):
//
//	message_start        {"message": {"id": "msg_N", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens": 0}, ...}}
//	for each content block, at index i:
//	  content_block_start  {"index": i, "content_block": {"type": "text", "text": ""} or {"type": "tool_use", "id": "toolu_N_i", "name": "Bash", "input": {}}}
//	  content_block_delta  {"index": i, "delta": {"type": "text_delta", "text"} or {"type": "input_json_delta", "partial_json": "{\"command\":\"...\"}"}}
//	  content_block_stop   {"index": i}
//	message_delta        {"delta": {"stop_reason": "tool_use" or "end_turn", "stop_sequence": null}, "usage": {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}}
//	message_stop         {}
//
// message_delta's usage is cumulative: the whole message's counts so far,
// which replace message_start's
// (https://docs.anthropic.com/en/docs/build-with-claude/streaming; the
// API's MessageDeltaUsage carries the input and cache counts too, as here).
//
// A request that does not stream gets the whole message as JSON
// ("type": "message", https://docs.anthropic.com/en/api/messages), its
// usage the same four counts.

var messagesDialect = dialect{
	inputField: "messages",
	apiKey:     anthropicKey,
	errBody:    anthropicError,
	validate:   validateMessages,
	outputs:    messagesOutputs,
	answer:     answerMessages,
}

func anthropicKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	return bearerKey(r)
}

// anthropicError is Anthropic's error body:
// {"type":"error","error":{"type":...,"message":...}}.
func anthropicError(status int, kind, msg string) any {
	typ := "invalid_request_error"
	switch {
	case kind == errAuth || status == http.StatusUnauthorized:
		typ = "authentication_error"
	case kind == errNotFound || status == http.StatusNotFound:
		typ = "not_found_error"
	case kind == errTooLarge || status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func validateMessages(r *http.Request, raw map[string]json.RawMessage) string {
	if r.Header.Get("Anthropic-Version") == "" {
		return "anthropic-version: header is required"
	}
	var msgs []json.RawMessage
	if json.Unmarshal(raw["messages"], &msgs) != nil {
		return "messages: Input should be a valid list"
	}
	var max int64
	if m, ok := raw["max_tokens"]; !ok || json.Unmarshal(m, &max) != nil || max < 1 {
		return "max_tokens: Field required"
	}
	return ""
}

// messagesOutputs finds the tool_result blocks of a conversation.
func messagesOutputs(input json.RawMessage) [][2]string {
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(input, &msgs) != nil {
		return nil
	}
	var out [][2]string
	for _, m := range msgs {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // plain text content
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				text := ""
				if len(b.Content) > 0 {
					text = outputText(b.Content)
				}
				out = append(out, [2]string{b.ToolUseID, text})
			}
		}
	}
	return out
}

// messageBlocks are the turn's content blocks, finished, and the stop
// reason.
func messageBlocks(t Turn, n int64) ([]map[string]any, string) {
	var blocks []map[string]any
	if len(t.Exec) > 0 {
		for i, cmd := range t.Exec {
			blocks = append(blocks, map[string]any{
				"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": "Bash",
				"input": map[string]string{"command": cmd},
			})
		}
		return blocks, "tool_use"
	}
	if t.Message != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": t.Message})
	}
	return blocks, "end_turn"
}

// messagesUsage is a Messages usage object: u's input and cache counts,
// and output tokens.
func messagesUsage(u Usage, output int64) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": output,
		"cache_creation_input_tokens": u.CacheWriteTokens, "cache_read_input_tokens": u.CacheReadTokens,
	}
}

func answerMessages(w http.ResponseWriter, req *parsedRequest, t Turn, n int64) {
	id := fmt.Sprintf("msg_%d", n)
	blocks, stop := messageBlocks(t, n)
	message := func(content []map[string]any, stopReason any, usage map[string]any) map[string]any {
		if content == nil {
			content = []map[string]any{}
		}
		return map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.model,
			"content": content, "stop_reason": stopReason, "stop_sequence": nil, "usage": usage,
		}
	}
	if !req.stream {
		writeJSON(w, http.StatusOK, message(blocks, stop, messagesUsage(t.Usage, t.Usage.OutputTokens)), nil)
		return
	}

	es := newEventStream(w, false)
	es.send("message_start", map[string]any{"message": message(nil, nil, messagesUsage(t.Usage, 0))})
	for i, b := range blocks {
		switch b["type"] {
		case "tool_use":
			start := clone(b)
			start["input"] = map[string]any{}
			es.send("content_block_start", map[string]any{"index": i, "content_block": start})
			es.send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": marshal(b["input"])}})
		case "text":
			es.send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			es.send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		}
		es.send("content_block_stop", map[string]any{"index": i})
	}
	es.send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": messagesUsage(t.Usage, t.Usage.OutputTokens),
	})
	es.send("message_stop", map[string]any{})
}
