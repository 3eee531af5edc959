package fakemodel

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

func messagesBody(stream bool, messages any) map[string]any {
	return map[string]any{"model": "claude-test", "max_tokens": 1024, "stream": stream, "messages": messages}
}

func postMessages(t *testing.T, s *Server, key string, body any) (*http.Response, []byte) {
	t.Helper()
	return post(t, s, "/v1/messages", "", body, "X-Api-Key", key, "Anthropic-Version", "2023-06-01")
}

func TestMessagesStream(t *testing.T) {
	s := newServer(t)
	s.Script(
		Turn{Exec: []string{"echo hi > out.txt"}, Usage: Usage{InputTokens: 50, OutputTokens: 8}},
		Turn{Message: "Wrote it.", Usage: Usage{InputTokens: 60, OutputTokens: 4}},
	)
	user := map[string]any{"role": "user", "content": "write hi"}
	resp, b := postMessages(t, s, testKey, messagesBody(true, []any{user}))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events := parseSSE(t, b)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := names(events); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if obj(t, events[0].data, "message", "usage", "input_tokens") != float64(50) {
		t.Fatalf("message_start %v", events[0].data)
	}
	block := events[1].data["content_block"].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "Bash" {
		t.Fatalf("block %v", block)
	}
	if obj(t, events[2].data, "delta", "partial_json") != `{"command":"echo hi > out.txt"}` {
		t.Fatalf("delta %v", events[2].data)
	}
	if obj(t, events[4].data, "delta", "stop_reason") != "tool_use" || obj(t, events[4].data, "usage", "output_tokens") != float64(8) {
		t.Fatalf("message_delta %v", events[4].data)
	}

	// The tool result comes back in a user message.
	history := []any{user,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": block["id"], "name": "Bash", "input": map[string]any{"command": "echo hi > out.txt"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": block["id"], "content": []any{map[string]any{"type": "text", "text": "(no output)"}}}}},
	}
	_, b = postMessages(t, s, testKey, messagesBody(true, history))
	events = parseSSE(t, b)
	if obj(t, events[2].data, "delta", "text") != "Wrote it." || obj(t, events[4].data, "delta", "stop_reason") != "end_turn" {
		t.Fatalf("events %v", events)
	}
	if got := s.FunctionOutputs(); !slices.Equal(got, []string{"(no output)"}) {
		t.Fatalf("outputs %q", got)
	}
	if r := s.Requests()[1]; r.Model != "claude-test" || r.Path != "/v1/messages" {
		t.Fatalf("record %+v", r)
	} else {
		var msgs []any
		if err := json.Unmarshal(r.Input, &msgs); err != nil || len(msgs) != 3 {
			t.Fatalf("recorded messages %s", r.Input)
		}
	}
}

func TestMessagesRefusals(t *testing.T) {
	s := newServer(t)
	s.Script(Turn{Message: "hi"})

	resp, b := postMessages(t, s, "wrong", messagesBody(false, []any{}))
	var e map[string]any
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(b, &e) != nil || e["type"] != "error" || obj(t, e, "error", "type") != "authentication_error" {
		t.Fatalf("wrong key: %d %s", resp.StatusCode, b)
	}
	// No anthropic-version header.
	resp, b = post(t, s, "/v1/messages", "", messagesBody(false, []any{}), "X-Api-Key", testKey)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no version: %d %s", resp.StatusCode, b)
	}
	resp, b = postMessages(t, s, testKey, map[string]any{"model": "m", "messages": []any{}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no max_tokens: %d %s", resp.StatusCode, b)
	}
	// A bearer token is accepted too, and a request that does not stream
	// gets the whole message.
	resp, b = post(t, s, "/v1/messages", testKey, messagesBody(false, []any{}), "Anthropic-Version", "2023-06-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bearer: %d %s", resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["type"] != "message" || m["stop_reason"] != "end_turn" || obj(t, m["content"].([]any)[0], "text") != "hi" {
		t.Fatalf("message %s", b)
	}
	resp, b = postMessages(t, s, testKey, messagesBody(true, []any{}))
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(b, &e) != nil || obj(t, e, "error", "type") != "api_error" {
		t.Fatalf("exhausted: %d %s", resp.StatusCode, b)
	}
	if s.Exhausted() != 1 {
		t.Fatal(s.Exhausted())
	}
}

// Messages reports the prompt cache as Anthropic does: cache reads and
// writes beside input_tokens, in message_start and again, cumulatively,
// in message_delta (https://docs.anthropic.com/en/docs/build-with-claude/streaming),
// and in a whole message when the request does not stream.
func TestMessagesReportTheCacheInEveryUsage(t *testing.T) {
	s := newServer(t)
	u := Usage{InputTokens: 3, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 250}
	s.Script(Turn{Message: "one", Usage: u}, Turn{Message: "two", Usage: u})
	user := []any{map[string]any{"role": "user", "content": "hi"}}
	_, b := postMessages(t, s, testKey, messagesBody(true, user))
	events := parseSSE(t, b)
	start, delta := only(t, events, "message_start"), only(t, events, "message_delta")
	if len(start) != 1 || len(delta) != 1 {
		t.Fatalf("events %v", names(events))
	}
	for _, c := range []struct {
		where string
		usage any
		want  map[string]float64
	}{
		{"message_start", obj(t, start[0].data, "message", "usage"), map[string]float64{"input_tokens": 3, "cache_read_input_tokens": 48000, "cache_creation_input_tokens": 1200, "output_tokens": 0}},
		{"message_delta", obj(t, delta[0].data, "usage"), map[string]float64{"input_tokens": 3, "cache_read_input_tokens": 48000, "cache_creation_input_tokens": 1200, "output_tokens": 250}},
	} {
		for k, v := range c.want {
			if got := obj(t, c.usage, k); got != v {
				t.Errorf("%s usage %s = %v, want %v", c.where, k, got, v)
			}
		}
	}
	resp, b := postMessages(t, s, testKey, messagesBody(false, user))
	var m map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &m) != nil || m["type"] != "message" {
		t.Fatalf("whole message: %d %s", resp.StatusCode, b)
	}
	for k, v := range map[string]float64{"input_tokens": 3, "cache_read_input_tokens": 48000, "cache_creation_input_tokens": 1200, "output_tokens": 250} {
		if got := obj(t, m, "usage", k); got != v {
			t.Errorf("whole message usage %s = %v, want %v", k, got, v)
		}
	}
}
